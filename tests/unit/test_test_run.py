"""`invoke test`'s split of the whole run (dev/test_run.py): the integration files whose marks say they need
no Docker engine (PyPI, an index of their own, Podman, act on the host) go to the second process, beside the
rest; a file with no marks stays in the engine's lane."""

from dev.test_run import network_only


def test_only_files_whose_marks_leave_out_the_engine_leave_the_engines_lane(tmp_path):
    folder = tmp_path / "tests" / "integration"
    folder.mkdir(parents=True)
    for name, mark in [("test_a", "pytestmark = pytest.mark.network"),
                       ("test_b", "pytestmark = [pytest.mark.network, pytest.mark.engine]"),
                       ("test_c", "pytestmark = pytest.mark.engine"),
                       ("test_d", "# pytestmark = pytest.mark.network, said in a comment\n"),
                       ("test_e", "pytestmark = pytest.mark.podman"),
                       ("test_f", "pytestmark = [pytest.mark.podman, pytest.mark.engine]"),
                       ("test_g", "pytestmark = pytest.mark.workflow"),
                       ("test_h", "pytestmark = [pytest.mark.engine, pytest.mark.workflow]"),
                       ("test_i", "pytestmark = pytest.mark.index"),
                       ("conftest_network", "pytestmark = pytest.mark.network")]:
        (folder / f"{name}.py").write_text(f"import pytest\n\n{mark}\n\n\ndef test_x():\n    pass\n")
    assert network_only(tmp_path) == ["tests/integration/test_a.py", "tests/integration/test_e.py",
                                      "tests/integration/test_g.py", "tests/integration/test_i.py"]
