"""Everything the image's interpreter imports (checks, conftest, helpers, the entry point, the shared modules
staged beside the expectations) runs on the oldest Python any manifest names, checked statically by vermin
(syntax, stdlib modules, functions and keyword arguments, annotations evaluated as Python 3.6 evaluates them)."""

import subprocess
import sys

from ngcbuild.smoke.runner import CHECKS_DIR
from ngcbuild.smoke.staging import SHARED_MODULES

from ..conftest import fail_in_ci_else_skip
from ..helpers import oldest_python


def vermin(*args: str) -> subprocess.CompletedProcess:
    try:
        import vermin  # noqa: F401
    except ImportError:
        fail_in_ci_else_skip("vermin is not installed", "pip install -e '.[dev]'")
    # vermin has a console script but no __main__; run its main() with this interpreter.
    command = [sys.executable, "-c", "import sys, vermin; sys.argv[0] = 'vermin'; sys.exit(vermin.main())",
               "--no-tips", "--violations", "--eval-annotations", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_the_oldest_target_comes_from_the_manifests():
    assert oldest_python() == "3.6"  # 20.02 (and the archived 19.xx/20.xx): conda's Python 3.6


def test_every_file_the_image_imports_runs_on_the_oldest_python():
    target = oldest_python()
    done = vermin(f"--target={target}-", str(CHECKS_DIR), *map(str, SHARED_MODULES))
    assert done.returncode == 0, f"needs a newer Python than {target}:\n{done.stdout}{done.stderr}"


def test_vermin_catches_what_python_3_6_lacks(tmp_path):
    """The check above can fail: each of these needs Python 3.7 or 3.8."""
    samples = {
        "future.py": "from __future__ import annotations\n",
        "capture.py": "import subprocess\nsubprocess.run(['true'], capture_output=True)\n",
        "metadata.py": "import importlib.metadata\n",
        "fstring.py": "x = 1\nprint(f'{x=}')\n",
        "generic.py": "def f(x: tuple[int, int]) -> None:\n    pass\n",
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text)
        done = vermin("--target=3.6-", str(tmp_path / name))
        assert done.returncode != 0, f"vermin passed {name} for 3.6:\n{done.stdout}"
