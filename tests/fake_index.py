"""The one fake package index of the tests: small distributions built here, served over HTTP on the
loopback as a real index serves them, so that verify's reader, uv and pip all read it for real.

- PEP 691 JSON or PEP 503 HTML project pages (by the request's Accept), with hashes, sizes,
  Requires-Python, upload times, and PEP 658/714 `core-metadata` for the wheels whose metadata it serves
  as a file of its own (`FILE.metadata`);
- the files themselves, whole or by range (suffix, span and open ranges, as PyPI's file host answers);
- `answers`: any other path answered as given, (status, body[, headers]), ("redirect", URL) or a
  callable(handler) (PyPI's JSON API for the audit, an endless or trickled answer);
- every request logged (method, path, Range, Authorization) in `requests`, and as JSON lines in `log`
  when given (where credentials went, and where they never went);
- `credentials=(user, password)`: everything but `/` answers 401 without them (an index that needs a login);
- misbehaviour on purpose (`Misbehaviour`): metadata files whose hash is not the page's, range answers
  that lie, a server that ignores Range, pages trickled a byte at a time or never ended, pages of
  another body (deeply nested JSON: `nested_json`), pages declaring 10 GB.

`FakePyPI` puts a TLS-intercepting proxy of the test's own in front of it, so that a process that reads
https://pypi.org by name reads this index instead (HTTPS_PROXY and the proxy's CA in `env`), as the
machines these tests run on have one. Wheels and source archives are built in memory: a wheel is a zip
with its .dist-info (fixed dates: the same bytes every time); a source archive carries an in-tree PEP 517
backend whose metadata hook computes its requirements, as a setup.py does, so PKG-INFO cannot be trusted.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import http.server
import io
import json
import re
import ssl
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from socketserver import TCPServer, ThreadingMixIn
from urllib.parse import unquote

LINUX_311 = "cp311-cp311-manylinux_2_28_x86_64"
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
UPLOADED = "2026-01-01T00:00:00Z"


# --- content -----------------------------------------------------------------------------------------

def metadata_text(name: str, version: str, requires: list[str] = (), requires_python: str = "",
                  metadata_version: str = "2.1", description: str = "") -> str:
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    extras = sorted({m for r in requires for m in re.findall(r'extra == "([^"]+)"', r)})
    lines += [f"Provides-Extra: {e}" for e in extras]
    return "\n".join(lines) + "\n\n" + description


def _stem(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name)


def wheel(name: str, version: str, requires: list[str] = (), tag: str = "py3-none-any", *, wheel_tag: str | None = None,
          body: bytes = b"", metadata: str | None = None, requires_python: str = "",
          files: dict[str, str] | None = None) -> tuple[str, bytes]:
    """(file name, bytes) of a wheel; `wheel_tag`: what its WHEEL file says, when not its name's tag;
    `files`: more members (path -> text), such as torch/version.py."""
    dist = f"{_stem(name)}-{version}"
    members = {f"{_stem(name)}/__init__.py": b"", **{path: text.encode() for path, text in (files or {}).items()}}
    if body:
        members[f"{_stem(name)}/_data.bin"] = body
    members[f"{dist}.dist-info/METADATA"] = (metadata or metadata_text(name, version, list(requires),
                                                                       requires_python)).encode()
    pure = "true" if (wheel_tag or tag).endswith("any") else "false"
    members[f"{dist}.dist-info/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: fake-index\nRoot-Is-Purelib: {pure}\n"
                                          f"Tag: {wheel_tag or tag}\n").encode()
    record = [f"{path},sha256={_urlsafe(hashlib.sha256(data).digest())},{len(data)}" for path, data in members.items()]
    members[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in members.items():
            archive.writestr(zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return f"{dist}-{tag}.whl", buffer.getvalue()


def _urlsafe(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class Wheel:
    """A wheel described, for `FakeIndex.add_wheels`."""

    name: str
    version: str
    requires: list[str] = field(default_factory=list)
    tag: str = "py3-none-any"
    requires_python: str = ""
    files: dict[str, str] = field(default_factory=dict)  # extra members: path -> text

    def build(self) -> tuple[str, bytes]:
        return wheel(self.name, self.version, self.requires, self.tag, requires_python=self.requires_python,
                     files=self.files)


# An in-tree build backend: PKG-INFO says nothing of the requirements (Metadata-Version 2.1), the hook
# adds them, as tensorrt-cu13's setup.py adds tensorrt_cu13_libs; build_wheel lets pip build it for real.
BACKEND = '''
import base64, hashlib, io, os, zipfile
NAME, VERSION, REQUIRES = {name!r}, {version!r}, {requires!r}
DIST = NAME.replace("-", "_") + "-" + VERSION

def _metadata():
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + VERSION]
    return "\\n".join(lines + ["Requires-Dist: " + r for r in REQUIRES]) + "\\n"

def get_requires_for_build_wheel(config_settings=None):
    return []

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, DIST + ".dist-info")
    os.makedirs(folder)
    with open(os.path.join(folder, "METADATA"), "w") as out:
        out.write(_metadata())
    return DIST + ".dist-info"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = DIST + "-py3-none-any.whl"
    files = {{DIST + ".dist-info/METADATA": _metadata(),
             DIST + ".dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: fake\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
             NAME.replace("-", "_") + "_fake/__init__.py": ""}}
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as archive:
        for path, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(path + ",sha256=" + digest + "," + str(len(data)))
            archive.writestr(path, data)
        archive.writestr(DIST + ".dist-info/RECORD", "\\n".join(record + [DIST + ".dist-info/RECORD,,"]) + "\\n")
    return name
'''


def sdist(name: str, version: str, built_requires: list[str], *, pkg_info: str | None = None) -> tuple[str, bytes]:
    """(file name, bytes) of a source archive whose backend builds metadata requiring `built_requires`."""
    top = f"{name.replace('-', '_')}-{version}"
    files = {
        "PKG-INFO": pkg_info or metadata_text(name, version),
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "backend.py": BACKEND.format(name=name, version=version, requires=list(built_requires)),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return f"{top}.tar.gz", buffer.getvalue()


def nested_json(depth: int) -> bytes:
    """A JSON document nested `depth` deep: a page that would exhaust a recursive parser."""
    return b'{"files": ' + b"[" * depth + b"]" * depth + b"}"


# --- misbehaviour ------------------------------------------------------------------------------------

@dataclass
class Misbehaviour:
    metadata_hash: bool = False  # serve PEP 658 files whose sha256 is not the one the page gives
    lie_content_range: bool = False  # a range answer saying other bytes than those asked for
    ignore_range: bool = False  # the whole file, 200, whatever the Range header
    trickle_s: float = 0.0  # seconds between the bytes of a project page
    trickle_files_s: float = 0.0  # seconds between the bytes of a file's answer
    endless_pages: bool = False  # project pages whose body never ends (no length declared)
    huge_pages: bool = False  # project pages declaring 10 GB (and sending a few bytes)
    page_body: bytes | None = None  # every project page answers this instead
    no_upload_times: bool = False  # files listed without an upload time (PEP 700), as devpi's mirror lists them
    served: set[str] = field(default_factory=set)  # file names whose metadata the index serves (PEP 658)


def send(handler, status: int, body: bytes = b"", headers: dict | None = None) -> None:
    handler.send_response(status)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


def endless(handler, chunk: bytes = b"x" * 65536, seconds: float = 60, pause_s: float = 0.0,
            content_type: str = "application/json") -> None:
    """Headers at once, then a body that never ends (no length declared), for at most `seconds`."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.end_headers()
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        handler.wfile.write(chunk)
        if pause_s:
            handler.wfile.flush()
            time.sleep(pause_s)
    handler.close_connection = True


