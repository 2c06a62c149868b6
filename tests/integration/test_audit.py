"""`invoke audit` for real, as a process: the dev image's SBOM against PyPI, and a known-vulnerable pin
(pycrypto 2.6.1: PyPI's latest version of it since 2013, with published advisories) that fails the
audit, an exception that lets it pass and an expired one that fails it again.

Needs PyPI (through the host's proxy); with CI=true an unreachable PyPI is a failure, never a skip.
"""

import hashlib
import json
import urllib.request
from datetime import date, timedelta

import pytest

from ngcbuild.supply.advisories import CHECKED, NOT_CHECKED, PER_VERSION, PROJECT_JSON

from ..conftest import REPO, fail_in_ci_else_skip
from .conftest import run_invoke

pytestmark = [pytest.mark.network, pytest.mark.engine]  # the dev image it audits is built by the engine
SOURCES = (PER_VERSION, PROJECT_JSON)  # a local build's per-version source names its public version


@pytest.fixture(scope="module")
def pypi():
    try:
        urllib.request.urlopen("https://pypi.org/pypi/pycrypto/json", timeout=15).read(1)
    except OSError as exc:
        fail_in_ci_else_skip(f"PyPI is unreachable: {exc}")


@pytest.mark.engine
def test_the_dev_image_is_audited_from_its_sbom(dev_build, pypi):
    """Every Python distribution of dev's SBOM is in the report, checked by a named source or not
    checked with why; every Debian package is NOT CHECKED; the exit status is the verdict's."""
    made = run_invoke("sbom", "--release", "dev")
    assert made.returncode == 0, made.stdout + made.stderr
    result = run_invoke("audit", "--release", "dev", timeout=900)
    path = REPO / "build" / "dev" / "audit.json"
    report = json.loads(path.read_text())
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert result.returncode == (0 if report["verdict"] == "passed" else 1), result.stdout + result.stderr
    assert f"verdict: {report['verdict']}: " in result.stdout
    assert report["image_id"] == dev_build["record"]["image_id"] == record["image_id"]
    assert report["sbom"]["sha256"] == record["sbom"]["sha256"]
    counts = report["counts"]
    assert counts["python_distributions"] == record["sbom"]["python_distributions"] == len(report["distributions"])
    names = {d["name"] for d in report["distributions"]}
    assert {"torch", "numpy", "pip"} <= names
    for d in report["distributions"]:
        assert d["status"] in (CHECKED, NOT_CHECKED), d
        if d["status"] == CHECKED:
            assert d["source"].startswith(SOURCES) and isinstance(d["advisories"], list), d
        else:
            assert d["reason"], d  # never unexplained, never counted as clean
            assert f"| {d['name']} | {d['version']} | NOT CHECKED |" in result.stdout
    assert counts["checked"] + counts["not_checked"] == counts["python_distributions"]
    assert counts["checked"] >= 1, "PyPI answered for none of dev's distributions"  # dev's min_checked is 1
    assert sum(counts["checked_by"].values()) == counts["checked"]
    assert counts["other_components_not_checked"]["deb"] == record["sbom"]["deb_packages"]
    assert f"NOT CHECKED: {record['sbom']['deb_packages']} deb components" in result.stdout
    assert record["audit"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["audit"]["verdict"] == report["verdict"]


AN_IMAGE = "sha256:" + "c" * 64


def plant(scratch, allow: str = "") -> None:
    """dev's manifest (with `allow`), a record and an SBOM of pycrypto 2.6.1 and one Debian package."""
    scratch.copy_release("dev")
    if allow:
        path = scratch.root / "manifests" / "dev.yaml"
        path.write_text(path.read_text() + "security:\n  allow:\n" + allow)
    sbom = json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "components": [
        {"type": "library", "bom-ref": "pypi:pycrypto@2.6.1", "name": "pycrypto", "version": "2.6.1",
         "purl": "pkg:pypi/pycrypto@2.6.1"},
        {"type": "library", "bom-ref": "deb:libc6@2.36-9", "name": "libc6", "version": "2.36-9",
         "purl": "pkg:deb/debian/libc6@2.36-9?arch=amd64"}],
        "metadata": {"component": {"properties": [{"name": "ngcbuild:image-id", "value": AN_IMAGE}]}}}) + "\n"
    directory = scratch.root / "build" / "dev"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sbom.cdx.json").write_text(sbom)
    (directory / "record.json").write_text(json.dumps({
        "release": "dev", "image_id": AN_IMAGE,
        "sbom": {"sha256": hashlib.sha256(sbom.encode()).hexdigest(), "image_id": AN_IMAGE}}))


def audit(scratch):
    result = scratch.invoke("audit", "--release", "dev", timeout=300)
    report = json.loads((scratch.root / "build" / "dev" / "audit.json").read_text())
    return result, report


def test_a_known_vulnerable_pin_fails_an_exception_passes_it_an_expired_one_fails(scratch, pypi):
    plant(scratch)
    result, report = audit(scratch)
    assert result.returncode == 1, result.stdout + result.stderr
    assert report["verdict"] == "failed" and "audit dev: failed" in result.stderr
    pycrypto = report["distributions"][0]
    assert pycrypto["name"] == "pycrypto" and pycrypto["status"] == CHECKED and pycrypto["source"].startswith(SOURCES)
    found = {a["id"]: a for a in pycrypto["advisories"]}
    ids = {name for a in found.values() for name in (a["id"], *a["aliases"])}
    assert {"CVE-2013-7459", "CVE-2018-6594"} <= ids  # PyPI's published advisories of 2.6.1
    assert {a["policy"] for a in found.values()} == {"not allowed"}
    assert "| pycrypto | 2.6.1 | checked |" in result.stdout and "NOT CHECKED: 1 deb component" in result.stdout

    later = (date.today() + timedelta(days=30)).isoformat()
    plant(scratch, f"    - {{id: CVE-2013-7459, reason: ALGnew is not reachable here, expires: {later}}}\n"
                   f"    - {{id: CVE-2018-6594, reason: no ElGamal keys are made, expires: {later}}}\n"
                   f"    - {{id: PYSEC-2099-1, reason: kept for a pin since dropped, expires: {later}}}\n")
    result, report = audit(scratch)
    assert result.returncode == 0, result.stdout + result.stderr
    assert report["verdict"] == "passed" and report["counts"]["allowed"] == len(found)
    assert "security.allow PYSEC-2099-1: no such advisory" in result.stdout  # reported, not failed

    yesterday = (date.today() - timedelta(days=1)).isoformat()
    plant(scratch, f"    - {{id: CVE-2013-7459, reason: ALGnew is not reachable here, expires: {yesterday}}}\n"
                   f"    - {{id: CVE-2018-6594, reason: no ElGamal keys are made, expires: {later}}}\n")
    result, report = audit(scratch)
    assert result.returncode == 1, result.stdout + result.stderr
    assert report["verdict"] == "failed"
    assert report["problems"] == [f"security.allow CVE-2013-7459 expired on {yesterday}: renew it with a reason, "
                                  "or update the distribution and remove it"]
