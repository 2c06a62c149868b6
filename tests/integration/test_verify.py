"""`invoke verify` as a process against the real PyPI, for every buildable release: each pin is
verified, failed with a reason, or not verified with a reason; nothing from an index this machine cannot
reach passes; the base image that is gone is refused with the way out; abbreviated git refs fail.

Needs PyPI (through the host's proxy); with CI=true an unreachable PyPI is a failure, never a skip."""

import json
import os
import urllib.request

import pytest

from ngcbuild.manifest.verify import Web

from .conftest import IN_CI, run_invoke

pytestmark = pytest.mark.network

RELEASES = ["20.02", "20.12", "25.12", "dev", "cuda-dev"]


@pytest.fixture(scope="session")
def pypi():
    web = Web()
    try:
        urllib.request.urlopen(urllib.request.Request("https://pypi.org/simple/pip/"), timeout=15,
                               context=web.context).read(1)
    except OSError as exc:
        if IN_CI:
            pytest.fail(f"CI=true and PyPI is unreachable: {exc}", pytrace=False)
        pytest.skip(f"PyPI is unreachable: {exc}")


@pytest.fixture(scope="session")
def reports(pypi):
    """release -> (exit status, JSON report), one process each."""
    out = {}
    for release in RELEASES:
        result = run_invoke("verify", "--release", release, "--json", timeout=1800,
                            env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert "Traceback" not in result.stderr, result.stderr
        out[release] = (result.returncode, json.loads(result.stdout), result.stderr)
    return out


def _rows(report, kind=None, status=None):
    return [r for r in report["rows"] if (kind is None or r["kind"] == kind) and (status is None or r["status"] == status)]


@pytest.mark.parametrize("release", RELEASES)
def test_every_row_has_a_status_and_the_exit_status_follows_the_failures(reports, release):
    code, report, stderr = reports[release]
    assert report["release"] == release
    for row in report["rows"]:
        assert row["status"] in ("verified", "failed", "not verified")
        if row["status"] != "verified":
            assert row["reason"], row
    failed = _rows(report, status="failed")
    assert code == (1 if failed else 0), stderr
    assert report["summary"]["failed"] == len(failed)


@pytest.mark.parametrize("release", RELEASES)
def test_a_verified_pin_names_the_wheel_pip_chose_from_a_reachable_index(reports, release):
    _, report, _ = reports[release]
    verified = _rows(report, "pip", "verified")
    assert verified, "PyPI is reachable: some pins must verify"
    for row in verified:
        assert row["reason"].endswith("from https://pypi.org/simple"), row
        assert ".whl" in row["reason"], row


def test_public_wheels_releases_verify_on_pypi_for_every_platform(reports):
    code, report, stderr = reports["cuda-dev"]
    assert code == 0, stderr
    platforms = {r["platform"] for r in _rows(report, "pip")}
    assert platforms == {"linux/amd64", "linux/arm64"}
    assert not _rows(report, "pip", "not verified")


def test_a_pin_only_an_unreachable_index_holds_is_not_verified_never_passed(reports):
    _, report, _ = reports["dev"]
    torch = [r for r in _rows(report, "pip") if r["name"] == "torch"]
    assert torch and all(r["status"] == "not verified" for r in torch)
    assert "download.pytorch.org" in torch[0]["reason"]


def test_25_12_dali_comes_from_nvidias_index_and_is_not_verified_here(reports):
    _, report, _ = reports["25.12"]
    dali = [r for r in _rows(report, "pip") if r["name"] == "nvidia-dali-cuda130"]
    assert dali and dali[0]["status"] == "not verified"
    assert "placeholder" in dali[0]["reason"] and "pypi.nvidia.com" in dali[0]["reason"]
    # every other pip pin of 25.12 is on PyPI for its tags
    assert not [r for r in _rows(report, "pip") if r["status"] == "failed"]


def test_the_removed_20_02_base_is_refused_with_the_way_out(reports):
    code, report, _ = reports["20.02"]
    assert code == 1
    base = _rows(report, "base")[0]
    assert base["status"] == "failed" and "--base" in base["reason"] and "key" in base["reason"]


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_git_refs_are_full_commits_or_fail(reports, release):
    _, report, _ = reports[release]
    for row in _rows(report, "git"):
        if len(row["pin"]) == 40:
            assert row["status"] in ("verified", "not verified")
        else:
            assert row["status"] == "failed" and "not a full commit" in row["reason"]
