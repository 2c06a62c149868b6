"""Shared helpers: a scratch project that uses the real templates and parts."""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest
from dev import USER_TASKS

REPO = Path(__file__).resolve().parents[1]
# With CI=true a test missing what it needs (an engine, a browser, a Python) fails instead of skipping.
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def fail_in_ci_else_skip(message: str, hint: str | None = None) -> NoReturn:
    """What a test does when something it needs (an engine, a tool, a service) is missing: with CI=true it
    fails, never skipping silently; elsewhere it skips. Both say `message`, then `hint` (how to get it)."""
    __tracebackhide__ = True  # the skip or failure is reported at the caller's line, as before this helper
    text = f"{message} ({hint})" if hint else message
    if IN_CI:
        pytest.fail(f"CI=true and {text}", pytrace=False)
    pytest.skip(text)


# Every process a test starts (invoke, ngcbuild, act's steps, a helper script) imports the checkout under
# test first, never whatever copy of ngcbuild is installed (after a CI run in a clone, the editable
# install points at that clone).
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO / "src"), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                          if p and p != str(REPO / "src"))])
# The layer store (image/store.py) of the run: one for every test and process of it (both lanes of `invoke
# test`, act's steps), in build/ of the checkout, so a fresh clone starts with it empty, as a new machine
# does, and nothing is written in the user's own cache.
os.environ.setdefault("NGCBUILD_LAYER_STORE", str(REPO / "build" / "tests" / "layer-store"))


def pytest_configure(config):
    from .reliability_plugin import ReliabilityFigures

    config.pluginmanager.register(ReliabilityFigures(config, REPO, IN_CI), "ngcbuild-reliability-figures")


class ScratchProject:
    """A project in a temporary directory with the repo's templates and parts, and a user's tasks.py."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(REPO / "templates", root / "templates")
        shutil.copytree(REPO / "manifests" / "parts", root / "manifests" / "parts")
        (root / "constraints").mkdir()
        (root / "tasks.py").write_text(USER_TASKS)
        # a project's ignore rules (keygen writes a private key only where they cover it)
        shutil.copy(REPO / ".gitignore", root / ".gitignore")

    def manifest(self, name: str, text: str) -> Path:
        path = self.root / "manifests" / f"{name}.yaml"
        path.write_text(text)
        return path

    def constraints(self, name: str, text: str) -> Path:
        path = self.root / "constraints" / f"{name}.txt"
        path.write_text(text)
        return path

    def copy_release(self, name: str, as_name: str | None = None) -> None:
        as_name = as_name or name
        shutil.copy(REPO / "manifests" / f"{name}.yaml", self.root / "manifests" / f"{as_name}.yaml")
        shutil.copy(REPO / "constraints" / f"{name}.txt", self.root / "constraints" / f"{as_name}.txt")

    def invoke(self, *args: str, timeout: int = 3600) -> subprocess.CompletedProcess:
        return self.invoke_env({}, *args, timeout=timeout)

    def invoke_env(self, env: dict, *args: str, timeout: int = 3600) -> subprocess.CompletedProcess:
        return run_command("invoke", *args, cwd=self.root, env=env, timeout=timeout)

    def ngcbuild(self, *args: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
        return run_command("ngcbuild", *args, cwd=cwd or self.root, timeout=timeout)


def run_command(program: str, *args: str, cwd: Path, env: dict | None = None,
                timeout: int = 600) -> subprocess.CompletedProcess:
    """`invoke ARGS` or `ngcbuild ARGS` (python -m ngcbuild) as a process, importing the checkout under
    test (not whatever copy of ngcbuild is installed). Its stdin is /dev/null, whatever the test run's is
    (a terminal a background run may not read, a pipe that never ends)."""
    module = "invoke" if program == "invoke" else "ngcbuild"
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.fixture
def scratch(tmp_path) -> ScratchProject:
    return ScratchProject(tmp_path / "project")


@pytest.fixture
def figures(request):
    """Record a measurement for RELIABILITY.md (JSON lines appended to $NGCBUILD_FIGURES, which
    tests/reliability_plugin.py points at build/reliability/figures.jsonl for the session).

    Tests record before they assert, so a failing check still shows up as a non-zero figure."""
    import json

    plugin = request.config.pluginmanager.get_plugin("ngcbuild-reliability-figures")

    def record(**fields) -> None:
        line = {"test": request.node.nodeid, **fields}
        if plugin is not None and plugin.owned:
            plugin.recorded.append(line)
        path = os.environ.get("NGCBUILD_FIGURES")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, sort_keys=True) + "\n")

    return record


def dev_tool(name: str) -> str | None:
    """A tool of the dev extra (ruff, hadolint): the one installed beside the Python running the tests
    (a virtual environment need not be on PATH), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which(name)


def split_importtime(stderr: str) -> tuple[set[str], str]:
    """(the modules a process imported, the rest of its stderr) for a run with PYTHONPROFILEIMPORTTIME=1."""
    lines = stderr.splitlines()
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    rest = "\n".join(line for line in lines if not line.startswith("import time:")).strip()
    return imported, rest
