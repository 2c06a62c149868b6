"""Skip-by-hash, multi-arch publish, SBOM and promotion against a real engine and real registries.

The multi-arch test uses two tiny images (one file each, conftest.py's `multiarch_release`) labelled
with a scratch release's context hash, one of them turned into an arm64 image by rewriting its config
in a `docker save` archive (this engine cannot build or emulate arm64), so no extra build runs.
"""

import hashlib
import json
import shutil
import subprocess
import urllib.request
import uuid

import pytest
from dev import USER_TASKS

from ..conftest import REPO, run_command, split_importtime
from .conftest import run_invoke

pytestmark = pytest.mark.engine


def test_build_of_a_built_context_is_skipped_without_the_sdk_pydantic_or_jinja(dev_build):
    """The unchanged-release path as a process: it reuses the image, and imports none of what makes a
    build slow to start (its speed is a figure of BENCHMARKS.md, `invoke bench --skip-path`)."""
    run_invoke("build", "--release", "dev")  # the first may render (the stamp) and load
    result = run_invoke("build", "--release", "dev", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    imported, _ = split_importtime(result.stderr)
    assert "ngcbuild.engine.build" in imported and "ngcbuild.engine.local_engine" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in ("docker", "requests", "pydantic", "jinja2", "packaging"))
    assert heavy == [], f"the unchanged-release path imported {heavy[:10]}"
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    short = record["context_sha256"][:12]
    assert f"skipped the build of dev (linux/amd64): context {short} is already built locally" in result.stdout
    assert "Step" not in result.stdout and "[1/" not in result.stdout
    assert record["image_id"] == dev_build["record"]["image_id"] and record["reused"] is True
    assert f"nvcr.io/nvidia/pytorch:dev-py3-{short}" in record["tags"]


