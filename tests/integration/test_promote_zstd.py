"""`promote --zstd` against real registries (Debian's docker-registry, two of the test's own), read back by
real tools: an image of two layers made by skopeo from a docker-archive (its gzip is Go's, not ngcbuild's) and
pushed to a staging registry, attested there, promoted to a release registry with its zstd variant; skopeo reads
the variant back (an OCI manifest of the same config, zstd layers whose tars are the config's diff ids), Podman
pulls both tags into a store of the test's own (never the Podman service's) and holds one image for both, and a
second promote sends nothing. Needs no engine: docker-registry, skopeo and the podman CLI on the host."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
import zstandard
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ngcbuild.registry.client import Registry
from ngcbuild.supply import attachments
from ngcbuild.supply.provenance import PREDICATE_TYPE
from ngcbuild.supply.signing import sign

from ..conftest import fail_in_ci_else_skip
from ..corpus.fakes import statement

pytestmark = pytest.mark.registry
REPOSITORY = "nvidia/pytorch"
TOOLS = ("docker-registry", "skopeo", "podman")


@pytest.fixture(scope="module")
def registries():
    from .private import private_registries

    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        fail_in_ci_else_skip(f"{', '.join(missing)} not installed", "`bash .ci/engine` installs them")
    with private_registries("staging", "release") as made:
        yield made


def _tar(files: dict[str, bytes]) -> bytes:
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(body), 1_700_000_000, 0o644
            tar.addfile(info, io.BytesIO(body))
    return layer.getvalue()


TARS = [_tar({"etc/os-release": b"NAME=zstd-test\n", "usr/share/doc/a.txt": b"text of a layer\n" * 20_000}),
        _tar({"opt/b.bin": bytes(range(256)) * 2_000, "opt/c.txt": b"another layer's words\n" * 5_000})]


def _docker_archive(path: Path) -> bytes:
    """A docker-archive (as `docker save` writes one) of an image of TARS: its config."""
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/usr/bin"]},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(t).hexdigest()
                                                                   for t in TARS]}}).encode()
    with tarfile.open(path, "w") as archive:
        entries = [(f"{n}/layer.tar", t) for n, t in enumerate(TARS)] + [("config.json", config), (
            "manifest.json", json.dumps([{"Config": "config.json", "RepoTags": ["x/y:z"],
                                          "Layers": [f"{n}/layer.tar" for n in range(len(TARS))]}]).encode())]
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return config


def _attest(host: str, digest: str, private) -> None:
    """A provenance of `digest` signed with `private`, attached beside it (as `invoke attest` lays it out)."""
    registry = Registry(host)
    payload = json.dumps(statement(digest)).encode()
    attachments.push(registry, REPOSITORY, registry.manifest(REPOSITORY, digest), [
        ("provenance", sign(payload, private), {attachments.PREDICATE_ANNOTATION: PREDICATE_TYPE})])


def _sent(registry) -> list[str]:
    """The blob uploads and tag writes the registry logged so far (its access log)."""
    lines = registry.log.read_text(errors="replace").splitlines()
    return [line for line in lines if "response completed" in line and (
        ("http.request.method=POST" in line and "/blobs/uploads/" in line)
        or ("http.request.method=PUT" in line and "/manifests/dev-py3-zstd" in line))]


def _podman(store: Path, *args: str) -> subprocess.CompletedProcess:
    """podman with a store of its own (root, runroot, tmpdir under `store`): never the Podman service's."""
    return subprocess.run(["podman", "--root", str(store / "root"), "--runroot", str(store / "run"), "--tmpdir",
                           str(store / "tmp"), "--events-backend", "none", *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_promote_makes_the_zstd_variant_podman_pulls_it_and_a_second_promote_sends_nothing(
        registries, scratch, tmp_path):
    staging, release = registries["staging"].address, registries["release"].address
    config = _docker_archive(tmp_path / "image.tar")
    copied = subprocess.run(["skopeo", "copy", "--quiet", "--format", "v2s2", "--dest-tls-verify=false",
                             f"docker-archive:{tmp_path / 'image.tar'}", f"docker://{staging}/{REPOSITORY}:dev-py3"],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert copied.returncode == 0, copied.stderr
    digest = Registry(staging).digest(REPOSITORY, "dev-py3")
    image_id = "sha256:" + hashlib.sha256(config).hexdigest()

    scratch.copy_release("dev")
    private = Ed25519PrivateKey.generate()
    (scratch.root / "k.pub").write_bytes(private.public_key().public_bytes(Encoding.PEM,
                                                                            PublicFormat.SubjectPublicKeyInfo))
    _attest(staging, digest, private)
    record = scratch.root / "build" / "dev" / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({
        "release": "dev", "platform": "linux/amd64", "image_id": image_id, "context_sha256": "0" * 64, "tags": [],
        "pushed": {f"{staging}/{REPOSITORY}:dev-py3": {"digest": digest, "registry": staging,
                                                      "at": "2026-12-01T00:00:00Z"}},
        "smoke": {"passed": 3, "failed": 0, "errors": 0, "skipped": 0, "exit_code": 0, "image_id": image_id,
                  "at": "2026-12-01T00:00:00Z"}}))
    argv = ("promote", "--release", "dev", "--from", staging, "--to", release, "--trusted-key", "k.pub", "--zstd")

    promoted = scratch.invoke(*argv, timeout=300)
    assert promoted.returncode == 0, promoted.stdout[-3000:] + promoted.stderr[-3000:]
    assert "2 blob(s) sent, 0 already in the registry" in promoted.stdout, promoted.stdout
    entry = json.loads(record.read_text())["promoted"][f"{release}/{REPOSITORY}:dev-py3"]
    variant = entry["zstd"]
    assert entry["digest"] == digest and variant["made_from"] == digest and variant["tag"] == "dev-py3-zstd"
    assert Registry(release).digest(REPOSITORY, "dev-py3-zstd") == variant["digest"]

    # skopeo reads it back: an OCI manifest of the very config, each layer zstd holding the tar of its diff id
    raw = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                          f"docker://{release}/{REPOSITORY}:dev-py3-zstd"], capture_output=True, timeout=60)
    assert raw.returncode == 0, raw.stderr
    assert "sha256:" + hashlib.sha256(raw.stdout).hexdigest() == variant["digest"]
    document = json.loads(raw.stdout)
    assert document["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert document["config"] == {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": image_id,
                                  "size": len(config)}
    assert [layer["mediaType"] for layer in document["layers"]] == ["application/vnd.oci.image.layer.v1.tar+zstd"] * 2
    for layer, tar in zip(document["layers"], TARS, strict=True):
        blob = Registry(release).blob(REPOSITORY, layer["digest"], layer["size"])
        assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob)).read() == tar

    # Podman pulls both tags, into a store of the test's own, as one image (the config's id)
    store = Path(tempfile.mkdtemp(prefix="ngcbuild-podman-", dir="/tmp"))  # a runroot has at most 50 characters
    try:
        for tag in ("dev-py3", "dev-py3-zstd"):
            pulled = _podman(store, "pull", "--quiet", "--tls-verify=false", f"{release}/{REPOSITORY}:{tag}")
            assert pulled.returncode == 0, pulled.stderr
            assert pulled.stdout.strip() == image_id.removeprefix("sha256:"), (tag, pulled.stdout)
        listed = _podman(store, "images", "--format", "{{.Tag}} {{.ID}}")
        assert sorted(listed.stdout.strip().splitlines()) == [f"dev-py3 {image_id[7:19]}",
                                                              f"dev-py3-zstd {image_id[7:19]}"]
    finally:
        _podman(store, "rmi", "--all", "--force")
        shutil.rmtree(store, ignore_errors=True)

    # again: the record names the variant, the tag serves it whole: nothing read again, nothing sent
    sent = _sent(registries["release"])
    assert len([line for line in sent if "manifests/dev-py3-zstd" in line]) == 1, sent  # the log says what is sent
    again = scratch.invoke(*argv, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "holds the zstd variant already" in again.stdout and "nothing read or sent" in again.stdout
    assert _sent(registries["release"]) == sent
    assert json.loads(record.read_text())["promoted"][f"{release}/{REPOSITORY}:dev-py3"]["zstd"] == variant
