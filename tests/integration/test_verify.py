"""`invoke verify` as a process against the real PyPI, for every buildable release: each pin is
verified, failed with a reason, or not verified with a reason; nothing from an index this machine cannot
reach passes; the base image that is gone is refused with the way out, and with a mirror 20.02 passes;
20.12 and 25.12 pass apart from what this machine cannot reach; a short commit GitHub cannot resolve here
is "not verified" with the command that resolves it; each platform's pin set is closed (cuda-dev) or, where
a pin is only on an unreachable index (dev's torch), "not verified"; each platform's `pip check` is
predicted (cuda-dev's arm64 prints only the line its manifest tolerates).

Needs PyPI (through the host's proxy); with CI=true an unreachable PyPI is a failure, never a skip."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from .conftest import run_invoke

pytestmark = pytest.mark.network

RELEASES = ["20.02", "20.12", "25.12", "dev", "cuda-dev"]
MIRRORED = "20.02 --base-image mirror"  # 20.02 again, its removed base image replaced by a mirror


@pytest.fixture(scope="session")
def reports(pypi):
    """release -> (exit status, JSON report), one process each."""
    runs = {release: ("--release", release) for release in RELEASES}
    runs[MIRRORED] = ("--release", "20.02", "--base-image", "mirror.example/nvidia/cuda:10.2-cudnn7-devel-ubuntu18.04")

    def verify(args):
        return run_invoke("verify", *args, "--json", timeout=1800, env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})

    # The processes wait on the indexes far more than they compute: three at a time (CI's budget).
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(zip(runs, pool.map(verify, runs.values()), strict=True))
    out = {}
    for key, result in results.items():
        assert "Traceback" not in result.stderr, result.stderr
        out[key] = (result.returncode, json.loads(result.stdout), result.stderr)
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


@pytest.mark.parametrize("release", RELEASES)
def test_each_platform_gets_one_closure_row(reports, release):
    _, report, _ = reports[release]
    closure = _rows(report, "closure")
    assert sorted(r["platform"] for r in closure) == sorted({r["platform"] for r in _rows(report, "pip")})
    assert {r["name"] for r in closure} == {f"constraints/{release}.txt"}


def test_public_wheels_pin_sets_are_closed_on_every_platform(reports):
    # cuda-dev pins torch 2.11.0's CUDA wheels, Triton and the rest on both platforms: nothing unpinned
    closure = _rows(reports["cuda-dev"][1], "closure")
    assert [(r["platform"], r["status"]) for r in closure] == [("linux/amd64", "verified"), ("linux/arm64", "verified")]
    assert all(r["reason"].endswith("distributions, all pinned") for r in closure), closure


@pytest.mark.parametrize("release", RELEASES)
def test_each_platform_gets_one_prediction_of_the_images_pip_check(reports, release):
    _, report, _ = reports[release]
    predicted = _rows(report, "pip-check")
    assert sorted(r["platform"] for r in predicted) == sorted({r["platform"] for r in _rows(report, "pip")})
    for row in predicted:
        assert row["reason"].startswith(f"{row['pin']} ("), row  # N distributions (where they come from)


def test_cuda_dev_s_pip_check_prints_only_the_tolerated_line_on_arm64(reports):
    rows = {r["platform"]: r for r in _rows(reports["cuda-dev"][1], "pip-check")}
    assert rows["linux/amd64"]["status"] == "verified" and "prints no broken requirement" in rows["linux/amd64"]["reason"]
    assert rows["linux/arm64"]["status"] == "verified", rows["linux/arm64"]
    assert ("prints only the tolerated line(s) nvidia-cusparselt-cu13 0.8.0 is not supported on this platform"
            in rows["linux/arm64"]["reason"]), rows["linux/arm64"]


def test_a_set_needing_an_unreachable_index_is_not_verified_never_passed(reports):
    # dev's torch==2.13.0+cpu is on download.pytorch.org alone: the rest is closed, torch's needs unread
    [row] = _rows(reports["dev"][1], "closure")
    assert row["status"] == "not verified", row
    assert "torch==2.13.0+cpu" in row["reason"] and "download.pytorch.org is unreachable" in row["reason"], row


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
    # the mirror need not carry the rotated key: base.apt_keys installs the new one before any apt step
    assert base["status"] == "failed" and "--base" in base["reason"] and "same layers" in base["reason"]


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_git_refs_are_full_commits_or_a_short_one_left_with_its_command(reports, release):
    _, report, _ = reports[release]
    for row in _rows(report, "git"):
        if len(row["pin"]) == 40:
            assert row["status"] in ("verified", "not verified")
        elif all(c in "0123456789abcdef" for c in row["pin"]):
            # 25.12's PyTorch b4e4ee81d3, as NVIDIA gives it: GitHub resolves it (failed, naming the full commit)
            # or, unreachable, it is not verified with the one command that resolves it
            assert row["status"] in ("failed", "not verified"), row
            if row["status"] == "not verified":
                assert "git clone --bare --filter=blob:none" in row["reason"] and row["pin"] in row["reason"]
        else:
            assert row["status"] == "failed" and "not a full commit" in row["reason"]


@pytest.mark.parametrize("release", ["20.12", "25.12", MIRRORED])
def test_the_ngc_releases_pass_apart_from_what_cannot_be_reached(reports, release):
    code, report, stderr = reports[release]
    github = [r for r in report["rows"] if r["kind"] == "git" and "unreachable" not in r["reason"]]
    if github:  # GitHub answers: the short ref fails until its full commit is written; nothing else may
        assert all(len(r["pin"]) < 40 for r in _rows(report, status="failed")), _rows(report, status="failed")
    else:
        assert code == 0 and not _rows(report, status="failed"), stderr
    for row in _rows(report, status="not verified"):
        # NVIDIA's index, GitHub, registries, conda channels, a source archive to build: not reachable or not
        # read from here, each saying so; a module's version where only the build or the wheel's metadata tells
        assert any(why in row["reason"] for why in (
            "unreachable", "verify does not", "not conda channel", "known after the build",
            "no wheel of its distribution on a reachable index", "holds no literal __version__")), row
