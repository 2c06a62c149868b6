"""`dev` built behind a site's mirrors, as issue 55 asks: devpi-server's mirror of PyPI as the index
(`--index-url`) and Debian's apt-cacher-ng as the apt proxy (`--apt-proxy`), both real servers on this
machine's loopback (tests/integration/mirrors.py), torch from the wheelhouse. Proven from the mirrors'
own logs: every pin the image installed from an index was handed out by devpi, and every Debian package
the image holds beyond its base by apt-cacher-ng. Then, with the mirrors stopped, the same build is one
line naming the index that takes no connection, exit 1, nothing built and no tag moved.

On Podman's API (tests/integration/podman_engine.py), which reaches the loopback mirrors with the build's
steps on the host's network as the Docker engine does (built there by hand too: docs/indexes.md), so that
the test runs beside the Docker engine's lane. Built in a copy of the project (the epoch given as the
checkout's) under a registry name of its own (mirrors.test)."""

from __future__ import annotations

import json

import pytest

from ..conftest import ScratchProject, run_command
from .conftest import checkout_epoch
from .mirrors import Mirrors, debian_name, torch_wheelhouse
from .podman_engine import BASE, PODMAN_SOCKET, base_from_docker_or_made, empty, podman_client

pytestmark = [pytest.mark.podman, pytest.mark.mirrors]

REGISTRY = "mirrors.test"


@pytest.fixture(scope="module")
def podman():
    client = podman_client()
    empty(client)
    yield client
    empty(client)


def _packages(engine, image: str) -> dict[str, str]:
    """package -> version (its epoch left out, as the archive's file names do) of what dpkg says is installed.
    Podman sets open-files and process limits this machine may refuse: lowered as the smoke run lowers them."""
    import docker

    from ngcbuild.smoke.run_limits import MOST_ATTEMPTS, Limits

    limits = Limits(values={})
    for _ in range(MOST_ATTEMPTS):
        flags = {"ulimits": limits.host_config_flags()["ulimits"]} if limits.values else {}
        container = engine.create_container(image, entrypoint=["dpkg-query", "-W", "-f=${Package} ${Version}\\n"],
                                            host_config=engine.create_host_config(network_mode="none", **flags))
        try:
            engine.start(container)
            engine.wait(container, timeout=120)
            text = engine.logs(container, stdout=True, stderr=False).decode()
            break
        except docker.errors.APIError as exc:
            if limits.lower(str(exc)) is None:
                raise
        finally:
            engine.remove_container(container, force=True)
    return {name: version.split(":", 1)[-1] for name, version in (line.split(" ", 1) for line in text.splitlines())}


def _tags(engine) -> dict[str, str]:
    return {tag: image["Id"] for image in engine.images() for tag in image.get("RepoTags") or []
            if tag.startswith(f"{REGISTRY}/")}


def test_dev_builds_from_a_pypi_mirror_and_an_apt_cache_alone_and_says_so_when_they_are_down(podman, tmp_path):
    house = torch_wheelhouse()
    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    env = {"SOURCE_DATE_EPOCH": str(checkout_epoch("dev")), "PIP_FIND_LINKS": str(house),
           "DOCKER_HOST": f"unix://{PODMAN_SOCKET}"}
    base_from_docker_or_made(podman, project, env)
    mirrors = Mirrors(tmp_path / "mirrors")
    argv = ("build", "--release", "dev", "--no-cache", "--force", "--registry", REGISTRY,
            "--index-url", mirrors.pypi.url, "--apt-proxy", mirrors.apt.proxy)
    try:
        built = run_command("invoke", *argv, cwd=project.root, env=env, timeout=1800)
        out = built.stdout + built.stderr
        assert built.returncode == 0, f"build through the mirrors failed:\n{out[-5000:]}"
        assert "steps on the host's network (a mirror on its loopback)" in out
        record = json.loads((project.root / "build" / "dev" / "record.json").read_text())

        # pip: every pin but the wheelhouse's came from devpi
        wheels = set(record["wheels"])
        assert {w.split("-")[0] for w in wheels} == {"torch"}, wheels
        pins = [line.split("==") for line in (project.root / "constraints" / "dev.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#")]
        served = {name.lower().replace("_", "-") for name in mirrors.pypi.files_served()}
        for name, version in pins:
            stem = f"{name.lower().replace('_', '-')}-{version}"
            if any(w.lower().replace("_", "-").startswith(stem + "-") for w in wheels):
                continue
            assert any(f.startswith(stem + "-") or f.startswith(stem + ".") for f in served), \
                f"{name}=={version} was not handed out by devpi; it served: {sorted(served)}"

        # apt: every package the image holds beyond its base was delivered by apt-cacher-ng
        debs = {pair for pair in map(debian_name, mirrors.apt.files_served()) if pair}
        gained = set(_packages(podman, record["image_id"]).items()) - set(_packages(podman, BASE).items())
        assert gained, "the image holds no package beyond its base: the check would prove nothing"
        assert gained <= debs, f"installed, not delivered by apt-cacher-ng: {sorted(gained - debs)}"

        # the mirrors down: one line before the engine is asked, nothing built, no tag moved
        mirrors.stop()
        tags = _tags(podman)
        down = run_command("invoke", *argv, cwd=project.root, env=env, timeout=600)
        said = (down.stdout + down.stderr).strip()
        assert down.returncode == 1 and "Traceback" not in said, said[-3000:]
        last = said.splitlines()[-1]
        assert mirrors.pypi.url in last and "takes no connection (connection refused)" in last, last
        assert "building dev" not in said  # nothing was sent to the engine
        assert _tags(podman) == tags
    finally:
        mirrors.stop()
