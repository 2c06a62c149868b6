"""A package index of small fake distributions, served on the loopback as https://pypi.org itself.

The product reads PyPI by name (verify's indexes start with https://pypi.org/simple), so the tests
put a TLS-intercepting proxy of their own in front of it, as the machines these tests run on have
one: HTTPS_PROXY names the proxy, PIP_CERT (and SSL_CERT_FILE, REQUESTS_CA_BUNDLE) the proxy's own CA,
and every CONNECT is answered with a certificate that CA made for the host asked for. Behind it a
PEP 691 (JSON) and PEP 503 (HTML) simple index of wheels built here with the METADATA they need, files
served whole or by range (pip, verify's WHEEL reads and bump's version.py reads all use them). Nothing
reaches the real PyPI, whose state moves: each test decides what the index holds.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import io
import json
import re
import ssl
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import TCPServer, ThreadingMixIn
from urllib.parse import unquote

from packaging.utils import canonicalize_name

LINUX_311 = "cp311-cp311-manylinux_2_28_x86_64"


@dataclass
class Wheel:
    name: str
    version: str
    requires: list[str] = field(default_factory=list)
    tag: str = "py3-none-any"
    requires_python: str = ""
    files: dict[str, str] = field(default_factory=dict)  # extra members: path -> text

    @property
    def filename(self) -> str:
        return f"{re.sub(r'[-_.]+', '_', self.name)}-{self.version}-{self.tag}.whl"

    def build(self) -> bytes:
        dist = f"{re.sub(r'[-_.]+', '_', self.name)}-{self.version}.dist-info"
        metadata = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}"]
        if self.requires_python:
            metadata.append(f"Requires-Python: {self.requires_python}")
        metadata += [f"Requires-Dist: {r}" for r in self.requires]
        extras = sorted({m for r in self.requires for m in re.findall(r'extra == "([^"]+)"', r)})
        metadata += [f"Provides-Extra: {e}" for e in extras]
        members = {**self.files,
                   f"{dist}/METADATA": "\n".join(metadata) + "\n\n",
                   f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: fakeindex\nRoot-Is-Purelib: "
                                    f"{'true' if self.tag.endswith('any') else 'false'}\nTag: {self.tag}\n"}
        record = []
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, text in sorted(members.items()):
                data = text.encode()
                archive.writestr(zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0)), data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                record.append(f"{path},sha256={digest},{len(data)}")
            record.append(f"{dist}/RECORD,,")
            archive.writestr(zipfile.ZipInfo(f"{dist}/RECORD", (2026, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
        return buffer.getvalue()


class Index:
    """Projects -> wheels; changed by a test between runs (`add`, `remove`)."""

    def __init__(self):
        self.files: dict[str, tuple[Wheel, bytes]] = {}
        self.requests: list[str] = []
        self.lock = threading.Lock()

    def add(self, *wheels: Wheel) -> None:
        with self.lock:
            for wheel in wheels:
                self.files[wheel.filename] = (wheel, wheel.build())

    def remove(self, name: str, version: str) -> None:
        with self.lock:
            for filename, (wheel, _) in list(self.files.items()):
                if canonicalize_name(wheel.name) == canonicalize_name(name) and wheel.version == version:
                    del self.files[filename]

    def project(self, name: str) -> list[tuple[Wheel, bytes]]:
        with self.lock:
            return [(w, d) for w, d in self.files.values() if canonicalize_name(w.name) == canonicalize_name(name)]


def _handler(index: Index, base: str = "https://pypi.org"):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: bytes, kind: str, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            index.requests.append(self.path)
            path = self.path.split("?")[0]
            match = re.fullmatch(r"/simple/([^/]+)/?", path)
            if match:
                return self._project(match.group(1))
            match = re.fullmatch(r"/files/([^/]+)", path)
            if match:
                return self._file(unquote(match.group(1)))
            if path == "/":
                return self._send(200, b"fake index\n", "text/plain")
            return self._send(404, b"not found\n", "text/plain")

        def _project(self, name: str):
            wheels = index.project(name)
            if not wheels:
                return self._send(404, b"no such project\n", "text/plain")
            files = [{"filename": w.filename, "url": f"{base}/files/{w.filename}",
                      "hashes": {"sha256": hashlib.sha256(d).hexdigest()},
                      "requires-python": w.requires_python or None, "size": len(d),
                      "upload-time": "2026-01-01T00:00:00Z", "yanked": False}
                     for w, d in sorted(wheels, key=lambda item: item[0].filename)]
            if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": canonicalize_name(name), "files": files,
                                   "versions": sorted({w.version for w, _ in wheels})}).encode()
                return self._send(200, body, "application/vnd.pypi.simple.v1+json")
            links = "".join(
                f'<a href="{f["url"]}#sha256={f["hashes"]["sha256"]}"'
                + (f' data-requires-python="{html.escape(f["requires-python"])}"' if f["requires-python"] else "")
                + f'>{f["filename"]}</a><br/>\n' for f in files)
            return self._send(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(),
                              "text/html")

        def _file(self, filename: str):
            found = index.files.get(filename)
            if found is None:
                return self._send(404, b"no such file\n", "text/plain")
            data = found[1]
            wanted = re.fullmatch(r"bytes=([0-9]*)-([0-9]*)", self.headers.get("Range", ""))
            if wanted is None:
                return self._send(200, data, "application/octet-stream", {"Accept-Ranges": "bytes"})
            first, last = wanted.groups()
            if first == "":  # a suffix range: the last N bytes
                first, last = max(0, len(data) - int(last)), len(data) - 1
            else:
                first, last = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            return self._send(206, data[first:last + 1], "application/octet-stream",
                              {"Content-Range": f"bytes {first}-{last}/{len(data)}", "Accept-Ranges": "bytes"})

    return Handler


def _serve_tls(handler, connection, address) -> None:
    """The index's handler over one TLS connection a proxy's CONNECT opened (requests until it closes)."""
    try:
        handler(connection, address, None)
    except (OSError, ssl.SSLError):
        pass
    finally:
        try:
            connection.close()
        except OSError:
            pass


class Ca:
    """A certificate authority of this test run, and certificates it makes for host names."""

    def __init__(self, folder: Path):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._serialization, self._ec, self._oid = x509, hashes, serialization, ec, NameOID
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ngcbuild test proxy CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
                     .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))
        self.path = folder / "ca.pem"
        self.path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self._contexts: dict[str, ssl.SSLContext] = {}

    def context_for(self, host: str) -> ssl.SSLContext:
        if host in self._contexts:
            return self._contexts[host]
        x509, hashes, serialization, ec = self._x509, self._hashes, self._serialization, self._ec
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(self._oid.COMMON_NAME, host)]))
                .issuer_name(self.cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                               critical=False)
                .sign(self.key, hashes.SHA256()))
        stem = self.folder / re.sub(r"[^A-Za-z0-9.-]", "_", host)
        Path(f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM)
                                        + self.cert.public_bytes(serialization.Encoding.PEM))
        Path(f"{stem}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(f"{stem}.crt", f"{stem}.key")
        self._contexts[host] = context
        return context


class _ProxyServer(ThreadingMixIn, TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakePyPI:
    """The proxy on 127.0.0.1 and the index behind it. `env` is what a process needs to use it."""

    def __init__(self, folder: Path):
        self.index = Index()
        self.ca = Ca(folder)
        handler = _handler(self.index)
        ca = self.ca

        class Proxy(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_CONNECT(self):
                host = self.path.rsplit(":", 1)[0]
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                try:
                    tls = ca.context_for(host).wrap_socket(self.connection, server_side=True)
                except (OSError, ssl.SSLError):
                    self.close_connection = True
                    return
                _serve_tls(handler, tls, self.client_address)
                self.close_connection = True

            def do_GET(self):  # plain http through the proxy (apt, a host check): nothing is there
                body = b"the test proxy serves only https://pypi.org\n"
                self.send_response(404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET

        self.server = _ProxyServer(("127.0.0.1", 0), Proxy)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakePyPI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self.server.server_address[1]}"
        ca = str(self.ca.path)
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy,
                "NO_PROXY": "", "no_proxy": "", "PIP_CERT": ca, "SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca,
                "PIP_FIND_LINKS": ""}


class PlainIndex:
    """The same index over plain HTTP on 127.0.0.1 (an extra index a manifest names: pip trusts the loopback)."""

    def __init__(self):
        self.index = Index()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.index, "http://placeholder"))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.server.RequestHandlerClass = _handler(self.index, self.url)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> PlainIndex:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
