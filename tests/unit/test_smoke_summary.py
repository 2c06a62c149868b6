"""The summary table, of the rows the one reader (smoke/junit.py) makes of a JUnit report that a real
pytest run wrote."""

import subprocess
import sys

from ngcbuild.smoke.junit import Row, read_junit
from ngcbuild.smoke.summary import collapse_passes, render_table

CHECKS = '''
import pytest

@pytest.fixture
def broken():
    pytest.fail("--require-gpu: no GPU visible")

def test_alpha(): pass
def test_beta(): pass
def test_gamma(record_property):
    record_property("figure", "712.4 TFLOP/s")
def test_delta(): pytest.skip("no GPU visible to PyTorch 2.13.0+cpu")
def test_epsilon(): assert 1 == 2, "versions differ"
def test_zeta(broken): pass
'''


def junit_of(tmp_path):
    (tmp_path / "test_sample.py").write_text(CHECKS)
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
                    f"--junitxml={junit}", str(tmp_path / "test_sample.py")], cwd=tmp_path, capture_output=True)
    return read_junit(junit.read_bytes())


def test_rows_carry_result_figure_and_reason(tmp_path):
    rows = {r.check: r for r in junit_of(tmp_path)}
    assert rows["sample::alpha"] == Row("sample::alpha", "passed", "")
    assert rows["sample::gamma"] == Row("sample::gamma", "passed", "712.4 TFLOP/s")
    assert rows["sample::delta"] == Row("sample::delta", "skipped", "no GPU visible to PyTorch 2.13.0+cpu")
    assert rows["sample::epsilon"].result == "failed" and "versions differ" in rows["sample::epsilon"].detail
    assert rows["sample::zeta"] == Row("sample::zeta", "error", "--require-gpu: no GPU visible")


def test_table_fits_the_width_collapses_plain_passes_and_counts_everything(tmp_path):
    text = render_table(junit_of(tmp_path), width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any(line.startswith("sample::* (2 checks)") for line in lines)  # alpha and beta
    assert "712.4 TFLOP/s" in text
    assert lines[-1] == "3 passed, 1 failed, 1 error, 1 skipped"


def test_collapse_keeps_order_and_only_joins_runs_within_one_file():
    rows = [Row("a::1", "passed", ""), Row("a::2", "passed", ""), Row("b::1", "passed", ""),
            Row("b::2", "skipped", "why"), Row("b::3", "passed", ""), Row("b::4", "passed", "")]
    assert [r.check for r in collapse_passes(rows)] == ["a::* (2 checks)", "b::1", "b::2", "b::* (2 checks)"]
