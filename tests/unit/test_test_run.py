"""`invoke test`'s split of the whole run (dev/test_run.py): the integration files that need PyPI or Podman
but no Docker engine go to the second process, beside the rest."""

from dev.test_run import network_only


def test_only_files_marked_network_or_podman_alone_leave_the_engines_lane(tmp_path):
    folder = tmp_path / "tests" / "integration"
    folder.mkdir(parents=True)
    for name, mark in [("test_a", "pytestmark = pytest.mark.network"),
                       ("test_b", "pytestmark = [pytest.mark.network, pytest.mark.engine]"),
                       ("test_c", "pytestmark = pytest.mark.engine"),
                       ("test_d", "# pytestmark = pytest.mark.network, said in a comment\n"),
                       ("test_e", "pytestmark = pytest.mark.podman"),
                       ("test_f", "pytestmark = [pytest.mark.podman, pytest.mark.engine]"),
                       ("conftest_network", "pytestmark = pytest.mark.network")]:
        (folder / f"{name}.py").write_text(f"import pytest\n\n{mark}\n\n\ndef test_x():\n    pass\n")
    assert network_only(tmp_path) == ["tests/integration/test_a.py", "tests/integration/test_e.py"]
