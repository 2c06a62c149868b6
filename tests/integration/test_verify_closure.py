"""`invoke verify`'s closure and pip check rows, as a process against the real PyPI, for a tiny release in
a scratch project (Debian bookworm's Python 3.11, linux/amd64): requests pinned without urllib3 fails
naming urllib3 and requests, and the predicted pip check prints pip's own line for it; with urllib3 pinned
the set is closed and verifies; urllib3 pinned at a version requests excludes fails naming both versions.
The metadata is PyPI's, read for real.

Needs PyPI (through the host's proxy); with CI=true an unreachable PyPI fails."""

import json

import pytest

from ..helpers import minimal_manifest

pytestmark = pytest.mark.network

MANIFEST = minimal_manifest("a tiny release for verify's closure row", torch=None)
# requests 2.32.5 requires charset_normalizer, idna, urllib3 and certifi (no markers, no extras)
REQUESTS = "requests==2.32.5\ncertifi==2025.11.12\ncharset-normalizer==3.4.4\nidna==3.11\n"


def _verify(scratch, constraints: str):
    scratch.manifest("tiny", MANIFEST)
    scratch.constraints("tiny", constraints)
    result = scratch.invoke("verify", "--release", "tiny", "--json", timeout=900)
    assert "Traceback" not in result.stderr, result.stderr
    rows = json.loads(result.stdout)["rows"]
    pip = [r for r in rows if r["kind"] == "pip"]
    assert pip and all(r["status"] == "verified" for r in pip), pip  # each pin alone installs
    closure = [r for r in rows if r["kind"] == "closure"]
    assert [(r["name"], r["platform"]) for r in closure] == [("constraints/tiny.txt", "linux/amd64")]
    [check] = [r for r in rows if r["kind"] == "pip-check"]
    return result.returncode, closure[0], check


def test_a_dependency_left_unpinned_fails_naming_it_and_who_requires_it(scratch, pypi):
    code, row, check = _verify(scratch, REQUESTS)
    assert row["status"] == "failed" and code == 1
    assert "1 not pinned: urllib3 " in row["reason"] and "(required by requests)" in row["reason"], row
    assert row["reason"].startswith("5 distributions needed on linux/amd64"), row
    assert check["status"] == "failed"
    assert "would print: requests 2.32.5 requires urllib3, which is not installed." in check["reason"], check


def test_the_closed_set_verifies(scratch, pypi):
    code, row, check = _verify(scratch, REQUESTS + "urllib3==2.5.0\n")
    assert (row["status"], row["reason"]) == ("verified", "5 distributions, all pinned"), row
    assert check["status"] == "verified", check
    assert code == 0


def test_a_pin_a_requirement_excludes_fails_naming_both_versions(scratch, pypi):
    code, row, check = _verify(scratch, REQUESTS + "urllib3==1.21\n")
    assert row["status"] == "failed" and code == 1
    assert "requests 2.32.5 requires urllib3<3,>=1.21.1, pinned urllib3==1.21" in row["reason"], row
    assert "requests 2.32.5 has requirement urllib3<3,>=1.21.1, but you have urllib3 1.21." in check["reason"], check
