"""The one reader of a smoke run's JUnit report (smoke/junit.py) and its one counting rule, over
recorded reports and hostile ones; the runner, host mode and the summary count with it."""

import ast

import pytest

from ngcbuild.core.errors import SmokeFailed
from ngcbuild.smoke.junit import MAX_DEPTH, Counts, Row, counts, read_junit
from ngcbuild.smoke.suite_output import JUNIT_LIMIT
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "junit"
SMOKE = REPO / "src" / "ngcbuild" / "smoke"


def rows_of(name):
    return read_junit((DATA / name).read_bytes())


def test_a_pytest_report_of_every_outcome():
    # pytest 9's xunit1 report of a sample holding each outcome (recorded; paths and times neutralised)
    rows = rows_of("pytest-9-xunit1.xml")
    by = {}
    for row in rows:
        by.setdefault(row.check, []).append(row)
    assert by["sample::passes"] == [Row("sample::passes", "passed", "712.4 TFLOP/s")]
    assert by["sample::fails"][0].result == "failed" and by["sample::fails"][0].detail == "AssertionError: versions differ"
    assert by["sample::setup_error"] == [Row("sample::setup_error", "error", "--require-gpu: no GPU visible")]
    # a failed call and a failed teardown are two cases of one name: one failure, one error
    assert [r.result for r in by["sample::fails_and_teardown_errors"]] == ["failed", "error"]
    assert by["sample::fails_and_teardown_errors"][1].detail == "RuntimeError: teardown broke"
    assert by["sample::skips"] == [Row("sample::skips", "skipped", "no GPU visible to PyTorch 2.13.0+cpu")]
    assert by["sample::xfails"] == [Row("sample::xfails", "skipped", "known: cuDNN 9 frontend")]
    assert by["sample::xpass_strict"] == [Row("sample::xpass_strict", "failed", "[XPASS(strict)] should fail")]
    assert by["sample::xpass"] == [Row("sample::xpass", "passed", "")]
    assert counts(rows) == Counts(passed=2, failed=3, errors=2, skipped=3)
    assert counts(rows).line() == "2 passed, 3 failed, 2 errors, 3 skipped"


def test_nested_suites_count_their_cases_once_whatever_the_suites_claim():
    rows = rows_of("nested-suites.xml")
    assert rows == [Row("stack::module_imports[pytorch]", "passed", ""),
                    Row("stack::module_imports[apex]", "failed", "apex reports 0.1, the manifest says 0.2"),
                    Row("gpu::device_count", "passed", "8 x H200"),
                    Row("gpu::fp8", "skipped", "the device lacks FP8 kernels")]
    assert counts(rows) == Counts(passed=2, failed=1, errors=0, skipped=1)


def test_an_empty_report_counts_nothing():
    assert read_junit(b"<testsuites/>") == [] and counts([]) == Counts(0, 0, 0, 0)
    assert read_junit(b'<testsuite tests="3"/>') == []  # counts are the cases', never a suite's claim


def test_text_from_the_image_is_escaped_and_bounded():
    # XML cannot hold an escape sequence; a bidirectional override and a carriage return it can
    name = "x" * 5000 + "\u202e"
    message = "\u202egnp.txt reason&#13;faked line&#10;second line"
    rows = read_junit(f'<testsuite><testcase classname="m" name="{name}"><skipped message="{message}"/>'
                      f"</testcase></testsuite>".encode())
    assert "\u202e" not in rows[0].check and len(rows[0].check) <= 600
    assert "\u202e" not in rows[0].detail and "\r" not in rows[0].detail and "second line" not in rows[0].detail
    assert "reason" in rows[0].detail
    huge = "y" * (1 << 20)
    rows = read_junit(f"<testsuite><testcase name='t'><failure>{huge}</failure></testcase></testsuite>".encode())
    assert rows[0].result == "failed" and len(rows[0].detail) <= 600


@pytest.mark.parametrize("data, reason", [
    (b"<testsuite><testcase name='t'>", "not valid XML"),
    (b"", "not valid XML"),
    (b"\xff\xfe<", "not valid XML"),
    (b"<html><body>502</body></html>", "not a JUnit report"),
    # the billion laughs: refused at its document type, before any entity is declared
    (b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
     b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><testsuite><testcase name="&c;"/></testsuite>',
     "declares a document type"),
    # an external entity (a host file) is never read
    (b'<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite><testcase name="&x;"/></testsuite>',
     "declares a document type"),
    (b'<testsuite><testcase name="&x;"/></testsuite>', "not valid XML"),  # an entity never declared
    (b"<testsuites>" + b"<testsuite>" * 100_000 + b"</testsuite>" * 100_000 + b"</testsuites>",
     f"nested deeper than {MAX_DEPTH}"),
])
def test_hostile_or_broken_reports_are_one_smoke_failure(data, reason):
    with pytest.raises(SmokeFailed, match=reason) as caught:
        read_junit(data, "the smoke suite's smoke-junit.xml")
    assert "smoke-junit.xml" in str(caught.value) and "\n" not in str(caught.value)


def test_a_report_over_the_limit_is_refused_unparsed():
    with pytest.raises(SmokeFailed, match="over the"):
        read_junit(b" " * (JUNIT_LIMIT + 1))


def test_a_wide_report_reads_in_bounded_time():
    # thousands of checks: every row, nothing quadratic
    cases = b"".join(b'<testcase classname="m" name="t%d"><skipped message="why"/></testcase>' % i
                     for i in range(50_000))
    rows = read_junit(b"<testsuite>" + cases + b"</testsuite>")
    assert counts(rows) == Counts(passed=0, failed=0, errors=0, skipped=50_000)


def test_one_reader_counts_for_every_smoke_module():
    # no module of smoke/ but the reader parses XML or counts a report's suites itself
    for path in sorted(SMOKE.glob("*.py")):
        if path.name == "junit.py":
            continue
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in node.names} | {node.module for node in ast.walk(tree)
                                                if isinstance(node, ast.ImportFrom) and node.module}
        assert not any("xml" in name or "ElementTree" in name for name in imported), path.name
    for name in ("runner.py", "host.py", "summary.py"):
        assert "from ngcbuild.smoke.junit import" in (SMOKE / name).read_text(), name
