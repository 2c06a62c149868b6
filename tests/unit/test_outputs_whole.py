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


# --- what the one writer refuses (core/outputs.write_file), each with nothing written -------------------

def test_a_link_at_the_name_is_refused_and_its_target_left_alone(tmp_path):
    from ngcbuild.core.outputs import UnsafeOutput, write_file

    target = tmp_path / "elsewhere.txt"
    target.write_text("theirs\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.json").symlink_to(target)
    with pytest.raises(UnsafeOutput, match="a.json: is a symbolic link") as caught:
        write_file(tmp_path / "out" / "a.json", "ours\n", within=tmp_path)
    assert caught.value.exit_code == 2 and target.read_text() == "theirs\n"
    assert _leftovers(tmp_path / "out") == []


def test_a_fifo_at_the_name_is_refused_without_hanging(tmp_path):
    from ngcbuild.core.outputs import UnsafeOutput, write_file

    os.mkfifo(tmp_path / "a.json")
    with pytest.raises(UnsafeOutput, match=r"a.json: is a FIFO \(named pipe\)"):
        write_file(tmp_path / "a.json", "ours\n", within=tmp_path)
    assert _leftovers(tmp_path) == []


def test_a_folder_at_the_name_is_the_file_systems_state_exit_1(tmp_path):
    from ngcbuild.core.outputs import OutputError, write_file

    (tmp_path / "notes.md").mkdir()
    with pytest.raises(OutputError, match="notes.md: .*a directory is where this file must be written") as caught:
        write_file(tmp_path / "notes.md", "ours\n", within=tmp_path)
    assert caught.value.exit_code == 1 and (tmp_path / "notes.md").is_dir()


def test_a_folder_on_the_way_that_leads_outside_is_refused(tmp_path):
    from ngcbuild.core.outputs import UnsafeOutput, write_file

    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "build").symlink_to(outside)
    with pytest.raises(UnsafeOutput, match="leads outside"):
        write_file(project / "build" / "dev" / "record.json", "{}\n", within=project)
    assert list(outside.iterdir()) == []


def test_the_mode_is_the_umasks_or_the_one_asked_for(tmp_path):
    from ngcbuild.core.outputs import write_file

    old = os.umask(0o027)
    try:
        assert os.stat(write_file(tmp_path / "a.txt", "a\n", within=tmp_path)).st_mode & 0o777 == 0o640
        assert os.stat(write_file(tmp_path / "k.key", "k\n", within=tmp_path, mode=0o600)).st_mode & 0o777 == 0o600
    finally:
        os.umask(old)
