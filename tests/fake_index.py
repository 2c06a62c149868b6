"""A package index of small fake distributions on the loopback, for verify's tests: PEP 691 project
pages, the files themselves (answering range requests as PyPI's file host does), PEP 658 metadata files
where asked, and misbehaviours on purpose (a metadata file whose hash is not the index's, a range answer
that lies about its Content-Range, a server that ignores Range, pages trickled a byte at a time).

Wheels and source archives are built here, in memory: a wheel is a zip with its .dist-info; a source
archive carries an in-tree PEP 517 backend (no build requirements to install) whose metadata hook
computes its requirements, as a setup.py does, so that PKG-INFO cannot be trusted."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import re
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass, field


def metadata_text(name: str, version: str, requires: list[str] = (), requires_python: str = "",
                  metadata_version: str = "2.1", description: str = "") -> str:
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n" + description


def wheel(name: str, version: str, requires: list[str] = (), tag: str = "py3-none-any", *, wheel_tag: str | None = None,
          body: bytes = b"", metadata: str | None = None) -> tuple[str, bytes]:
    """(file name, bytes) of a wheel; `wheel_tag`: what its WHEEL file says, when not its name's tag."""
    dist = f"{name.replace('-', '_')}-{version}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{name.replace('-', '_')}/__init__.py", "")
        if body:
            archive.writestr(f"{name.replace('-', '_')}/_data.bin", body)
        archive.writestr(f"{dist}.dist-info/METADATA", metadata or metadata_text(name, version, list(requires)))
        archive.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: fake-index\nRoot-Is-Purelib: "
                                                    f"true\nTag: {wheel_tag or tag}\n")
        archive.writestr(f"{dist}.dist-info/RECORD", "")
    return f"{dist}-{tag}.whl", buffer.getvalue()


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


@dataclass
class Misbehaviour:
    metadata_hash: bool = False  # serve PEP 658 files whose sha256 is not the one the page gives
    lie_content_range: bool = False  # a range answer saying other bytes than those asked for
    ignore_range: bool = False  # the whole file, 200, whatever the Range header
    trickle_s: float = 0.0  # seconds between the bytes of a project page
    trickle_files_s: float = 0.0  # seconds between the bytes of a file's answer
    huge_pages: bool = False  # project pages declaring 10 GB (and sending a few bytes)
    page_body: bytes | None = None  # every project page answers this instead
    served: set[str] = field(default_factory=set)  # file names whose metadata the index serves (PEP 658)


class FakeIndex:
    """`url` is the index (…/simple); `add(filename, data)` publishes a file."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.misbehaviour = Misbehaviour()
        self.requests: list[tuple[str, str]] = []  # (path, Range header)
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):  # noqa: N802 - the standard library's name
                index.answer(self, body=False)

            def do_GET(self):  # noqa: N802
                index.answer(self, body=True)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def add(self, filename: str, data: bytes, *, serve_metadata: bool = False) -> None:
        self.files[filename] = data
        if serve_metadata:
            self.misbehaviour.served.add(filename)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- answers --------------------------------------------------------------------------------------
    def page(self, project: str) -> bytes | None:
        entries = []
        for filename, data in sorted(self.files.items()):
            if _project(filename) != project:
                continue
            entry = {"filename": filename, "url": f"../../files/{filename}",
                     "hashes": {"sha256": hashlib.sha256(data).hexdigest()}, "requires-python": None,
                     "yanked": False, "size": len(data)}
            if filename in self.misbehaviour.served:
                metadata = _wheel_metadata(data)
                digest = hashlib.sha256(metadata + (b"x" if self.misbehaviour.metadata_hash else b"")).hexdigest()
                entry["core-metadata"] = {"sha256": digest}
            entries.append(entry)
        if not entries:
            return None
        return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": entries}).encode()

    def answer(self, handler, body: bool) -> None:
        path = handler.path.split("?")[0]
        self.requests.append((path, handler.headers.get("Range", "")))
        try:
            if path.startswith("/simple/"):
                self._page(handler, path.removeprefix("/simple/").strip("/"), body)
            elif path.startswith("/files/"):
                self._file(handler, path.removeprefix("/files/"), body)
            else:
                self._send(handler, 404, b"", body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its deadline), as it may
            pass

    def _page(self, handler, project: str, body: bool) -> None:
        data = self.misbehaviour.page_body if self.misbehaviour.page_body is not None else self.page(project)
        if self.misbehaviour.huge_pages:
            handler.send_response(200)
            handler.send_header("Content-Length", str(10 << 30))
            handler.end_headers()
            handler.wfile.write(b'{"files": [')
            return
        if data is None:
            self._send(handler, 404, b"", body)
            return
        if not self.misbehaviour.trickle_s:
            self._send(handler, 200, data, body, {"Content-Type": "application/vnd.pypi.simple.v1+json"})
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        for byte in data:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(self.misbehaviour.trickle_s)

    def _file(self, handler, name: str, body: bool) -> None:
        if name.endswith(".metadata") and name.removesuffix(".metadata") in self.misbehaviour.served:
            self._send(handler, 200, _wheel_metadata(self.files[name.removesuffix(".metadata")]), body)
            return
        data = self.files.get(name)
        if data is None:
            self._send(handler, 404, b"", body)
            return
        wanted = handler.headers.get("Range", "")
        if not wanted or self.misbehaviour.ignore_range:
            self._send(handler, 200, data, body, {"Accept-Ranges": "bytes"})
            return
        suffix = re.fullmatch(r"bytes=-(\d+)", wanted)
        span = re.fullmatch(r"bytes=(\d+)-(\d+)", wanted)
        if suffix:
            first, last = max(0, len(data) - int(suffix[1])), len(data) - 1
        elif span:
            first, last = int(span[1]), min(int(span[2]), len(data) - 1)
        else:
            self._send(handler, 416, b"", body)
            return
        said = (first + 1, last + 1) if self.misbehaviour.lie_content_range else (first, last)
        headers = {"Content-Range": f"bytes {said[0]}-{min(said[1], len(data) - 1)}/{len(data)}"}
        if not self.misbehaviour.trickle_files_s:
            self._send(handler, 206, data[first:last + 1], body, headers)
            return
        handler.send_response(206)
        handler.send_header("Content-Range", headers["Content-Range"])
        handler.send_header("Content-Length", str(last - first + 1))
        handler.end_headers()
        for byte in data[first:last + 1]:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(self.misbehaviour.trickle_files_s)

    @staticmethod
    def _send(handler, status: int, data: bytes, body: bool, headers: dict | None = None) -> None:
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if body:
            handler.wfile.write(data)


def _project(filename: str) -> str:
    stem = filename.removesuffix(".tar.gz").removesuffix(".whl")
    return re.sub(r"[-_.]+", "-", stem.split("-")[0]).lower()


def _wheel_metadata(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name)
