"""The rule of tests missing what they need (tests/conftest.py): with CI=true a failure that says so, never a
skip; elsewhere a skip with the same words."""

import pytest

from .. import conftest


def test_with_ci_a_missing_tool_fails_the_test(monkeypatch):
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match=r"^CI=true and gcc is missing \(apt install gcc\)$"):
        conftest.fail_in_ci_else_skip("gcc is missing", "apt install gcc")


def test_without_ci_it_skips_with_the_same_words(monkeypatch):
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match=r"^gcc is missing \(apt install gcc\)$"):
        conftest.fail_in_ci_else_skip("gcc is missing", "apt install gcc")
    with pytest.raises(pytest.skip.Exception, match=r"^PyPI is unreachable$"):
        conftest.fail_in_ci_else_skip("PyPI is unreachable")
