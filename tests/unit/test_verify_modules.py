"""verify's module rows: what each module the smoke suite checks will report, read from its pinned wheel on a
local index of small fake wheels, held by the suite's own version rule before any build."""

import io
import zipfile

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.verify import report
from ngcbuild.verify.target import Target

from ..fake_index import FakeIndex, metadata_text
from ..helpers import verify_python_rows

MANIFEST = """\
extends: parts/debian-bookworm
summary: a tiny release whose modules the smoke suite checks
pip:
  constraint_file: true
base:
  provides:
    pytorch: the base this test names carries torch (torchvision and modelopt need one)
components:
  triton:
    version: 3.5.1
    install: pip
  torchvision:
    version: 0.24.1
    install: pip
    module_version: 0.24.1+cu130
  modelopt:
    version: 0.40.0
    install: pip
"""
PINS = "triton==3.5.1\ntorchvision==0.24.1\nnvidia-modelopt==0.40.0\n"


def module_wheel(name: str, version: str, files: dict[str, str]) -> tuple[str, bytes]:
    dist = f"{name.replace('-', '_')}-{version}"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{dist}.dist-info/METADATA", metadata_text(name, version))
        archive.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{dist}.dist-info/RECORD", "")
    return f"{dist}-py3-none-any.whl", buffer.getvalue()


def module_rows(scratch, monkeypatch, tmp_path, torchvision_says: str) -> dict:
    index = FakeIndex()
    try:
        index.add(*module_wheel("triton", "3.5.1", {"triton/__init__.py": "import os\n__version__ = '3.5.1'\n"}))
        index.add(*module_wheel("torchvision", "0.24.1", {"torchvision/__init__.py": "from .version import *\n",
                                                          "torchvision/version.py": f"__version__ = '{torchvision_says}'\n"}))
        index.add(*module_wheel("nvidia-modelopt", "0.40.0", {"modelopt/__init__.py": (
            "from importlib.metadata import version as _version\n__version__ = _version('nvidia-modelopt')\n")}))
        rows = verify_python_rows(scratch, index.url, tmp_path / "scratch", "mods", MANIFEST, PINS)
    finally:
        index.close()
    return {r.name: r for r in rows if r.kind == "module"}


def test_each_module_is_read_from_its_wheel_and_held_by_the_smoke_suites_rule(scratch, monkeypatch, tmp_path):
    rows = module_rows(scratch, monkeypatch, tmp_path, "0.24.1+cu130")
    assert sorted(rows) == ["modelopt", "torchvision", "triton"]
    assert (rows["triton"].status, rows["triton"].pin) == (report.VERIFIED, "3.5.1")
    assert rows["triton"].reason.startswith("triton/__init__.py in triton-3.5.1-py3-none-any.whl from ")
    # the expectation is module_version where the manifest states it: version.py says the same
    assert (rows["torchvision"].status, rows["torchvision"].pin) == (report.VERIFIED, "0.24.1+cu130"), rows["torchvision"]
    assert rows["torchvision"].reason.endswith("says 0.24.1+cu130")
    # modelopt reads its version from its metadata: no literal to read, the distribution's version said
    assert rows["modelopt"].status == report.NOT_VERIFIED
    assert "holds no literal __version__ of modelopt" in rows["modelopt"].reason
    assert rows["modelopt"].reason.endswith("its distribution is 0.40.0, which the rule accepts")


@pytest.mark.parametrize("says,why", [
    ("0.24.1+cpu", "local part +cpu is not +cu130"),  # another build of the version: the image's check would fail
    ("0.24.0+cu130", "release 0.24.0 is not 0.24.1"),
])
def test_a_wheel_whose_module_says_another_version_fails_the_row_before_any_build(scratch, monkeypatch, tmp_path,
                                                                                    says, why):
    row = module_rows(scratch, monkeypatch, tmp_path, says)["torchvision"]
    assert row.status == report.FAILED, row
    assert (f"torchvision/version.py in torchvision-0.24.1-py3-none-any.whl from {row.reason.split(' from ')[1].split(' says')[0]} "
            f"says {says}, which the smoke suite's 0.24.1+cu130 refuses: {why}") in row.reason, row


def test_a_source_build_says_what_the_suite_will_accept():
    from ngcbuild.verify.module_versions import module_rows as rows_of

    from ..conftest import REPO

    loaded = load_release(Project.at(REPO), "25.12")
    target = Target(loaded.release.python.interpreter_version, "linux/amd64", loaded.release.os.glibc)
    rows = {r.name: r for r in rows_of(loaded, target, {}, fetch=None)}
    te = rows["transformer_engine"]
    assert (te.status, te.pin) == (report.NOT_VERIFIED, "2.10.0")
    assert te.reason == ("built from source: what transformer_engine reports is known after the build; the smoke suite "
                         "accepts 2.10.0 or 2.10.0.N (post-releases too), with any local part")
    assert rows["pytorch"].pin == "2.10.0a0+b4e4ee81d3.nv25.12"
