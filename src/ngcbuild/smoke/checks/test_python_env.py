"""The interpreter and every pinned distribution are what the manifest says."""

import os
import shutil
import sys

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version
from processes import run
from version_rule import mismatch

# Checks of the image itself: host mode (no image) deselects them.
pytestmark = pytest.mark.image


def test_python_version(expected):
    have = "{}.{}.{}".format(*sys.version_info[:3])
    why = mismatch(have, expected["python"]["version"])
    assert why is None, f"the image's Python is {have}, the manifest says {expected['python']['version']}: {why}"


def test_python_runs_and_is_the_image_interpreter():
    """`python` (not only `python3`) starts the image's interpreter, as in NGC's images (conda's
    python, or Ubuntu's python-is-python3 from 22.11 on): scripts and notebooks call it by that name."""
    python = shutil.which("python")
    assert python, "`python` is not on PATH ({}): only python3 runs".format(os.environ.get("PATH"))
    result = run([python, "-c", "import sys; print(sys.version)"], timeout=60)
    assert result.returncode == 0, "`python` failed (exit {}): {}".format(result.returncode, result.stderr[-500:])
    assert result.stdout.strip() == sys.version, \
        "`python` ({}) is Python {}, the image's python3 is {}".format(python, result.stdout.strip(), sys.version)
    have, wanted = os.path.realpath(python), os.path.realpath(sys.executable)
    assert have == wanted, "`python` is {}, not the image's interpreter {}".format(have, wanted)


def test_a_virtual_environment_can_be_made_and_its_pip_runs(tmp_path):
    """`python3 -m venv` works, as in NGC's images (25.12's installs python3.12-venv): the venv has its own pip
    (ensurepip, which ignores the image's PIP_* settings) and its interpreter is the venv's."""
    venv = tmp_path / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    assert made.returncode == 0, "python -m venv failed (exit {}): {}".format(
        made.returncode, (made.stdout + made.stderr).strip()[-800:])
    python = venv / "bin" / "python"
    prefix = run([str(python), "-c", "import sys; print(sys.prefix)"], timeout=60)
    assert prefix.returncode == 0 and prefix.stdout.strip() == str(venv), prefix.stdout + prefix.stderr
    pip = run([str(python), "-m", "pip", "--version"], timeout=120)
    assert pip.returncode == 0 and str(venv) in pip.stdout, \
        "the venv's pip does not run (exit {}): {}".format(pip.returncode, (pip.stdout + pip.stderr).strip()[-500:])


def test_torch_lives_in_the_manifest_site_packages(expected):
    import torch

    assert torch.__file__.startswith(expected["python"]["site_packages"] + "/"), torch.__file__


def test_every_pinned_package_is_installed_at_its_pin(expected, installed):
    have = {canonicalize_name(name): version for name, version in installed.items()}
    wrong = {name: (pin, have.get(name)) for name, pin in expected["packages"].items()
             if have.get(name) is None or Version(have[name]) != Version(pin)}
    assert not wrong, f"pinned -> installed: {wrong}"