def trickle(handler, seconds: float = 200) -> None:
    """A status line, then a header a byte every 50 ms, never finished."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        handler.wfile.write(b"x")
        handler.wfile.flush()
        time.sleep(0.05)
    handler.close_connection = True


# --- the index ---------------------------------------------------------------------------------------

class FakeIndex:
    """The index on `address` (127.0.0.1, or 127.0.0.2 for "another host"): `url` is its simple index
    (…/simple), `address` its HOST:PORT. `add(filename, data)` publishes a file, `add_wheels(*Wheel)`
    wheels with their metadata files (as PyPI serves them), `remove(name, version)` takes them back.
    Use as a context manager, or close()."""

    def __init__(self, log: Path | None = None, answers: dict | None = None, address: str = "127.0.0.1",
                 credentials: tuple[str, str] | None = None):
        self.files: dict[str, bytes] = {}
        self.uploaded: dict[str, str] = {}  # file name -> its upload time (PEP 700)
        self.misbehaviour = Misbehaviour()
        self.answers = dict(answers or {})
        self.log, self.credentials = log, credentials
        self.requests: list[tuple[str, str]] = []  # (path, Range header)
        self._lock = threading.Lock()
        self.handler = _handler(self)
        self.server = http.server.ThreadingHTTPServer((address, 0), self.handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.address = f"{host}:{port}"
        self.url = f"http://{self.address}/simple"

    def __enter__(self) -> FakeIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, filename: str, data: bytes, *, serve_metadata: bool = False, uploaded: str = UPLOADED) -> None:
        with self._lock:
            self.files[filename] = data
            self.uploaded[filename] = uploaded
            if serve_metadata:
                self.misbehaviour.served.add(filename)

    def add_wheels(self, *wheels: Wheel, serve_metadata: bool = True) -> None:
        for described in wheels:
            filename, data = described.build()
            self.add(filename, data, serve_metadata=serve_metadata)

    def remove(self, name: str, version: str) -> None:
        with self._lock:
            for filename in list(self.files):
                if _project(filename) == _canonical(name) and _version(filename) == version:
                    del self.files[filename]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def logged(self) -> list[dict]:
        """The requests as `log` holds them (method, path, authorization)."""
        if self.log is None or not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    # --- answers ------------------------------------------------------------------------------------
    def entries(self, project: str) -> list[dict]:
        """The PEP 691 file entries of a project (relative URLs: the page's address decides the host)."""
        entries = []
        with self._lock:
            files = sorted((f, d) for f, d in self.files.items() if _project(f) == project)
        for filename, data in files:
            entry = {"filename": filename, "url": f"../../files/{filename}",
                     "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                     "requires-python": _requires_python(filename, data), "yanked": False, "size": len(data),
                     "upload-time": self.uploaded.get(filename, UPLOADED)}
            if self.misbehaviour.no_upload_times:
                del entry["upload-time"]
            if filename in self.misbehaviour.served:
                metadata = _wheel_metadata(data)
                digest = hashlib.sha256(metadata + (b"x" if self.misbehaviour.metadata_hash else b"")).hexdigest()
                entry["core-metadata"] = {"sha256": digest}
            entries.append(entry)
        return entries

    def page(self, project: str, accept: str = JSON_PAGE) -> tuple[bytes, str] | None:
        """(body, content type) of a project page, JSON or HTML as asked; None: no such project."""
        entries = self.entries(project)
        if not entries:
            return None
        if JSON_PAGE in accept or "json" in accept:
            return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": entries,
                               "versions": sorted({_version(e["filename"]) for e in entries})}).encode(), JSON_PAGE
        links = "".join(
            f'<a href="{html.escape(e["url"])}#sha256={e["hashes"]["sha256"]}"'
            + (f' data-requires-python="{html.escape(e["requires-python"])}"' if e["requires-python"] else "")
            + (f' data-core-metadata="sha256={e["core-metadata"]["sha256"]}"' if "core-metadata" in e else "")
            + f'>{html.escape(e["filename"])}</a><br/>\n' for e in entries)
        return f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode(), "text/html"

    def record(self, handler) -> None:
        path = handler.path.split("?")[0]
        self.requests.append((path, handler.headers.get("Range", "")))
        if self.log is not None:
            line = json.dumps({"method": handler.command, "path": handler.path,
                               "authorization": handler.headers.get("Authorization")})
            with self._lock, self.log.open("a", encoding="utf-8") as out:
                out.write(line + "\n")

    def answer(self, handler) -> None:
        path = handler.path.split("?")[0]
        self.record(handler)
        length = int(handler.headers.get("Content-Length") or 0)
        if length:
            handler.rfile.read(length)
        try:
            if self.credentials is not None and path != "/" and not self._authorized(handler):
                return send(handler, 401, b"who are you\n", {"WWW-Authenticate": 'Basic realm="fake index"'})
            if path in self.answers:
                return self._given(handler, self.answers[path])
            if path.startswith("/simple/"):
                return self._page(handler, path.removeprefix("/simple/").strip("/"))
            if path.startswith("/files/"):
                return self._file(handler, unquote(path.removeprefix("/files/")))
            if path == "/":
                return send(handler, 200, b"fake index\n", {"Content-Type": "text/plain"})
            return send(handler, 404, b'{"message": "Not Found"}', {"Content-Type": "application/json"})
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its deadline), as it may
            handler.close_connection = True

    def _authorized(self, handler) -> bool:
        user, password = self.credentials
        return handler.headers.get("Authorization") == "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    @staticmethod
    def _given(handler, found) -> None:
        if callable(found):
            return found(handler)
        if found[0] == "redirect":
            return send(handler, 302, b"", {"Location": found[1]})
        status, body, *headers = found
        return send(handler, status, body, {"Content-Type": "application/json", **(headers[0] if headers else {})})

    def _page(self, handler, project: str) -> None:
        bad = self.misbehaviour
        if bad.huge_pages:
            handler.send_response(200)
            handler.send_header("Content-Length", str(10 << 30))
            handler.end_headers()
            handler.wfile.write(b'{"files": [')
            return
        if bad.endless_pages:  # paced: a client that keeps reading holds a few megabytes, not gigabytes
            # the simple API's own type: a client that checks the type first must still meet the endless body
            return endless(handler, chunk=b" " * 16384, pause_s=0.05, content_type=JSON_PAGE)
        if bad.page_body is not None:
            found = (bad.page_body, JSON_PAGE)
        else:
            found = self.page(_canonical(project), handler.headers.get("Accept", ""))
        if found is None:
            return send(handler, 404, b"no such project\n", {"Content-Type": "text/plain"})
        data, kind = found
        if not bad.trickle_s:
            return send(handler, 200, data, {"Content-Type": kind})
        handler.send_response(200)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        for byte in data:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(bad.trickle_s)

    def _file(self, handler, name: str) -> None:
        bad = self.misbehaviour
        if name.endswith(".metadata") and name.removesuffix(".metadata") in bad.served:
            return send(handler, 200, _wheel_metadata(self.files[name.removesuffix(".metadata")]))
        data = self.files.get(name)
        if data is None:
            return send(handler, 404, b"no such file\n", {"Content-Type": "text/plain"})
        wanted = handler.headers.get("Range", "")
        plain = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if not wanted or bad.ignore_range:
            return send(handler, 200, data, plain)
        suffix = re.fullmatch(r"bytes=-(\d+)", wanted)
        span = re.fullmatch(r"bytes=(\d+)-(\d*)", wanted)
        if suffix:
            first, last = max(0, len(data) - int(suffix[1])), len(data) - 1
        elif span:
            first, last = int(span[1]), min(int(span[2]) if span[2] else len(data) - 1, len(data) - 1)
        else:
            return send(handler, 416, b"")
        said = (first + 1, last + 1) if bad.lie_content_range else (first, last)
        headers = {**plain, "Content-Range": f"bytes {said[0]}-{min(said[1], len(data) - 1)}/{len(data)}"}
        if not bad.trickle_files_s:
            return send(handler, 206, data[first:last + 1], headers)
        handler.send_response(206)
        handler.send_header("Content-Range", headers["Content-Range"])
        handler.send_header("Content-Length", str(last - first + 1))
        handler.end_headers()
        for byte in data[first:last + 1]:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(bad.trickle_files_s)


