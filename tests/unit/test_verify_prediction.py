"""The 25.12 TensorRT defect, planted on a local index of small fake distributions (never PyPI's moving
state): `tensorrt-cu13` 10.14.1.48.post1 exists only as a source archive whose setup computes its
requirements (its PKG-INFO, Metadata-Version 2.1, says none), among them
`tensorrt_cu13_libs==10.14.1.48.post1`; the image installs it and its bindings with --no-deps and
leaves the libraries out. verify must predict the image's `pip check` failure with pip's own line, and
real pip, installing the same two distributions from the same index into a virtual environment, must
print exactly that line. With the libraries pinned, both pass."""

import os
import subprocess
import sys

import pytest

from ngcbuild.verify import report

from ..fake_index import FakeIndex, sdist, wheel
from ..helpers import verify_python_rows

TRT = "10.14.1.48.post1"
LINE = f"tensorrt-cu13 {TRT} requires tensorrt-cu13-libs, which is not installed."
MANIFEST = """\
extends: parts/debian-bookworm
summary: a tiny release carrying 25.12's TensorRT Python packages
pip:
  constraint_file: true
"""
PINS = f"tensorrt-cu13=={TRT}\ntensorrt-cu13-bindings=={TRT}\n"


@pytest.fixture
def index():
    fake = FakeIndex()
    fake.add(*sdist("tensorrt_cu13", TRT, [f"tensorrt_cu13_libs=={TRT}", f"tensorrt_cu13_bindings=={TRT}",
                                           'numpy; extra == "numpy"']))
    fake.add(*wheel("tensorrt_cu13_bindings", TRT))
    fake.add(*wheel("tensorrt_cu13_libs", TRT))
    yield fake
    fake.close()


def _rows(scratch, index, monkeypatch, tmp_path, pins: str, manifest: str = MANIFEST) -> dict:
    rows = verify_python_rows(scratch, index.url, tmp_path / "scratch", "trt", manifest, pins)
    return {(r.kind, r.name): r for r in rows}


def _real_pip_check(index, tmp_path, *requirements) -> str:
    """pip itself: a virtual environment, the pins installed from the fake index with --no-deps (the
    source archive built by pip with its own backend), then `pip check`'s output."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = str(venv / "bin" / "python")
    # no PIP_* settings, and no PYTHONPATH: the checkout's src/ (an editable install leaves
    # ngcbuild.egg-info there) would put ngcbuild's own metadata into the venv's pip check
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"},
               "PIP_CONFIG_FILE": os.devnull,
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-cache-dir", "--index-url", index.url,
                    *requirements], check=True, capture_output=True, timeout=300, env=environ)
    check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True, timeout=120, env=environ)
    return check.stdout


def test_the_planted_tensorrt_defect_is_predicted_with_pip_checks_own_line(scratch, index, monkeypatch, tmp_path):
    rows = _rows(scratch, index, monkeypatch, tmp_path, PINS)
    check = rows[("pip-check", "pip check")]
    assert check.status == report.FAILED, check
    assert f"the image's pip check would print: {LINE}" in check.reason, check
    closure = rows[("closure", "constraints/trt.txt")]
    assert closure.status == report.FAILED and f"tensorrt-cu13-libs {TRT} (required by tensorrt_cu13)" in closure.reason
    # its pip row: a source archive the build compiles, its metadata built (never installed)
    pin = rows[("pip", "tensorrt-cu13")]
    assert pin.status == report.NOT_VERIFIED and "built from the source archive (PEP 517)" in pin.reason, pin
    # pip itself prints exactly that line for the same distributions
    assert _real_pip_check(index, tmp_path, f"tensorrt-cu13=={TRT}", f"tensorrt-cu13-bindings=={TRT}") == LINE + "\n"


def test_with_the_libraries_pinned_the_prediction_and_pip_check_pass(scratch, index, monkeypatch, tmp_path):
    rows = _rows(scratch, index, monkeypatch, tmp_path, PINS + f"tensorrt-cu13-libs=={TRT}\n")
    check = rows[("pip-check", "pip check")]
    assert (check.status, check.reason) == (
        report.VERIFIED, "3 distributions (3 pinned, 0 built from source, 0 of the base image): pip check prints no "
                         "broken requirement (the image's pip predates the platform check of pip 23.3)"), check
    assert rows[("closure", "constraints/trt.txt")].status == report.VERIFIED
    assert _real_pip_check(index, tmp_path, f"tensorrt-cu13=={TRT}", f"tensorrt-cu13-bindings=={TRT}",
                           f"tensorrt-cu13-libs=={TRT}") == "No broken requirements found.\n"


def test_a_tolerance_no_predicted_line_needs_is_an_error(scratch, index, monkeypatch, tmp_path):
    tolerance = ("  wrong_wheel_tags:\n    - distribution: tensorrt-cu13-bindings\n      platforms: [linux/amd64]\n"
                 "      tag: py3-none-manylinux2014_sbsa\n      evidence: its WHEEL file says so\n")
    rows = _rows(scratch, index, monkeypatch, tmp_path, PINS + f"tensorrt-cu13-libs=={TRT}\n", MANIFEST + tolerance)
    check = rows[("pip-check", "pip check")]
    assert check.status == report.FAILED, check
    assert ("pip.wrong_wheel_tags: tensorrt-cu13-bindings: tolerated on linux/amd64, but pip check prints no line "
            "of it there") in check.reason, check


def test_a_base_whose_python_distributions_are_not_declared_is_not_counted_as_none(scratch, index, monkeypatch,
                                                                                   tmp_path):
    """verify never states "0 of the base image" where the manifest declares nothing of the base: it says
    it does not know them (issue 42: cuda-dl-base, whose distributions no manifest declares)."""
    undeclared = MANIFEST + "base:\n  image: example.org/some-base:1\n  python_distributions: null\n"
    rows = _rows(scratch, index, monkeypatch, tmp_path, PINS + f"tensorrt-cu13-libs=={TRT}\n", undeclared)
    check = rows[("pip-check", "pip check")]
    assert check.status == report.NOT_VERIFIED, check
    assert "3 distributions (3 pinned, 0 built from source, the base image's not known)" in check.reason, check
    assert ("not known here: the Python distributions of the base image example.org/some-base:1 "
            "(base.python_distributions is not declared, and verify does not read images)") in check.reason, check
    assert "0 of the base image" not in check.reason


def test_a_declared_distribution_of_the_base_takes_part_in_the_prediction(scratch, index, monkeypatch, tmp_path):
    """The base's tensorrt-cu13-libs, declared with its evidence, meets the requirement the pins leave open."""
    declared = MANIFEST + (
        "base:\n  image: example.org/some-base:1\n  python_distributions:\n    evidence: pip list in the base\n"
        f"    distributions:\n      tensorrt-cu13-libs:\n        version: {TRT}\n        evidence: pip show\n")
    rows = _rows(scratch, index, monkeypatch, tmp_path, PINS, declared)
    check = rows[("pip-check", "pip check")]
    assert check.status == report.VERIFIED, check
    assert check.reason.startswith("3 distributions (2 pinned, 0 built from source, 1 of the base image)"), check