def test_sbom_of_the_dev_image_validates_and_is_recorded(dev_build):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    result = run_invoke("sbom", "--release", "dev")
    assert result.returncode == 0, result.stdout + result.stderr
    path = REPO / "build" / "dev" / "sbom.cdx.json"
    data = path.read_bytes()
    assert JsonStrictValidator(SchemaVersion.V1_5).validate_str(data.decode()) is None
    doc = json.loads(data)
    purls = {c.get("purl") for c in doc["components"]}
    assert "pkg:pypi/torch@2.13.0%2Bcpu" in purls
    assert any(p and p.startswith("pkg:deb/debian/python3@3.11.2-1%2Bb1?arch=amd64&distro=debian-12") for p in purls)
    manifest = next(c for c in doc["components"] if c["bom-ref"] == "manifest:pytorch")
    props = {p["name"]: p["value"] for p in manifest["properties"]}
    assert props["ngcbuild:provenance"] == "chosen" and props["ngcbuild:version-in-image"] == "2.13.0+cpu"
    assert doc["metadata"]["component"]["type"] == "container"
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert record["sbom"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert record["sbom"]["image_id"] == dev_build["record"]["image_id"]
    assert record["sbom"]["deb_packages"] > 50 and record["sbom"]["python_distributions"] >= 5


# --- multi-arch publish -------------------------------------------------------------------------

def test_publish_refuses_a_missing_platform_then_writes_a_multiarch_list(multiarch_release, registry, engine):
    m = multiarch_release
    scratch, name, repository = m["scratch"], m["name"], m["repository"]
    short = m["hash"][:12]
    built = scratch.invoke("build", "--release", name)  # reuses the amd64 tiny image: same context hash
    assert built.returncode == 0, built.stdout + built.stderr
    assert "skipped the build of pubtest (linux/amd64)" in built.stdout

    refused = scratch.invoke("publish", "--release", name, "--registry", registry)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "linux/arm64 has no build of context" in refused.stderr and "Nothing was pushed" in refused.stderr
    assert "--platform linux/arm64" in refused.stderr

    arm = scratch.invoke("build", "--release", name, "--platform", "linux/arm64")
    assert arm.returncode == 0, arm.stdout + arm.stderr
    assert "skipped the build of pubtest (linux/arm64)" in arm.stdout
    record = json.loads((scratch.root / "build" / name / "record.json").read_text())
    assert {p: e["image_id"] for p, e in record["platforms"].items()} == m["ids"]
    assert engine.inspect_image(f"nvcr.io/{repository}:pubtest-py3")["Id"] == m["ids"]["linux/amd64"]
    assert engine.inspect_image(f"nvcr.io/{repository}:pubtest-py3-arm64")["Id"] == m["ids"]["linux/arm64"]

    published = scratch.invoke("publish", "--release", name, "--registry", registry)
    assert published.returncode == 0, published.stdout + published.stderr
    ref = f"{registry}/{repository}:pubtest-py3"
    raw = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{ref}"],
                         capture_output=True, check=True).stdout
    listing = json.loads(raw)
    assert listing["mediaType"] == "application/vnd.docker.distribution.manifest.list.v2+json"
    assert sorted(m_["platform"]["architecture"] for m_ in listing["manifests"]) == ["amd64", "arm64"]
    record = json.loads((scratch.root / "build" / name / "record.json").read_text())
    entry = record["published"][ref]
    assert entry["digest"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    for m_ in listing["manifests"]:
        platform = f"linux/{m_['platform']['architecture']}"
        assert entry["platforms"][platform] == m_["digest"]
        per_platform = subprocess.run(
            ["skopeo", "inspect", "--tls-verify=false", f"docker://{registry}/{repository}@{m_['digest']}"],
            capture_output=True, text=True, check=True)
        assert json.loads(per_platform.stdout)["Architecture"] == m_["platform"]["architecture"]
    # the hash tag went to the registry too: a machine without the image pulls it instead of building
    assert _served(registry, repository, f"pubtest-py3-{short}")
    assert _served(registry, repository, f"pubtest-py3-{short}-arm64")

    engine.remove_image(f"nvcr.io/{repository}:pubtest-py3-{short}-arm64")
    engine.remove_image(f"nvcr.io/{repository}:pubtest-py3-arm64")
    engine.remove_image(f"ngcbuild-test-src/{repository}:arm64")
    engine.remove_image(f"{registry}/{repository}:pubtest-py3-arm64")
    engine.remove_image(f"{registry}/{repository}:pubtest-py3-{short}-arm64")
    pulled = scratch.invoke("build", "--release", name, "--platform", "linux/arm64", "--registry", registry)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert f"is already built in {registry}" in pulled.stdout
    pulled_image = engine.inspect_image(f"{registry}/{repository}:pubtest-py3-{short}-arm64")
    assert pulled_image["Architecture"] == "arm64"
    # what was pulled is the release image push made from the engine's (another id): nothing of it stays
    assert pulled_image["Id"] != m["ids"]["linux/arm64"]
    engine.remove_image(pulled_image["Id"], force=True)


def _served(registry: str, repository: str, tag: str) -> bool:
    request = urllib.request.Request(f"http://{registry}/v2/{repository}/manifests/{tag}", method="HEAD",
                                     headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
    try:
        return urllib.request.urlopen(request, timeout=10).status == 200
    except OSError:
        return False


# --- promotion ----------------------------------------------------------------------------------

def test_promote_copies_the_smoked_image_by_digest(dev_smoke, registry, fresh_registry):
    """(Its attestations: test_attestation.py, against private registries.)"""
    pushed = run_invoke("push", "--release", "dev", "--registry", registry)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    digest = record["pushed"][f"{registry}/nvidia/pytorch:dev-py3"]["digest"]
    keys = REPO / "build" / f"promote-test-{uuid.uuid4().hex[:8]}"
    try:
        # as release.yml: a new SBOM, its audit (a report left from an earlier SBOM is never signed as this
        # image's), then the signature; the audit's verdict is PyPI's data of the day, either is recorded
        made = run_invoke("sbom", "--release", "dev")
        assert made.returncode == 0, made.stdout + made.stderr
        audited = run_invoke("audit", "--release", "dev", timeout=900)
        assert audited.returncode in (0, 1) and "verdict: " in audited.stdout, audited.stdout + audited.stderr
        for args in (("keygen", "--out", str(keys / "signing.key")),
                     ("attest", "--release", "dev", "--registry", registry, "--key", str(keys / "signing.key"))):
            made = run_invoke(*args)
            assert made.returncode == 0, made.stdout + made.stderr
        result = run_invoke("promote", "--release", "dev", "--from", registry, "--to", fresh_registry,
                            "--trusted-key", str(keys / "signing.key.pub"))
    finally:
        shutil.rmtree(keys, ignore_errors=True)
    assert result.returncode == 0, result.stdout + result.stderr
    inspected = subprocess.run(["skopeo", "inspect", "--tls-verify=false",
                                f"docker://{fresh_registry}/nvidia/pytorch:dev-py3"],
                               capture_output=True, text=True, check=True)
    assert json.loads(inspected.stdout)["Digest"] == digest
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert record["promoted"][f"{fresh_registry}/nvidia/pytorch:dev-py3"] == {
        **record["promoted"][f"{fresh_registry}/nvidia/pytorch:dev-py3"], "digest": digest, "from": registry}
    promoted = record["promoted"][f"{fresh_registry}/nvidia/pytorch:dev-py3"]
    assert promoted["attestations"][digest]["attached"] == ["audit", "provenance", "sbom"]


def test_promote_refuses_without_a_passing_smoke_record(dev_build, registry, fresh_registry, tmp_path):
    """The same release, record copied into a scratch build/ with a failed smoke result."""
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    project = tmp_path / "project"
    for sub in ("manifests", "constraints", "templates"):
        shutil.copytree(REPO / sub, project / sub)
    (project / "tasks.py").write_text(USER_TASKS)
    shutil.copy(REPO / ".gitignore", project / ".gitignore")  # keygen writes the key where git ignores it
    (project / "build" / "dev").mkdir(parents=True)
    record["pushed"] = {f"{registry}/nvidia/pytorch:dev-py3": {"digest": "sha256:" + "0" * 64}}
    record["smoke"] = {"image_id": record["image_id"], "passed": 10, "failed": 2, "errors": 0, "exit_code": 1}
    (project / "build" / "dev" / "record.json").write_text(json.dumps(record))
    made = run_command("invoke", "keygen", cwd=project, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    result = run_command("invoke", "promote", "--release", "dev", "--from", registry, "--to", fresh_registry,
                         "--trusted-key", "keys/signing.key.pub", cwd=project, timeout=120)
    assert result.returncode == 1
    assert "the smoke suite of dev failed (2 failed" in result.stderr
