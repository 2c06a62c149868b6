"""Proof without a GPU that the smoke suite starts in every buildable release's image: the suite is
staged exactly as `invoke smoke` stages it (the release's expected.json, the locked pytest of the
manifest's Python) and collected by an interpreter of that Python version (pyenv's on our machines
and in CI). Collection imports every check file and conftest and runs the collection hooks, so a
syntax, stdlib or pytest API the image's Python lacks fails here.

With CI=true a missing interpreter fails; elsewhere it skips, naming the version."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.render.context import render_files
from ngcbuild.smoke.runner import CHECKS_DIR, stage_suite, suite_args, suite_command

from ..conftest import IN_CI

REPO = Path(__file__).resolve().parents[2]
PROJECT = Project.at(REPO)
RELEASES = buildable_releases(PROJECT)


def interpreter(minor: str) -> str | None:
    """A CPython of this MAJOR.MINOR: pyenv's newest patch release, else python3.X on PATH."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(versions.glob(f"{minor}.*"), key=lambda p: [int(x) for x in p.name.split(".")
                                                                         if x.isdigit()], reverse=True):
        if (candidate / "bin" / "python").is_file():
            return str(candidate / "bin" / "python")
    return shutil.which(f"python{minor}")


def require_interpreter(minor: str) -> str:
    python = interpreter(minor)
    if python is None:
        message = f"no Python {minor} here (pyenv install {minor}, or python{minor} on PATH)"
        if IN_CI:
            pytest.fail(f"CI=true: {message}")
        pytest.skip(message)
    return python


def collected(command: list[str], staging: Path) -> list[str]:
    env = {"PATH": os.environ["PATH"], "NGCBUILD_SMOKE_DIR": str(staging), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=staging)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    return [line for line in done.stdout.splitlines() if "::" in line]


def collected_here(release: str, tmp_path: Path) -> list[str]:
    """The checks this machine's own pytest and Python collect for a release: the expected ones."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    staging, _ = stage(release, tmp_path)
    command = suite_command([*suite_args(perf=True, mount=str(staging)), "--collect-only"], checks=str(CHECKS_DIR))
    return collected([sys.executable, "-m", "pytest", *command[2:]], staging)


def stage(release: str, tmp_path: Path) -> tuple[Path, str]:
    loaded = load_release(PROJECT, release)
    staging = tmp_path / release
    staging.mkdir()
    expected = render_files(PROJECT, loaded).files["expected.json"]
    stage_suite(staging, expected, {"Env": [], "Labels": {}}, loaded.release.python.version, PROJECT.build)
    return staging, loaded.release.python.version


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
    from .test_smoke_python_compat import oldest_python

    python = require_interpreter(oldest_python())
    code = ("import pathlib, sys\n"
            "for path in sorted(pathlib.Path(sys.argv[1]).glob('*.py')):\n"
            "    compile(path.read_text(), str(path), 'exec')\n"
            "    print(path.name)\n")
    done = subprocess.run([python, "-c", code, str(CHECKS_DIR)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == {p.name for p in CHECKS_DIR.glob("*.py")}
