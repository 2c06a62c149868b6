"""dev's pipeline end to end on Podman, through its Docker-compatible API service (`podman system service`,
as `.ci/engine` starts it on a socket of its own; docs/engines.md): the base (the Docker engine's, else made
there), a cold build (buildah
behind the API; nothing saved or loaded back), the smoke suite with the limits Podman may set, ngcbuild's
own push of the release image made from Podman's save (each layer a file named by its diff id) to a
registry of the test's own, read back by skopeo, and the skip by context hash; then the same copy built on the
Docker 20.10 (a dockerd of the test's own) and pushed to the same registry: one release image, nothing sent.
It runs beside the engine's lane."""

import hashlib
import json
import re
import subprocess

import pytest

from ngcbuild.image.recipe import RECIPE_LABEL

from ..conftest import REPO
from .conftest import checkout_epoch
from .podman_engine import PODMAN_SOCKET, base_from_docker_or_made, empty, podman_client

pytestmark = pytest.mark.podman


@pytest.fixture(scope="module")
def podman():
    """Podman's API, emptied of images (a fresh runner's: the build is cold); fails in CI, skips elsewhere,
    where no Podman answers."""
    client = podman_client()
    empty(client)
    yield client
    empty(client)  # gigabytes of layers: nothing of the test's stays on the machine


def test_dev_is_built_smoked_and_pushed_on_podman(podman, scratch, private_registry_of_its_own):
    scratch.copy_release("dev")
    # one epoch given to both engines' builds (the copy has no git): the base each holds is the same one
    epoch = {"SOURCE_DATE_EPOCH": str(checkout_epoch("dev"))}
    env = {"DOCKER_HOST": f"unix://{PODMAN_SOCKET}", **epoch}

    base_from_docker_or_made(podman, scratch, env)

    built = scratch.invoke_env(env, "build", "--release", "dev", timeout=1800)
    assert built.returncode == 0, built.stdout[-6000:] + built.stderr[-3000:]
    record = json.loads((scratch.root / "build" / "dev" / "record.json").read_text())
    image_id = record["image_id"]
    assert podman.inspect_image("nvcr.io/nvidia/pytorch:dev-py3")["Id"] == image_id
    labels = podman.inspect_image(image_id)["Config"]["Labels"]
    # the image buildah made, as it made it (nothing saved or loaded back by the build), with its recipe
    assert RECIPE_LABEL in labels and "org.opencontainers.image.created" not in labels, labels

    smoked = scratch.invoke_env(env, "smoke", "--release", "dev", timeout=1200)
    assert smoked.returncode == 0, smoked.stdout[-6000:] + smoked.stderr[-3000:]
    assert " 0 failed, 0 errors" in smoked.stdout, smoked.stdout[-3000:]
    assert "Traceback" not in smoked.stdout + smoked.stderr

    host = private_registry_of_its_own.address
    pushed = scratch.invoke_env(env, "push", "--release", "dev", "--registry", host, timeout=1200)
    assert pushed.returncode == 0, pushed.stdout[-6000:] + pushed.stderr[-3000:]
    digest = json.loads((scratch.root / "build" / "dev" / "record.json").read_text())["pushed"][
        f"{host}/nvidia/pytorch:dev-py3"]["digest"]
    read_back = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--raw",
                                f"docker://{host}/nvidia/pytorch:dev-py3"], capture_output=True, timeout=120)
    assert read_back.returncode == 0, read_back.stderr
    assert "sha256:" + hashlib.sha256(read_back.stdout).hexdigest() == digest
    config = json.loads(read_back.stdout)["config"]["digest"]
    release = json.loads((scratch.root / "build" / "dev" / "record.json").read_text())["pushed"][
        f"{host}/nvidia/pytorch:dev-py3"]["image_id"]
    assert config == release != image_id  # the release image made from the one Podman holds and the suite smoked
    assert "release image sha256:" in pushed.stdout and "layers rewritten" in pushed.stdout, pushed.stdout[-3000:]
    # what the run made on Podman, kept beside the run's other outputs (build/tests/, never a project file):
    # the image id against the Docker engine's dev (build/dev/record.json) says whether the two engines
    # made the same release image
    (REPO / "build" / "tests").mkdir(parents=True, exist_ok=True)
    (REPO / "build" / "tests" / "podman-dev.json").write_text(json.dumps(
        {"podman": _facts(podman, image_id), "digest": digest, "release_image_id": release,
         "docker": _docker_dev_facts()}, indent=1))

    again = scratch.invoke_env(env, "build", "--release", "dev", timeout=600)
    assert again.returncode == 0 and "already built locally" in again.stdout, again.stdout[-3000:]

    _docker_makes_the_same_release_image(podman, scratch, epoch, host, digest, release)


def _docker_makes_the_same_release_image(podman, scratch, epoch: dict, host: str, digest: str, release: str) -> None:
    """The copy built on Docker 20.10 (a dockerd of the test's own, online, holding only the base Podman built on:
    the shared engine's containers are other tests' to count), then pushed to the registry Podman's push filled:
    the same manifest and release image, every layer found there (docs/engines.md: one build, one release image)."""
    from .podman_engine import BASE
    from .private import PrivateEngine

    engine = PrivateEngine(online=True)
    try:
        engine.start()
        engine.load_image(podman, BASE)
        env = {"DOCKER_HOST": engine.host}
        built = scratch.invoke_env({**env, **epoch}, "build", "--release", "dev", "--force", timeout=1800)
        assert built.returncode == 0, built.stdout[-6000:] + built.stderr[-3000:]
        pushed = scratch.invoke_env(env, "push", "--release", "dev", "--registry", host, timeout=1200)
        assert pushed.returncode == 0, pushed.stdout[-6000:] + pushed.stderr[-3000:]
        entry = json.loads((scratch.root / "build" / "dev" / "record.json").read_text())["pushed"][
            f"{host}/nvidia/pytorch:dev-py3"]
        assert (entry["digest"], entry["image_id"]) == (digest, release), pushed.stdout[-3000:]
        assert re.search(r"\b0 sent\b", pushed.stdout) or "holds this image already" in pushed.stdout, \
            pushed.stdout[-3000:]
    finally:
        engine.close()


def _facts(client, image: str) -> dict:
    """What says whether two engines made the same release image: its id, its layers, its context."""
    inspected = client.inspect_image(image)
    return {"image_id": inspected["Id"], "layers": inspected["RootFS"]["Layers"],
            "context": (inspected["Config"].get("Labels") or {}).get("io.ngcbuild.context.sha256")}


def _docker_dev_facts() -> dict | None:
    """The Docker engine's dev of this moment, if it has one (nothing is asserted of it: a record)."""
    import docker

    try:
        return _facts(docker.APIClient(timeout=60), "nvcr.io/nvidia/pytorch:dev-py3")
    except docker.errors.DockerException:
        return None


@pytest.fixture
def private_registry_of_its_own():
    from .private import private_registries

    with private_registries("own") as made:
        yield made["own"]
