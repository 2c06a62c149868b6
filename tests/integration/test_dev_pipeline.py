"""README command 1 for real: build, smoke-test and push the `dev` image on a real engine."""

import json
import subprocess
import tarfile

import pytest

from ..conftest import REPO
from .conftest import run_invoke

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
    junit = (REPO / "build" / "dev" / "smoke-junit.xml").read_text()
    assert 'failures="0"' in junit and 'errors="0"' in junit
    assert "no GPU visible to PyTorch 2.13.0+cpu" in junit
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert record["smoke"]["failed"] == 0 and record["smoke"]["passed"] >= 15
    assert record["smoke"]["skipped"] >= 3


def test_require_gpu_turns_skips_into_failures(dev_smoke):
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


def test_ca_bundle_is_in_no_layer_and_no_config(engine, dev_build, marker_ca, tmp_path):
    archive = tmp_path / "image.tar"
    with archive.open("wb") as handle:
        for chunk in engine.get_image(dev_build["record"]["image_id"]):
            handle.write(chunk)
    markers = [line.encode() for line in marker_ca["marker_lines"]]
    scanned = 0
    with tarfile.open(archive) as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            data = outer.extractfile(member).read()
            if member.name.endswith("layer.tar"):
                with tarfile.open(fileobj=__import__("io").BytesIO(data)) as layer:
                    for entry in layer.getmembers():
                        if entry.isfile():
                            content = layer.extractfile(entry).read()
                            assert not any(m in content for m in markers), f"{member.name}: {entry.name}"
                            assert "ngcbuild/ca.pem" not in entry.name
                scanned += 1
            else:  # image config, manifest.json, repositories
                assert not any(m in data for m in markers), member.name
    assert scanned == dev_build["record"]["layers"]
    history = json.dumps(engine.history(dev_build["record"]["image_id"]))
    assert "ca.pem" not in history and "BEGIN CERTIFICATE" not in history
