"""/etc/pip/constraint.txt holds the final environment, and pip refuses to move a pinned package."""

import base64
import hashlib
import os
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from processes import run

# Checks of the image itself: host mode (no image) deselects them.
pytestmark = pytest.mark.image


def _constraint_file(expected):
    if expected["pip_constraint_file"] is None:
        pytest.skip("this release ships no pip constraint file (NGC images have one from 25.03)")
    return Path(expected["pip_constraint_file"])


def test_constraint_file_equals_the_installed_distributions(expected, installed):
    path = _constraint_file(expected)
    assert path.is_file(), f"{path} is missing: pip installs in the image are not held to the environment"
    pins = {}
    for line in path.read_text().splitlines():
        name, _, version = line.partition("==")
        pins[canonicalize_name(name)] = version
    have = {canonicalize_name(n): v for n, v in installed.items()}
    wrong = {name: (pins.get(name), have.get(name)) for name in sorted(set(pins) | set(have))
             if pins.get(name) != have.get(name)}
    assert not wrong, f"{path} pin -> installed (None: absent): {wrong}"


def test_pip_constraint_env_points_at_the_file(expected):
    path = _constraint_file(expected)
    assert os.environ.get("PIP_CONSTRAINT") == str(path)


def _fake_wheel(directory: Path, name: str, version: str) -> Path:
    """A minimal, valid pure-Python wheel: pip can resolve it offline."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": ("Wheel-Version: 1.0\nGenerator: ngcbuild-smoke\n"
                                    "Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _dry_run(directory: Path, requirement: str, without_constraint: bool = False):
    """pip as a user of the image runs it (its PIP_CONSTRAINT as the image sets it), offline: the one
    candidate is the test's own wheel. `without_constraint` clears PIP_CONSTRAINT for the control run."""
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(directory)}
    if without_constraint:
        env["PIP_CONSTRAINT"] = ""
    return run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps",
                "--disable-pip-version-check", requirement], env=env)


def test_pip_refuses_a_version_that_conflicts_with_a_pin(expected, tmp_path):
    _constraint_file(expected)
    name = "numpy" if "numpy" in expected["packages"] else sorted(expected["packages"])[0]
    _fake_wheel(tmp_path, name, "0.0.1")
    # The same request succeeds without the constraint: the refusal below is the constraint's doing.
    allowed = _dry_run(tmp_path, f"{name}==0.0.1", without_constraint=True)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    refused = _dry_run(tmp_path, f"{name}==0.0.1")
    assert refused.returncode != 0, (f"pip install {name}==0.0.1 in the image's environment "
                                     f"(PIP_CONSTRAINT={os.environ.get('PIP_CONSTRAINT')!r}) was not refused")
    assert "conflict" in (refused.stdout + refused.stderr).lower()
