"""ruff over the project's Python (the rules are in pyproject.toml)."""

import subprocess

import pytest

from ..conftest import REPO, dev_tool


def test_ruff_is_clean():
    ruff = dev_tool("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed (pip install -e '.[dev]')")
    result = subprocess.run([ruff, "check", "--output-format", "concise", "src", "tests", "dev", "tasks.py"],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
