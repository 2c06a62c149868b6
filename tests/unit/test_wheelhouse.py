"""Only the wheels a release pins, for its Python, enter the build context."""

from pathlib import Path

from ngcbuild.engine.options import default_wheelhouse
from ngcbuild.engine.wheelhouse import select_wheels
from ngcbuild.manifest.constraints import Constraints, Pin


def test_selects_only_pinned_versions_for_the_python(tmp_path):
    for name in ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                 "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
                 "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.whl",
                 "tqdm-4.70.1-py3-none-any.whl",
                 "unrelated-1.0-py3-none-any.whl", "not-a-wheel.txt"):
        (tmp_path / name).write_bytes(b"")
    pins = Constraints(Path("c.txt"), (Pin("torch", "2.13.0+cpu", 1), Pin("tqdm", "4.70.1", 2),
                                      Pin("numpy", "2.3.0", 3)))
    chosen = [w.name for w in select_wheels(tmp_path, pins, "cp311")]
    assert chosen == ["torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "tqdm-4.70.1-py3-none-any.whl"]


def test_default_wheelhouse_is_pip_find_links_when_a_directory(tmp_path):
    assert default_wheelhouse({"PIP_FIND_LINKS": str(tmp_path)}) == tmp_path
    assert default_wheelhouse({"PIP_FIND_LINKS": "https://example.org/simple"}) is None
    assert default_wheelhouse({}) is None
