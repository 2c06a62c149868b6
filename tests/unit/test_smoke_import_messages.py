"""smoke/checks/import_messages.py, the helper of the suite's import check, run by this interpreter on small
modules made here: what a user's `import NAME` shows (a warning under Python's default filters, a logged
"skipping" line at any level) is reported, and nothing else."""

import json
import subprocess
import sys

import pytest

from ..conftest import REPO

SCRIPT = REPO / "src" / "ngcbuild" / "smoke" / "checks" / "import_messages.py"


def _report(tmp_path, source: str) -> dict:
    (tmp_path / "planted_module.py").write_text(source)
    result = subprocess.run([sys.executable, str(SCRIPT), "planted_module"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    line = [line for line in result.stdout.splitlines() if line.startswith("ngcbuild-import-report ")][-1]
    return json.loads(line.split(" ", 1)[1])


def test_a_quiet_import_reports_nothing(tmp_path):
    report = _report(tmp_path, "import logging\nlogging.getLogger(__name__).info('loaded the kernels')\nprint('x')\n")
    assert report == {"module": "planted_module", "error": None, "warnings": [], "skipping": []}


def test_a_warning_a_user_sees_is_reported(tmp_path):
    report = _report(tmp_path, "import warnings\nwarnings.warn('Failed to load image Python extension')\n")
    assert len(report["warnings"]) == 1 and "UserWarning: Failed to load image Python extension" in report["warnings"][0]


@pytest.mark.parametrize("level", ["debug", "info", "warning"])
def test_a_logged_skipping_line_is_reported_at_any_level(tmp_path, level):
    """torchao 0.14.1 under torch 2.10.0a0 logs "Skipping import of cpp extensions due to incompatible torch
    version ..." as a warning; a failed load of its kernels logs "Skipping ..." at debug."""
    report = _report(tmp_path, "import logging\nlogging.getLogger('torchao').%s("
                               "'Skipping import of cpp extensions due to incompatible torch version %%s', '2.10')\n"
                     % level)
    assert report["skipping"] == [f"{level.upper()} (torchao): Skipping import of cpp extensions due to "
                                  "incompatible torch version 2.10"]


def test_a_deprecation_python_hides_from_users_is_not_reported(tmp_path):
    """Python's default filters show a DeprecationWarning only where __main__ triggers it."""
    report = _report(tmp_path, "import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=1)\n")
    assert report["warnings"] == []


def test_an_import_that_fails_is_reported_as_such(tmp_path):
    report = _report(tmp_path, "import no_such_module_anywhere\n")
    assert "ModuleNotFoundError" in report["error"]
