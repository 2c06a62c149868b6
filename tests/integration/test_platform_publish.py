"""The release workflow's multi-arch publish: each platform's job builds, smoke-tests and pushes on
its own runner and leaves its own record; `invoke publish --records DIR` writes the list from those
records alone (refusing while a platform's smoke run is missing), and `invoke promote` copies the list
only when every platform's smoke passed.

The platform jobs are played on this engine with the tiny images of conftest.py (one of them
made arm64); their smoke records are written into the records as the smoke job would (the tiny
images hold no Python to run the suite in)."""

import json
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.engine


def _platform_job(scratch, name: str, platform: str, registry: str, artifacts) -> dict:
    """What one build job does and uploads: build (here: reused by hash), push, its record."""
    built = scratch.invoke("build", "--release", name, "--platform", platform)
    assert built.returncode == 0, built.stdout + built.stderr
    pushed = scratch.invoke("push", "--release", name, "--registry", registry)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    # each platform's job signs what it pushed (release.yml: attest after push, the job's signing key)
    attested = scratch.invoke("attest", "--release", name, "--registry", registry, "--key", "keys/signing.key")
    assert attested.returncode == 0, attested.stdout + attested.stderr
    record = json.loads((scratch.root / "build" / name / "record.json").read_text())
    assert record["platform"] == platform
    record["smoke"] = {"image_id": record["image_id"], "passed": 12, "failed": 0, "errors": 0, "skipped": 0,
                       "exit_code": 0, "at": "2026-11-23T18:00:00Z"}
    folder = artifacts / f"build-{name}-{platform.split('/')[1]}"
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps(record))
    return record


def test_publish_from_platform_records_then_promote_the_list(multiarch_release, registry, fresh_registry, tmp_path):
    m = multiarch_release
    scratch, name, repository = m["scratch"], m["name"], m["repository"]
    artifacts = tmp_path / "platform-records"
    for out in ("keys/signing.key", "keys/other.key"):  # the jobs' key, and one promote must not trust
        made = scratch.invoke("keygen", "--out", out)
        assert made.returncode == 0, made.stdout + made.stderr
    amd = _platform_job(scratch, name, "linux/amd64", registry, artifacts)
    arm = _platform_job(scratch, name, "linux/arm64", registry, artifacts)
    shutil.rmtree(scratch.root / "build" / name)  # the publish job's runner has no build folder

    # the arm64 job's smoke record is missing: nothing is written
    smoked = json.loads((artifacts / f"build-{name}-arm64" / "record.json").read_text())
    (artifacts / f"build-{name}-arm64" / "record.json").write_text(json.dumps({**smoked, "smoke": None}))
    refused = scratch.invoke("publish", "--release", name, "--registry", registry, "--records", str(artifacts))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "linux/arm64: its image" in refused.stderr and "has no smoke record" in refused.stderr
    assert "Nothing was written" in refused.stderr and "Traceback" not in refused.stderr
    (artifacts / f"build-{name}-arm64" / "record.json").write_text(json.dumps(smoked))

    published = scratch.invoke("publish", "--release", name, "--registry", registry, "--records", str(artifacts))
    assert published.returncode == 0, published.stdout + published.stderr
    ref = f"{registry}/{repository}:pubtest-py3"
    listing = json.loads(subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{ref}"],
                                        capture_output=True, check=True).stdout)
    assert sorted(e["platform"]["architecture"] for e in listing["manifests"]) == ["amd64", "arm64"]
    digests = {f"linux/{e['platform']['architecture']}": e["digest"] for e in listing["manifests"]}
    for record in (amd, arm):  # each entry is exactly what that platform's job pushed
        assert digests[record["platform"]] in {p["digest"] for p in record["pushed"].values()}
    gathered = json.loads((scratch.root / "build" / name / "record.json").read_text())
    assert {p: e["smoke"]["image_id"] for p, e in gathered["platforms"].items()} == m["ids"]
    assert gathered["published"][ref]["platforms"] == digests

    untrusted = scratch.invoke("promote", "--release", name, "--from", registry, "--to", fresh_registry,
                               "--trusted-key", "keys/other.key.pub")
    assert untrusted.returncode == 2 and "Traceback" not in untrusted.stderr, untrusted.stdout + untrusted.stderr
    assert _tag_absent(fresh_registry, repository, "pubtest-py3")  # nothing copied

    promoted = scratch.invoke("promote", "--release", name, "--from", registry, "--to", fresh_registry,
                              "--trusted-key", "keys/signing.key.pub")
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    for digest in digests.values():  # every platform's attestations came along (the referrers tag schema)
        referrers = _raw(f"{fresh_registry}/{repository}:{digest.replace(':', '-')}")
        assert referrers["manifests"] and all(m["artifactType"] for m in referrers["manifests"]), referrers
    copied = json.loads(subprocess.run(
        ["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{fresh_registry}/{repository}:pubtest-py3"],
        capture_output=True, check=True).stdout)
    assert copied == listing


def _raw(ref: str) -> dict:
    return json.loads(subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw", f"docker://{ref}"],
                                     capture_output=True, check=True).stdout)


def _tag_absent(registry: str, repository: str, tag: str) -> bool:
    found = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw",
                            f"docker://{registry}/{repository}:{tag}"], capture_output=True, text=True)
    return found.returncode != 0
