"""`invoke verify` reads each resolved wheel's own WHEEL file, as a process against a real index:
a planted wheel named for x86_64 whose metadata says `manylinux2014_sbsa` (as NVIDIA's aarch64
cuSPARSELt does for aarch64) fails verify, and passes it once the manifest names it in
`pip.wrong_wheel_tags` with the evidence; the prediction of the image's `pip check` (pip 26.3 in dev)
says the line pip prints for it, and that it is tolerated. The index is a local HTTP server on 127.0.0.1 that
answers range requests, as PyPI's file host does; pip resolves the wheel from it for real.

Needs PyPI (the release's other pins resolve there first); with CI=true an unreachable PyPI fails."""

import http.server
import io
import json
import re
import threading
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.network

WHEEL = "plantedwheel-1.0-py3-none-manylinux2014_x86_64.whl"


def _planted_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("plantedwheel/__init__.py", "")
        info = "plantedwheel-1.0.dist-info"
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: plantedwheel\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: ngcbuild-test\nRoot-Is-Purelib: false\n"
                                        "Tag: py3-none-manylinux2014_sbsa\n")
        wheel.writestr(f"{info}/RECORD", "")
    return buffer.getvalue()


class _Index(http.server.BaseHTTPRequestHandler):
    """/simple/plantedwheel/ (PEP 503 HTML) and the wheel, whole or by one byte range."""

    files: dict[str, bytes] = {}

    def log_message(self, *args):
        pass

    def _answer(self, body_wanted: bool):
        if self.path.rstrip("/") in ("/simple/plantedwheel", "/simple/plantedwheel/index.html"):
            body = f'<html><body><a href="/files/{WHEEL}">{WHEEL}</a></body></html>'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body_wanted:
                self.wfile.write(body)
            return
        name = self.path.rsplit("/", 1)[-1]
        if not self.path.startswith("/files/") or name not in self.files:
            self.send_error(404)
            return
        data = self.files[name]
        wanted = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if wanted:
            first, last = int(wanted[1]), min(int(wanted[2]), len(data) - 1)
            body = data[first:last + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(body) if wanted or body_wanted else len(data)))
        self.end_headers()
        if body_wanted:
            self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's name)
        self._answer(True)

    def do_HEAD(self):  # noqa: N802
        self._answer(False)


@pytest.fixture
def index():
    _Index.files = {WHEEL: _planted_wheel()}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _project(scratch, index: str, wrong_tags: str = "") -> None:
    scratch.copy_release("dev")
    manifest = scratch.root / "manifests" / "dev.yaml"
    text = manifest.read_text()
    text = text.replace("    - https://download.pytorch.org/whl/cpu\n", f"    - {index}\n")
    manifest.write_text(text.replace("  break_system_packages: true\n",
                                     "  break_system_packages: true\n" + wrong_tags))
    constraints = scratch.root / "constraints" / "dev.txt"
    constraints.write_text(constraints.read_text() + "plantedwheel==1.0\n")


def _tag_rows(result, kind="wheel-tags") -> list[dict]:
    assert "Traceback" not in result.stderr, result.stderr
    return [r for r in json.loads(result.stdout)["rows"] if r["kind"] == kind]


LINE = "plantedwheel 1.0 is not supported on this platform"


def test_verify_fails_a_planted_wheel_whose_metadata_names_another_platform(scratch, index, pypi):
    _project(scratch, index)
    result = scratch.invoke("verify", "--release", "dev", "--json", timeout=900)
    rows = _tag_rows(result)
    assert [(r["name"], r["platform"], r["status"]) for r in rows] == [("plantedwheel", "linux/amd64", "failed")]
    assert "its WHEEL file says manylinux2014_sbsa, no tag of linux/amd64" in rows[0]["reason"]
    [check] = _tag_rows(result, "pip-check")
    assert check["status"] == "failed" and f"the image's pip check would print: {LINE}" in check["reason"], check
    assert result.returncode == 1


def test_a_wrong_tag_the_manifest_names_with_evidence_is_tolerated(scratch, index, pypi):
    _project(scratch, index, "  wrong_wheel_tags:\n    - distribution: plantedwheel\n      platforms: [linux/amd64]\n"
                             "      tag: py3-none-manylinux2014_sbsa\n      evidence: planted by the test\n")
    result = scratch.invoke("verify", "--release", "dev", "--json", timeout=900)
    rows = _tag_rows(result)
    assert [(r["name"], r["status"]) for r in rows] == [("plantedwheel", "verified")]
    assert "planted by the test" in rows[0]["reason"]
    [check] = _tag_rows(result, "pip-check")  # dev's torch is not read here (its index is the local one now)
    assert f"prints only the tolerated line(s) {LINE} (pip.wrong_wheel_tags)" in check["reason"], check
    assert Path(scratch.root / "build").exists() is False  # verify writes nothing
