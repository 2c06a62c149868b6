"""core/outputs.write_file, the one writer of every file ngcbuild makes: never through a link, never
into a FIFO or device, never outside the folder it must stay in, whole or not at all, with the
umask's mode (or the one asked for)."""

import os
import stat

import pytest

from ngcbuild.core.outputs import OutputError, UnsafeOutput, open_lock_file, write_file


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "build" / "dev").mkdir(parents=True)
    return root


def test_a_file_is_written_whole_with_the_umasks_mode(project):
    path = write_file(project / "build" / "dev" / "audit.json", "{}\n", within=project)
    assert path.read_text() == "{}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in path.parent.iterdir()] == ["audit.json"]  # no temporary file left


def test_a_private_file_is_never_readable_by_others(project):
    path = write_file(project / "keys" / "signing.key", "secret", within=project, mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_link_at_the_name_is_refused_and_its_target_untouched(project, tmp_path):
    outside = tmp_path / "manifest.yaml"
    outside.write_text("release: dev\n")
    for target in (outside, project / "manifests.yaml"):
        link = project / "build" / "dev" / "audit.json"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        with pytest.raises(UnsafeOutput, match="symbolic link"):
            write_file(link, "{}", within=project)
    assert outside.read_text() == "release: dev\n"


def test_a_folder_on_the_way_that_leads_out_of_the_project_is_refused(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "build" / "out").symlink_to(elsewhere)
    with pytest.raises(UnsafeOutput, match="leads outside"):
        write_file(project / "build" / "out" / "new" / "sbom.cdx.json", "{}", within=project)
    assert list(elsewhere.iterdir()) == []  # not even a folder was made there


def test_a_fifo_is_refused_at_once(project):
    fifo = project / "build" / "dev" / "sbom.cdx.json"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeOutput, match="FIFO"):
        write_file(fifo, "{}", within=project)  # a write into it would wait for a reader forever


def test_a_folder_at_the_name_is_the_file_systems_refusal(project):
    (project / "build" / "dev" / "release-notes.md").mkdir()
    with pytest.raises(OutputError, match="a directory is where this file must be written"):
        write_file(project / "build" / "dev" / "release-notes.md", "# notes", within=project)


def test_an_interrupt_while_writing_leaves_the_old_file_whole(project, monkeypatch):
    path = write_file(project / "build" / "dev" / "audit.json", "old\n", within=project)

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(path, "new, and long" * 1000, within=project)
    assert path.read_text() == "old\n"
    assert [p.name for p in path.parent.iterdir()] == ["audit.json"]


def test_a_lock_file_is_never_opened_through_a_link(project, tmp_path):
    outside = tmp_path / "elsewhere.lock"
    (project / "build" / ".dev.lock").symlink_to(outside)
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        open_lock_file(project / "build" / ".dev.lock")
    assert not outside.exists()
    fd = open_lock_file(project / "build" / ".other.lock")
    os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
