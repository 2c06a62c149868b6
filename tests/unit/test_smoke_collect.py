"""Proof without a GPU that the smoke suite starts in every buildable release's image: the suite is
staged exactly as `invoke smoke` stages it (the release's expected.json, the locked pytest of the
manifest's Python) and collected by an interpreter of that Python version (pyenv's on our machines
and in CI). Collection imports every check file and conftest and runs the collection hooks, so a
syntax, stdlib or pytest API the image's Python lacks fails here.

With CI=true a missing interpreter fails; elsewhere it skips, naming the version."""

import json
import os
import subprocess

import pytest

from ngcbuild.manifest.loader import buildable_releases
from ngcbuild.smoke.runner import CHECKS_DIR, suite_args, suite_command

from ..helpers import PROJECT, collected, collected_here, require_interpreter, stage

RELEASES = buildable_releases(PROJECT)


@pytest.mark.parametrize("release", RELEASES)
def test_the_staged_suite_is_collected_by_the_python_of_the_image(release, tmp_path):
    staging, minor = stage(release, tmp_path)
    python = require_interpreter(minor)
    version = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version == minor, f"{python} is Python {version}, not {minor}"
    command = suite_command([*suite_args(perf=True, mount=str(staging)), "--collect-only"], checks=str(CHECKS_DIR))
    items = collected([python, *command[1:]], staging)
    reference = collected_here(release, tmp_path / "here")
    assert items == reference, f"Python {minor} collects {len(items)} checks, this machine's pytest {len(reference)}"
    files = {item.split("::")[0].rsplit("/", 1)[-1] for item in items}
    # the derived checks are for derived releases only (tests/unit/test_derive.py collects them there)
    assert files == {p.name for p in CHECKS_DIR.glob("test_*.py")} - {"test_derived.py"}, \
        "a check file collected nothing"
    assert len(items) >= 40, f"only {len(items)} checks collected for {release}"


def test_the_staged_pytest_is_the_locked_one_for_the_image_python(tmp_path):
    """20.02's Python 3.6 gets pytest 7.0.1 and, resolved for 3.6, importlib-metadata (not the host's
    markers); 3.11 gets neither tomli nor exceptiongroup."""
    old, _ = stage("20.02", tmp_path)
    names = {p.name.split("-")[0].lower() for p in (old / "pytest").glob("*.dist-info")}
    assert {"pytest", "importlib_metadata", "zipp", "tomli", "py"} <= names
    assert (old / "pytest" / "pytest-7.0.1.dist-info").is_dir()
    new, _ = stage("dev", tmp_path)
    names = {p.name.split("-")[0].lower() for p in (new / "pytest").glob("*.dist-info")}
    assert "pytest" in names and not {"tomli", "exceptiongroup", "importlib_metadata"} & names


@pytest.mark.parametrize("minor", ["3.6", "3.11"])
def test_installed_distributions_are_listed_with_and_without_importlib_metadata(minor):
    """The `installed` fixture's helper: importlib.metadata from 3.8, pkg_resources on 3.6 and 3.7."""
    python = require_interpreter(minor)
    done = subprocess.run([python, str(CHECKS_DIR / "list_distributions.py")], capture_output=True, text=True,
                          timeout=120, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert "pip" in found and all(isinstance(v, str) and v for v in found.values()), found


def test_every_file_of_the_checks_folder_compiles_on_the_oldest_python():
    """Collection imports the check files; this also covers those only run as scripts in the image
    (the NCCL rank, the distributions helper) or imported later."""
    from ..helpers import oldest_python

    python = require_interpreter(oldest_python())
    code = ("import pathlib, sys\n"
            "for path in sorted(pathlib.Path(sys.argv[1]).glob('*.py')):\n"
            "    compile(path.read_text(), str(path), 'exec')\n"
            "    print(path.name)\n")
    done = subprocess.run([python, "-c", code, str(CHECKS_DIR)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == {p.name for p in CHECKS_DIR.glob("*.py")}