def _handler(index: FakeIndex):
    """The index's request handler; it uses nothing of its server (FakePyPI hands it TLS connections)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _any(self):
            index.answer(self)

        do_GET = do_HEAD = do_POST = do_PUT = _any

    return Handler


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project(filename: str) -> str:
    stem = filename.removesuffix(".tar.gz").removesuffix(".whl")
    return _canonical(stem.split("-")[0])


def _version(filename: str) -> str:
    stem = filename.removesuffix(".tar.gz").removesuffix(".whl")
    return stem.split("-")[1] if "-" in stem else ""


def _wheel_metadata(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name)


def _requires_python(filename: str, data: bytes) -> str | None:
    """A wheel's Requires-Python, as the index lists it from the metadata."""
    if not filename.endswith(".whl"):
        return None
    for line in _wheel_metadata(data).decode("utf-8", "replace").splitlines():
        if line.startswith("Requires-Python:"):
            return line.partition(":")[2].strip() or None
        if not line.strip():
            break
    return None


# --- the same index as https://pypi.org, behind a TLS-intercepting proxy -----------------------------

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
    """A proxy on 127.0.0.1 that answers every HTTPS CONNECT with `index` (a FakeIndex of its own)
    under a certificate its CA makes for the host asked for. `env` is what a process needs to use it."""

    def __init__(self, folder: Path):
        self.index = FakeIndex()
        self.ca = Ca(folder)
        handler, ca = self.index.handler, self.ca

        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_CONNECT(self):  # noqa: N802 - the standard library's name
                host = self.path.rsplit(":", 1)[0]
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                try:
                    tls = ca.context_for(host).wrap_socket(self.connection, server_side=True)
                except (OSError, ssl.SSLError):
                    self.close_connection = True
                    return
                try:
                    handler(tls, self.client_address, None)
                except (OSError, ssl.SSLError):
                    pass
                finally:
                    try:
                        tls.close()
                    except OSError:
                        pass
                self.close_connection = True

            def do_GET(self):  # noqa: N802 - plain http through the proxy (apt, a host check): nothing there
                send(self, 404, b"the test proxy serves only https\n")

            do_HEAD = do_GET

        self.server = _ProxyServer(("127.0.0.1", 0), Proxy)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakePyPI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.index.close()

    @property
    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self.server.server_address[1]}"
        ca = str(self.ca.path)
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "HTTP_PROXY": proxy, "http_proxy": proxy,
                "NO_PROXY": "", "no_proxy": "", "PIP_CERT": ca, "SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca,
                "PIP_FIND_LINKS": ""}
