"""README command 1 for real: build, smoke-test and push the `dev` image on a real engine."""

import json
import subprocess

import pytest

from ..conftest import REPO, ScratchProject
from ..helpers import minimal_manifest
from .conftest import run_invoke
from .private import untag_registry, untag_release
from .secrets import credential_markers, scan_files, scan_image, scan_text

pytestmark = pytest.mark.engine


def test_build_tags_and_records(engine, dev_build):
    record = dev_build["record"]
    # the release tag, and the context-hash tag that skip-by-hash looks for
    assert record["tags"] == ["nvcr.io/nvidia/pytorch:dev-py3",
                              f"nvcr.io/nvidia/pytorch:dev-py3-{record['context_sha256'][:12]}"]
    assert engine.inspect_image("nvcr.io/nvidia/pytorch:dev-py3")["Id"] == record["image_id"]
    for key in ("image_id", "size_bytes", "layers", "duration_s", "context_sha256"):
        assert record[key], key
    assert record["ca_bundle_used"] is True
    assert "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in record["wheels"]
    # step progress was streamed line by line
    assert "[1/" in dev_build["result"].stdout and "Step" not in dev_build["result"].stdout.splitlines()[-1]


def test_image_carries_oci_and_ngc_labels(engine, dev_build):
    labels = engine.inspect_image(dev_build["record"]["image_id"])["Config"]["Labels"]
    assert labels["com.nvidia.pytorch.version"] == "2.13.0+cpu"
    assert labels["org.opencontainers.image.version"] == "dev-py3"
    assert labels["org.opencontainers.image.base.name"] == "debian:bookworm-slim"
    assert labels["io.ngcbuild.context.sha256"] == dev_build["record"]["context_sha256"]


def test_smoke_passes_and_gpu_checks_skip_with_reasons(dev_smoke):
    """dev's PyTorch is a CPU build: its GPU checks skip on every runner, a GPU runner too (the reason
    says so), so this holds wherever the suite runs."""
    junit = (REPO / "build" / "dev" / "smoke-junit.xml").read_text()
    assert 'failures="0"' in junit and 'errors="0"' in junit
    assert "no GPU visible to PyTorch 2.13.0+cpu (CUDA build: None;" in junit
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert record["smoke"]["failed"] == 0 and record["smoke"]["passed"] >= 15
    assert record["smoke"]["skipped"] >= 3


def test_require_gpu_turns_skips_into_failures(dev_smoke):
    """The skips of dev's CPU build (on any runner, a GPU runner too) fail under --require-gpu."""
    result = run_invoke("smoke", "--release", "dev", "--require-gpu")
    assert result.returncode == 1
    assert "--require-gpu: no GPU visible" in result.stdout
    # put the passing record back for the tests that read it
    assert run_invoke("smoke", "--release", "dev").returncode == 0


def test_push_digest_matches_skopeo(dev_build, dev_smoke, registry):
    result = run_invoke("push", "--release", "dev", "--registry", registry)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    ref = f"{registry}/nvidia/pytorch:dev-py3"
    pushed = record["pushed"][ref]["digest"]
    inspected = subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{ref}"],
                               capture_output=True, text=True, check=True)
    assert json.loads(inspected.stdout)["Digest"] == pushed


def _dev_markers(marker_ca, registry_secret) -> dict[str, bytes]:
    markers = credential_markers(registry_secret["user"], registry_secret["password"])
    markers.update({f"CA bundle line {i}": line.encode() for i, line in enumerate(marker_ca["marker_lines"])})
    return markers


@pytest.mark.reliability
def test_no_secret_in_any_layer_config_history_labels_output_or_log(engine, dev_build, marker_ca, registry_secret,
                                                                   tmp_path, figures):
    """The CA bundle and the registry credentials were in the build's inputs and environment; none of
    them is in the image, its history or labels, the build's output, or any file under build/dev/."""
    markers = _dev_markers(marker_ca, registry_secret)
    found, layers = scan_image(engine, dev_build["record"]["image_id"], markers, tmp_path / "image.tar")
    image_found = list(found)
    found += scan_text("build output", dev_build["result"].stdout + dev_build["result"].stderr, markers)
    found += scan_files(REPO / "build" / "dev", markers)
    figures(suite="secrets", case="dev image: every layer, config, history, labels", found=len(image_found),
            layers=layers)
    figures(suite="secrets", case="dev build output and build/dev files", found=len(found) - len(image_found))
    assert layers == dev_build["record"]["layers"]
    assert found == []


