"""ci.yml's jobs this machine can run, through act on the host (`ngcbuild rehearse`): they build nothing, so
they run beside the engine's lane (dev/test_run.py)."""

import re

import pytest

from ..conftest import REPO, run_command

pytestmark = pytest.mark.workflow


def test_ci_workflow_lint_and_unit(act):
    """Both jobs as on a push to main; the unit job on a named selection (`--unit-tests`, the workflow's
    NGCBUILD_UNIT_TESTS): the rehearsal proves the job runs `invoke test --unit`, and the whole unit suite
    runs once, in this run, not a second time inside act."""
    result = run_command("ngcbuild", "rehearse", "--workflow", "ci", "--job", "lint", "--job", "unit",
                         "--unit-tests", "test_workflows or test_rehearse", cwd=REPO, timeout=1800)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert "[ci/lint" in log and "[ci/unit" in log and "rehearse: ci.yml passed: lint, unit" in log
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)  # pytest colours its summary on act's terminal
    ran = re.search(r"\[ci/unit\s*\].*?(\d+) passed, (\d+) deselected", plain)
    assert ran, log[-6000:]
    assert 0 < int(ran.group(1)) < int(ran.group(2))  # the selection, not the suite
