"""Render replaces build/R/ whole: real processes rendering one release at once never fail, a reader
never sees a half-written context, and what later steps keep in build/R/ survives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ngcbuild.core.project import Project
from ngcbuild.render.context import render_release
from ngcbuild.workspace.atomic_dir import replace_dir
from ngcbuild.workspace.locks import release_lock

SRC = str(Path(__file__).resolve().parents[2] / "src")
# Two bases give two different contexts, so every render really rewrites build/R/.
RENDER = """
import sys
from ngcbuild.core.project import Project
from ngcbuild.render.context import render_release
project = Project.at(sys.argv[1])
for i in range(int(sys.argv[2])):
    render_release(project, "dev", base=None if i % 2 else "localhost:5000/mirror/debian:bookworm-slim")
"""


def _renderers(root: Path, count: int, rounds: int) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return [subprocess.Popen([sys.executable, "-c", RENDER, str(root), str(rounds)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]


def test_concurrent_renders_never_fail_nor_show_a_half_written_context(scratch):
    scratch.copy_release("dev")
    project = Project.at(scratch.root)
    expected = set(render_release(project, "dev").files)
    out = project.out("dev")
    (out / "record.json").write_text(json.dumps({"image_id": "sha256:" + "1" * 64}))
    (out / "release-notes.md").write_text("notes of an earlier step\n")

    processes = _renderers(scratch.root, 4, 6)
    seen, incomplete = 0, []
    while any(p.poll() is None for p in processes):
        try:
            before = out.stat().st_ino
            present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
            swapped = out.stat().st_ino != before
        except FileNotFoundError:  # a folder vanished while walking it: the old tree, swapped out
            continue
        if swapped:  # a folder listed from the old tree while its render deleted it: not a look at one tree
            continue
        seen += 1
        if not expected <= present or "record.json" not in present:
            incomplete.append(sorted(expected - present) or ["record.json"])
        time.sleep(0.002)
    results = [p.communicate() + (p.returncode,) for p in processes]

    assert all(code == 0 for _, _, code in results), [err for _, err, code in results if code]
    assert seen > 10, "the reader never looked while renders ran"
    assert not incomplete, incomplete[:3]
    assert json.loads((out / "record.json").read_text())["image_id"] == "sha256:" + "1" * 64
    assert (out / "release-notes.md").read_text() == "notes of an earlier step\n"
    assert not [p.name for p in out.parent.iterdir() if ".render-" in p.name or ".old-" in p.name]


def test_an_unchanged_render_writes_nothing(scratch):
    scratch.copy_release("dev")
    project = Project.at(scratch.root)
    render_release(project, "dev")
    dockerfile = project.out("dev") / "Dockerfile"
    before = dockerfile.stat().st_ino, dockerfile.stat().st_mtime_ns
    render_release(project, "dev")
    assert (dockerfile.stat().st_ino, dockerfile.stat().st_mtime_ns) == before


def test_a_stale_file_of_an_owned_folder_goes_and_other_outputs_stay(tmp_path):
    out = tmp_path / "build" / "r"
    (out / "entrypoint").mkdir(parents=True)
    (out / "entrypoint" / "stale.sh").write_text("old\n")
    (out / "smoke-junit.xml").write_text("<junit/>\n")
    (out / "logs").mkdir()
    (out / "logs" / "a.txt").write_text("kept\n")
    with release_lock(out):
        assert replace_dir(out, {"Dockerfile": b"FROM x\n", "entrypoint/run.sh": b"#!/bin/sh\n"},
                           {"entrypoint/run.sh"}, {"Dockerfile", "entrypoint"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "Dockerfile", "entrypoint/run.sh", "logs/a.txt", "smoke-junit.xml"]
    assert (out / "entrypoint" / "run.sh").stat().st_mode & 0o777 == 0o755


def test_a_file_where_build_r_goes_is_refused_and_kept(tmp_path):
    out = tmp_path / "build" / "r"
    out.parent.mkdir()
    out.write_text("mine\n")
    with release_lock(out), pytest.raises(NotADirectoryError):
        replace_dir(out, {"Dockerfile": b"FROM x\n"}, set(), {"Dockerfile"})
    assert out.read_text() == "mine\n"