@pytest.mark.reliability
def test_dev_push_with_credentials_shows_no_secret(engine, dev_build, marker_ca, registry_secret, private_registry,
                                                   figures):
    """Push dev to a registry that wants the marker credentials: first with a wrong password (refused
    at once), then with the right one; neither the output nor the record shows a secret."""
    registry = private_registry({registry_secret["user"]: registry_secret["password"]})
    right = dict(registry_secret["env"], NGCBUILD_REGISTRY_HOST=registry.address)
    wrong = dict(right, NGCBUILD_REGISTRY_PASSWORD="ngcbuild-wrong-" + registry_secret["password"][-8:])
    markers = _dev_markers(marker_ca, registry_secret)
    markers["wrong password"] = wrong["NGCBUILD_REGISTRY_PASSWORD"].encode()
    ref = f"{registry.address}/nvidia/pytorch:dev-py3"
    try:
        denied = run_invoke("push", "--release", "dev", "--registry", registry.address, env=wrong)
        pushed = run_invoke("push", "--release", "dev", "--registry", registry.address, env=right)
    finally:
        untag_registry(engine, registry.address)  # every tag the push gave, the hash tag too
    found = scan_text("push output", denied.stdout + denied.stderr + pushed.stdout + pushed.stderr, markers)
    found += scan_files(REPO / "build" / "dev", markers)
    figures(suite="secrets", case="dev push output (wrong and right password) and build/dev files", found=len(found))
    assert denied.returncode == 1 and "rejected the credentials" in denied.stderr, denied.stdout + denied.stderr
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert json.loads((REPO / "build" / "dev" / "record.json").read_text())["pushed"][ref]["digest"]
    assert found == []


# A small release on dev's base for the mirror test: the mirror is dev's base under another name, and a
# release of its own name leaves the session's dev image and record alone (dev itself would send its
# 700 MB wheelhouse to the engine four times).
MIRRORED = "mirrored"


def test_an_image_built_from_a_mirror_records_the_mirror_when_reused(engine, tmp_path):
    """`--base-image` builds FROM a mirror of the manifest's base image. The record says so after the build,
    after a reuse by context hash that loads and renders the release, and after one taken on the
    unchanged-release path (build/R/.rendered.json) that does neither; a build without it names the
    manifest's base again."""
    mirror_repo, mirror_tag = "ngcbuild-test.invalid/mirror/debian", "bookworm-slim"
    mirror = f"{mirror_repo}:{mirror_tag}"
    project = ScratchProject(tmp_path / "project")
    project.manifest(MIRRORED, minimal_manifest("a release built from a mirror of its base", torch=None))
    project.constraints(MIRRORED, "pip==26.3\n")
    record_file = project.root / "build" / MIRRORED / "record.json"
    engine.tag("debian:bookworm-slim", mirror_repo, mirror_tag)
    try:
        built = project.invoke("build", "--release", MIRRORED, "--base-image", mirror)
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        first = json.loads(record_file.read_text())
        assert first["base_image"] == mirror

        (project.root / "build" / MIRRORED / ".rendered.json").unlink()  # reuse through load + render
        reused = project.invoke("build", "--release", MIRRORED, "--base-image", mirror)
        assert reused.returncode == 0 and f"skipped the build of {MIRRORED}" in reused.stdout, \
            reused.stdout + reused.stderr
        again = json.loads(record_file.read_text())
        assert again["base_image"] == mirror and again["image_id"] == first["image_id"]

        fast = project.invoke("build", "--release", MIRRORED, "--base-image", mirror)  # the unchanged-release path
        assert fast.returncode == 0 and f"skipped the build of {MIRRORED}" in fast.stdout
        assert json.loads(record_file.read_text())["base_image"] == mirror

        plain = project.invoke("build", "--release", MIRRORED)  # the manifest's own base again
        assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
        own = json.loads(record_file.read_text())
        assert own["base_image"] == "debian:bookworm-slim" and own["image_id"] != first["image_id"]
    finally:
        engine.remove_image(mirror)
        untag_release(engine, MIRRORED)  # its image and stage cache tags
