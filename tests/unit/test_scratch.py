"""A scratch folder never outlives its block (issue 54 item 5: core/scratch.py): in a private $TMPDIR,
a block that fails, is interrupted or is sent SIGTERM as a process leaves no new entry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ngcbuild.core.interrupts import Interrupted
from ngcbuild.core.scratch import scratch_folder, scratch_root

from ..conftest import REPO


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def test_it_is_made_in_tmpdir_and_removed_with_what_it_holds(private_tmp):
    assert scratch_root() == str(private_tmp)
    with scratch_folder("ngcbuild-test-") as folder:
        assert folder.parent == private_tmp and folder.name.startswith("ngcbuild-test-")
        (folder / "a" / "b").mkdir(parents=True)
        (folder / "a" / "b" / "layer.tar").write_bytes(b"x" * 4096)
        os.chmod(folder / "a" / "b", 0o500)  # a folder made read-only by what was unpacked in it
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("ending", [RuntimeError("a failed push"), Interrupted(signal.SIGTERM)],
                         ids=["failure", "interrupt"])
def test_a_block_that_fails_or_is_interrupted_leaves_nothing(private_tmp, ending):
    with pytest.raises(type(ending)), scratch_folder("ngcbuild-test-") as folder:
        (folder / "half.tar.gz").write_bytes(b"half")
        raise ending
    assert list(private_tmp.iterdir()) == []


def test_without_tmpdir_it_goes_on_disk_not_in_memory(monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    assert scratch_root() == "/var/tmp"
    monkeypatch.setenv("TMPDIR", "/nonexistent/folder")
    assert scratch_root() == "/var/tmp"


SIGNALLED = """
import sys, time
from ngcbuild.core.interrupts import Interrupted, install, leave
from ngcbuild.core.scratch import scratch_folder

install()
try:
    with scratch_folder("ngcbuild-push-") as folder:
        (folder / "0.tar.gz").write_bytes(b"compressed so far")
        print("working", flush=True)
        time.sleep(60)
except Interrupted as exc:
    leave(exc)
"""


def test_a_process_sent_sigterm_in_the_block_leaves_nothing_in_its_tmpdir(tmp_path):
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private), "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen([sys.executable, "-c", SIGNALLED], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "working\n"
        assert len(list(private.iterdir())) == 1
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 143
    ends = time.monotonic() + 5
    while list(private.iterdir()) and time.monotonic() < ends:
        time.sleep(0.05)
    assert list(private.iterdir()) == []


class _FailingEngine:
    """What making a release image asks of an engine, the save of the built image answered with `saved` (cut,
    or a lie)."""

    def __init__(self, saved: bytes, tmp: Path):
        self.saved, self.tmp, self.scratch = saved, tmp, []

    def inspect_image(self, ref):
        from ngcbuild.image.recipe import Recipe, base_chain

        from ..corpus.push_hostile import DIFF_ID, IMAGE_ID

        if ref == IMAGE_ID:
            labels = Recipe(1_700_000_000, 1_600_000_000, 0, base_chain([])).label()
            return {"Id": IMAGE_ID, "RootFS": {"Type": "layers", "Layers": [DIFF_ID]}, "Config": {"Labels": labels}}
        import docker

        raise docker.errors.ImageNotFound(f"no such image {ref}")

    def get_image(self, image_id, chunk_size=None):
        self.scratch = sorted(path.name for path in self.tmp.iterdir())  # the comparison's, while it saves
        yield from (self.saved[i:i + 512] for i in range(0, len(self.saved), 512))


@pytest.mark.parametrize("cut", [0.3, 0.6], ids=["cut-early", "cut-later"])
def test_a_failed_release_image_leaves_nothing_in_its_tmpdir(private_tmp, cut):
    from ngcbuild.core.errors import OperationError
    from ngcbuild.engine.compare import compare_images

    from ..corpus.push_hostile import IMAGE_ID, SAVED

    engine = _FailingEngine(SAVED[:int(len(SAVED) * cut)], private_tmp)
    with pytest.raises(OperationError):  # the save cut short: no release image made, nothing compared
        compare_images(engine, IMAGE_ID, IMAGE_ID)
    assert len(engine.scratch) == 1 and engine.scratch[0].startswith("ngcbuild-compare-")  # made in $TMPDIR
    assert list(private_tmp.iterdir()) == []
