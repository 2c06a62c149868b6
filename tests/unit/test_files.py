"""core/files.exists: a path the system cannot look up is said to be so, never "missing"."""

import os

import pytest

from ngcbuild.core.files import UnusablePath, exists


def test_a_missing_file_and_a_file_where_a_folder_is_needed_are_missing(tmp_path):
    (tmp_path / "a-file").write_text("x")
    assert not exists(tmp_path / "nothing.yaml")
    assert not exists(tmp_path / "a-file" / "below.yaml")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    assert exists(tmp_path / "dangling")  # the reader says what it is


def test_a_name_over_name_max_names_the_limit(tmp_path):
    with pytest.raises(UnusablePath) as caught:
        exists(tmp_path / ("n" * 300 + ".yaml"))
    assert caught.value.reason == "a name in the path is 305 bytes, longer than the 255 the file system allows"
    assert caught.value.exit_code == 1


def test_a_path_over_path_max_names_its_length_and_the_limit(tmp_path):
    path = tmp_path.joinpath(*["deep"] * 1000)
    with pytest.raises(UnusablePath) as caught:
        exists(path)
    assert caught.value.reason == f"the path is {len(str(path))} bytes, longer than the 4095 the system allows"
    assert len(str(caught.value)) < 300  # the path itself is shortened


def test_a_loop_of_links_says_so(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(UnusablePath, match=r"a loop of links"):
        exists(tmp_path / "loop" / "below.yaml")


@pytest.mark.parametrize("name", ["a\x00b.yaml", "a\ud800b.yaml"])
def test_a_name_no_file_can_have_says_so(tmp_path, name):
    with pytest.raises(UnusablePath, match="a character no file name can hold"):
        exists(tmp_path / name)


def test_a_plain_path_outside_is_never_called_a_link_and_a_link_out_is(tmp_path):
    from ngcbuild.core.errors import ManifestError
    from ngcbuild.core.files import read_text

    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "req.txt").write_text("einops\n")
    os.symlink(outside / "req.txt", project / "req.txt")
    with pytest.raises(ManifestError) as plain:
        read_text(outside / "req.txt", 100, "a requirements file", "missing", within=project)
    assert "is outside" in str(plain.value) and "link" not in str(plain.value)
    with pytest.raises(ManifestError) as linked:
        read_text(project / "req.txt", 100, "a requirements file", "missing", within=project)
    assert "is a link to a file outside" in str(linked.value)


def test_a_file_read_wherever_it_lives_is_still_bounded_and_never_a_fifo(tmp_path):
    from ngcbuild.core.errors import ManifestError
    from ngcbuild.core.files import read_text

    (tmp_path / "req.txt").write_text("einops\n")
    assert read_text(tmp_path / "req.txt", 100, "a requirements file", "missing", within=None) == "einops\n"
    os.mkfifo(tmp_path / "fifo")
    for path, says in ((tmp_path / "fifo", "FIFO"), ("/dev/zero", "device"), (tmp_path / "req.txt", "bytes")):
        with pytest.raises(ManifestError, match=says):
            read_text(path, 3, "a requirements file", "missing", within=None)
