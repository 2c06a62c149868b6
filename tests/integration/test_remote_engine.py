"""`--engine URL`: a build on an engine reached over TCP with TLS certificates made by the test
(a private dockerd listening on a loopback port, `--tlsverify`): the context is sent, the log
streams, the image and its tags land there, and a failed build's containers are removed there."""

from __future__ import annotations

import pytest

from ..conftest import ScratchProject
from ..helpers import minimal_manifest
from .private import make_certificates

pytestmark = pytest.mark.engine

MANIFEST = minimal_manifest("a tiny release for the remote-engine test", torch=None)


@pytest.fixture
def tls_engine(private_engine):
    """The session's private engine (emptied), through its TCP listener with TLS: (engine, URL, certificates)."""
    url, certs = private_engine.tls
    return private_engine, url, certs


@pytest.fixture
def project(tmp_path) -> ScratchProject:
    project = ScratchProject(tmp_path / "project")
    for name in ("remote", "remotefail"):
        project.manifest(name, MANIFEST)
        project.constraints(name, "pip==26.3\n")
    return project


def _dockerfile(project: ScratchProject, run: str) -> None:
    (project.root / "templates" / "image" / "Dockerfile.j2").write_text(
        f"FROM {{{{ release.base.image }}}}\nRUN {run}\nLABEL io.ngcbuild.test.release=\"{{{{ release.release }}}}\"\n")


def test_a_build_over_tcp_with_tls_lands_on_that_engine(tls_engine, project):
    private, url, certs = tls_engine
    # DOCKER_HOST names an engine that is not there: --engine must win over it
    env = {"DOCKER_HOST": "unix:///nonexistent.sock", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certs),
           "PIP_FIND_LINKS": ""}
    _dockerfile(project, "echo remote-step-ran")
    built = project.invoke_env(env, "build", "--release", "remote", "--engine", url, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "] RUN echo remote-step-ran" in built.stdout and "    remote-step-ran" in built.stdout
    client = private.client()
    assert client.inspect_image("nvcr.io/nvidia/pytorch:remote-py3")["Config"]["Labels"][
        "io.ngcbuild.test.release"] == "remote"

    _dockerfile(project, "echo about-to-fail && exit 3")
    failed = project.invoke_env(env, "build", "--release", "remotefail", "--engine", url, timeout=600)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "build of remotefail failed at step 2/" in failed.stderr
    assert client.containers(all=True) == []  # its intermediate container was removed on that engine


@pytest.mark.parametrize("how", ["no-tls", "another-ca"])
def test_tls_that_does_not_fit_is_a_clear_message(tls_engine, project, tmp_path, how):
    _, url, _ = tls_engine
    env = {"DOCKER_TLS_VERIFY": "", "DOCKER_CERT_PATH": ""}
    if how == "another-ca":
        env = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(make_certificates(tmp_path / "other", "other-ca"))}
    result = project.invoke_env(env, "prune", "--keep", "5", "--engine", url, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"cannot reach the Docker engine at {url}" in result.stderr
    assert "TLS" in result.stderr, result.stderr
