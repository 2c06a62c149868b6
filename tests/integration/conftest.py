"""Integration fixtures: a real Docker engine, a real registry on 127.0.0.1, and one `dev` build
shared by every test that needs the image.

When CI=true a missing engine or registry is a failure, never a silent skip.
"""

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest

from ..conftest import REPO, run_command

REGISTRY = os.environ.get("NGCBUILD_TEST_REGISTRY", "127.0.0.1:5000")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _missing(what: str):
    message = f"{what} (start it with `bash .ci/engine`)"
    if IN_CI:
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def engine():
    """The low-level Docker API client; fails in CI, skips elsewhere, when there is no engine."""
    from ngcbuild.core.errors import EngineUnavailable
    from ngcbuild.engine.client import connect

    try:
        return connect()
    except EngineUnavailable as exc:
        _missing(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def registry():
    """HOST:PORT of the local registry."""
    try:
        urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=5).read()
    except OSError as exc:
        _missing(f"no registry at {REGISTRY}: {exc}")
    return REGISTRY


def run_invoke(*args, cwd=REPO, env=None, timeout=3600) -> subprocess.CompletedProcess:
    return run_command("invoke", *args, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture(scope="session")
def marker_ca(tmp_path_factory):
    """A CA bundle that works (the host's bundle) plus a certificate made for this run: its body is a
    marker that must not appear in any layer of the image."""
    directory = tmp_path_factory.mktemp("ca")
    marker = directory / "marker.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=ngcbuild-test-marker", "-keyout", str(directory / "key.pem"),
                    "-out", str(marker)], check=True, capture_output=True)
    host_bundle = Path(os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
                       or "/etc/ssl/certs/ca-certificates.crt")
    bundle = directory / "bundle.pem"
    bundle.write_bytes(host_bundle.read_bytes() + b"\n" + marker.read_bytes())
    body = "".join(line for line in marker.read_text().splitlines() if not line.startswith("-----"))
    return {"bundle": bundle, "marker_lines": [body[i:i + 64] for i in range(0, len(body), 64)]}


@pytest.fixture(scope="session")
def registry_secret(tmp_path_factory):
    """Registry credentials made for this run, present where a careless build could pick them up: the
    NGCBUILD_REGISTRY_* variables and a Docker config (docker-py sends its auths to the engine with
    every build). The secrets scan proves they reach no layer, label, history line, output or log."""
    import base64
    import secrets

    user, password = "ngcbuild-user", "ngcbuild-pw-" + secrets.token_hex(16)
    config = tmp_path_factory.mktemp("docker-config")
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {"ngcbuild-secret.invalid": {"auth": auth}}}))
    env = {"NGCBUILD_REGISTRY_USER": user, "NGCBUILD_REGISTRY_PASSWORD": password, "DOCKER_CONFIG": str(config)}
    return {"user": user, "password": password, "env": env}


@pytest.fixture(scope="session")
def dev_build(engine, marker_ca, registry_secret):
    """`invoke build --release dev` with the marker CA bundle and marker registry credentials in its
    environment, run once for the session."""
    result = run_invoke("build", "--release", "dev", "--force", "--ca-bundle", str(marker_ca["bundle"]),
                        env=registry_secret["env"])
    assert result.returncode == 0, f"build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    return {"result": result, "record": record}


@pytest.fixture(scope="session")
def cuda_dev_build(engine):
    """`invoke build --release cuda-dev --force`, once for the session (test_cuda_dev.py proves the build
    and its smoke run, test_mutants.py plants defects in it); the multi-GB image, its tags and the
    dangling builder layers it left are removed when the session ends."""
    # --force: the build itself is proven here (reuse by context hash is proven with dev)
    result = run_invoke("build", "--release", "cuda-dev", "--force", timeout=5400)
    try:
        assert result.returncode == 0, f"build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        record = json.loads((REPO / "build" / "cuda-dev" / "record.json").read_text())
        yield {"build": result, "record": record}
    finally:
        _remove_cuda_dev_images(engine)


def _remove_cuda_dev_images(engine):
    import docker

    # the release's images, and its stage images under the layer cache's tags (pytorch-cache:cuda-dev-*)
    for repository in ("nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/pytorch-cache"):
        for image in engine.images(name=repository):
            if any(tag.startswith(f"{repository}:cuda-dev-") for tag in image.get("RepoTags") or []):
                try:
                    engine.remove_image(image["Id"], force=True)
                except docker.errors.APIError:
                    pass
    # The builder stage's layers (gigabytes of wheels unpacked) stay as dangling images.
    engine.prune_images(filters={"dangling": True})


@pytest.fixture(scope="session")
def dev_smoke(dev_build):
    result = run_invoke("smoke", "--release", "dev")
    assert result.returncode == 0, f"smoke failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def containers(engine) -> set:
    return {c["Id"] for c in engine.containers(all=True)}
