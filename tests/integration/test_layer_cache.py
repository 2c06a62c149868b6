"""The layer cache shared through a registry, proven across two engines.

Engine A is the shared engine (the private bridge has no NAT, so only A can run `apt-get` and pip
steps); engine B is a private dockerd with nothing in it but the base image, as a fresh runner
would be; the registry is a private one. A builds a small release with dev's three stages (dev's base,
its apt steps, a pip layer of its own) and pushes its cache; B builds it with `--cache-from` and must run
no step at all, ending with A's very image. The mechanism does not depend on the size of the layers, so
the release is small: dev itself would move 2.7 GB through the registry twice (BENCHMARKS.md's cache
figure, `invoke bench --cache-figure`, times dev itself).
"""

from __future__ import annotations

import json
import time

import pytest

from ..conftest import ScratchProject
from ..helpers import minimal_manifest
from .private import untag_registry, untag_release

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def cache_registry(engine, private_registry):
    registry = private_registry()
    yield registry
    untag_registry(engine, registry.address)  # the cache images the shared engine pushed there


@pytest.fixture
def fresh_engine(private_engine):
    """The session's private engine, emptied: nothing in it but the base image, as a fresh runner."""
    return private_engine


# A release of its own name: the build on the shared engine must not move the tags of the session's
# `dev` image (nvcr.io/nvidia/pytorch:dev-py3 and its hash tag), which later tests reuse and check.
NAME = "cachetest"
# dev's base and interpreter (its runtime and builder stages' apt steps, which the shared engine has
# cached from the session's dev build) and two small pip layers instead of PyTorch's.
MANIFEST = minimal_manifest("a small three-stage release for the layer-cache test", torch=None) + (
    "  layers:\n    - [packaging]\n")
CONSTRAINTS = "packaging==25.0\npip==26.3\n"


def _record(project: ScratchProject) -> dict:
    return json.loads((project.root / "build" / NAME / "record.json").read_text())


@pytest.fixture
def shared_engine_images(engine):
    """Removes what the test builds on the shared engine under NAME (its tags and stage cache tags)."""
    yield
    untag_release(engine, NAME)


def test_a_fresh_engine_builds_a_release_from_the_registry_cache_alone(engine, cache_registry, fresh_engine, tmp_path,
                                                                shared_engine_images):
    project = ScratchProject(tmp_path / "project")
    project.manifest(NAME, MANIFEST)
    project.constraints(NAME, CONSTRAINTS)
    built = project.invoke("build", "--release", NAME, "--force", "--cache-to", cache_registry.address)
    assert built.returncode == 0, built.stdout + built.stderr
    on_a = _record(project)
    assert set(on_a["stages"]) == {"runtime", "builder", "final"}
    # the final stage's image is the engine's image of the release (its release image is made where it leaves)
    assert on_a["stages"]["final"] == on_a["image_id"]
    for stage in on_a["stages"]:
        assert f"pushing cache image {cache_registry.address}/nvidia/pytorch-cache:{NAME}-amd64-{stage}" in built.stdout

    started = time.monotonic()
    rebuilt = project.invoke_env({"DOCKER_HOST": fresh_engine.host}, "build", "--release", NAME,
                                 "--cache-from", cache_registry.address)
    elapsed = time.monotonic() - started
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    on_b = _record(project)
    not_from = [(step, instruction) for step, instruction, cached in on_b["step_log"]
                if not cached and not instruction.startswith("FROM ")]
    assert not_from == [], f"steps B ran instead of taking them from the cache: {not_from}"
    assert on_b["cached_steps"] == on_b["steps"] - 3  # every step but the three FROMs
    assert sorted(on_b["cache_from"]) == sorted(
        f"{cache_registry.address}/nvidia/pytorch-cache:{NAME}-amd64-{stage}" for stage in on_a["stages"])

    image_a = engine.inspect_image(on_a["image_id"])
    image_b = fresh_engine.client().inspect_image(on_b["image_id"])
    assert image_b["Id"] == image_a["Id"]  # every step from A's cache: A's image, with the recipe A wrote
    assert image_b["RootFS"]["Layers"] == image_a["RootFS"]["Layers"]
    print(f"\nfresh engine, {NAME} from the registry cache: {elapsed:.1f}s for the whole `invoke build` "
          f"(A built it in {on_a['duration_s']}s, {on_a['cached_steps']}/{on_a['steps']} steps cached there)")


def test_a_missing_cache_image_is_a_message_not_a_failure(cache_registry, fresh_engine, tmp_path):
    """A release the registry holds no cache for: each stage is said to be missing, and the build
    goes on (it fails later only because the private engine is offline, which is not the cache's doing)."""
    project = ScratchProject(tmp_path / "project")
    project.manifest("nocache", MANIFEST)
    project.constraints("nocache", CONSTRAINTS)
    result = project.invoke_env({"DOCKER_HOST": fresh_engine.host}, "build", "--release", "nocache",
                                "--cache-from", cache_registry.address)
    out = result.stdout + result.stderr
    assert "Traceback" not in out
    for stage in ("runtime", "builder", "final"):
        assert f"no cache image {cache_registry.address}/nvidia/pytorch-cache:nocache-amd64-{stage}" in out
    assert "building nocache from" in out  # it went on to build
