"""The SBOM and the audit report survive an interrupt whole: their sha256 is recorded and signed, so a
half-written file would be a signed lie. Both are written by `sbom`/`audit` through ReleaseDir.write
(core/outputs.write_file: a temporary file beside the name, fsync, rename): an interrupt at any step
leaves the old file as it was, byte for byte, and no temporary file behind. Proven in this process
(the interrupt raised at each step) and on a real process stopped by SIGINT/SIGTERM mid-write."""

import ast
import os
import signal
import subprocess
import sys

import pytest

from ngcbuild.workspace.release_dir import AUDIT, SBOM, ReleaseDir

from ..conftest import REPO

OLD = b'{"bomFormat": "CycloneDX", "old": true}\n'
NEW = b'{"bomFormat": "CycloneDX", "new": "' + b"x" * (8 << 20) + b'"}\n'  # 8 MB: written in several chunks


def _leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def _release_dir(tmp_path) -> ReleaseDir:
    where = ReleaseDir.at(tmp_path, "dev")
    where.path.mkdir(parents=True)
    return where


@pytest.mark.parametrize("name", [SBOM, AUDIT])
@pytest.mark.parametrize("step", ["write", "fsync", "chmod", "replace"])
def test_an_interrupt_at_any_step_leaves_the_old_file_whole(tmp_path, monkeypatch, name, step):
    where = _release_dir(tmp_path)
    where.write(name, OLD)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if step == "write":  # half the data written, then the interrupt
        real_fdopen = os.fdopen

        class HalfWritten:
            def __init__(self, handle):
                self.handle = handle

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.handle.close()

            def write(self, data):
                self.handle.write(data[: len(data) // 2])
                self.handle.flush()
                raise KeyboardInterrupt

        monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWritten(real_fdopen(fd, mode)))
    else:
        monkeypatch.setattr(os, step, interrupted)
    with pytest.raises(KeyboardInterrupt):
        where.write(name, NEW)
    assert where.file(name).read_bytes() == OLD
    assert _leftovers(where.path) == [], "a temporary file was left behind"


# A process writing an SBOM (or audit report) the way `invoke sbom` does, with the interrupt handlers
# every entry point installs; it says when the data is on its way and then takes its time to sync.
WRITER = """
import os, sys, time
from ngcbuild.core import interrupts
from ngcbuild.workspace.release_dir import ReleaseDir

interrupts.install()
real_fsync = os.fsync
def slow_fsync(fd):
    print("syncing", flush=True)
    time.sleep(30)
    real_fsync(fd)
os.fsync = slow_fsync
try:
    ReleaseDir.at(sys.argv[1], "dev").write(sys.argv[2], b"new" * (3 << 20))
except interrupts.Interrupted as exc:
    interrupts.leave(exc)
"""


@pytest.mark.parametrize("name", [SBOM, AUDIT])
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_process_stopped_mid_write_leaves_the_old_file_whole(tmp_path, name, signum, status):
    where = _release_dir(tmp_path)
    where.write(name, OLD)
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), name], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    try:
        assert process.stdout.readline().strip() == "syncing", process.stderr.read()
        assert any(p.name.startswith(f".{name}-") for p in where.path.iterdir()), "no temporary file while writing"
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert where.file(name).read_bytes() == OLD
    assert _leftovers(where.path) == [], "a temporary file was left behind"


def test_sbom_and_audit_write_their_files_through_release_dir():
    """What the tests above prove holds for the commands only if they use that writer."""
    for module, constant in (("supply/sbom.py", "SBOM"), ("supply/audit.py", "AUDIT")):
        tree = ast.parse((REPO / "src" / "ngcbuild" / module).read_text())
        calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute) and node.func.attr == "write"
                 and node.args and ast.unparse(node.args[0]) == constant]
        assert calls and all(".write(" in c and "ReleaseDir" in c for c in calls), (module, calls)
