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
