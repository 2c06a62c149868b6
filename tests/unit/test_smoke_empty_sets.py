"""A check parametrised over an empty set says why in the project's words: the checks give such a set a
reason of their own (smoke/checks/conftest.each), and the summary never shows pytest's "[NOTSET]" or
"got empty parameter set", even for a check that gave none (smoke/junit.py)."""

import ast
import json
import subprocess
import sys

from ngcbuild.smoke.junit import Row, read_junit
from ngcbuild.smoke.runner import CHECKS_DIR
from ngcbuild.smoke.staging import stage_expectations
from ngcbuild.smoke.summary import render_table
from tests.conftest import REPO

PYTEST_WORDS = ("NOTSET", "empty parameter set")


def test_the_stack_checks_of_a_release_without_modules_or_libraries_skip_saying_why(tmp_path):
    # the real stack checks, staged as a run stages them, for a release whose stack lists no component
    expected = {"release": "r1", "components": {}, "components_in_image": [],
                "stack": {"modules": {}, "libraries": {}}}
    stage_expectations(tmp_path / "expect", json.dumps(expected).encode())
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "junit_family=xunit1",
                    f"--junitxml={junit}", f"--rootdir={CHECKS_DIR}", str(CHECKS_DIR / "test_stack.py"),
                    "-k", "manifest_version or imports_without_warnings or linker_cache"],
                   capture_output=True, text=True, cwd=tmp_path,
                   env={"NGCBUILD_SMOKE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})
    rows = read_junit(junit.read_bytes())
    modules = "r1 declares no component with a Python module to check"
    assert sorted(rows, key=lambda row: row.check) == [
        Row("stack::component_imports_without_warnings[none declared]", "skipped", modules),
        Row("stack::component_reports_the_manifest_version[none declared]", "skipped", modules),
        Row("stack::library_is_in_the_linker_cache_and_loads[none declared]", "skipped",
            "r1 declares no component with a shared library to check"),
    ]
    table = render_table(rows, width=160)
    assert not any(words in table for words in PYTEST_WORDS), table


def test_pytests_own_words_for_an_empty_set_never_reach_the_summary():
    # a check that parametrises over an empty set without a reason of ours (pytest 9's words, recorded)
    rows = read_junit((REPO / "tests" / "data" / "junit" / "pytest-9-xunit1.xml").read_bytes())
    row = next(r for r in rows if "linker_cache" in r.check)
    assert row == Row("sample::library_is_in_the_linker_cache_and_loads[none declared]", "skipped",
                      "nothing to check: none declared for library_component")
    older = (b'<testsuite><testcase classname="smoke.test_stack" name="test_x[NOTSET]"><skipped message="'
             b"got empty parameter set ['library_component'], function test_x at /opt/ngcbuild/smoke/test_stack.py:44"
             b'"/></testcase></testsuite>')
    assert read_junit(older) == [Row("stack::x[none declared]", "skipped",
                                     "nothing to check: none declared for library_component")]
    assert not any(words in render_table(rows) for words in PYTEST_WORDS)


def test_every_check_parametrised_at_collection_goes_through_each():
    # metafunc.parametrize over a set read from the expectations may meet an empty one: only `each` calls it
    found = []
    for path in sorted(CHECKS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        helper = {id(node) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and fn.name == "each"
                  and path.name == "conftest.py" for node in ast.walk(fn)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "parametrize" and ast.unparse(node.func.value) == "metafunc"
                    and id(node) not in helper):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"parametrised without conftest.each (an empty set would skip in pytest's words): {found}"
