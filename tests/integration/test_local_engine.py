"""The standard-library client of the local engine (engine/local_engine.py) against the real engine:
it must read and tag images exactly as the Docker SDK does, since the unchanged-release path records
what it reads."""

import contextlib

import docker
import pytest

from ngcbuild.engine.local_engine import EngineReplied, LocalEngine
from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL

pytestmark = pytest.mark.engine


@pytest.fixture()
def local(engine):
    found = LocalEngine.for_environment()
    if found is None:
        pytest.skip("DOCKER_HOST is not a unix socket: the SDK is the client here")
    return found.connect()


def test_it_reads_images_as_the_sdk_does(engine, local, dev_build):
    record = dev_build["record"]
    tag = next(t for t in record["tags"] if t.endswith(record["context_sha256"][:12]))
    assert local.api_version == engine.api_version
    assert local.inspect_image(tag) == engine.inspect_image(tag)
    assert local.inspect_image(record["image_id"])["Id"] == record["image_id"]
    for filters in ({"reference": tag}, {"label": f"{CONTEXT_HASH_LABEL}={record['context_sha256']}"},
                    {"label": [CONTEXT_HASH_LABEL, "io.ngcbuild.release=dev"]}):
        # as sets: the engine lists images newest first, and images of the same second in no fixed order
        mine = sorted(image["Id"] for image in local.images(filters=filters))
        assert mine == sorted(image["Id"] for image in engine.images(filters=filters)) and record["image_id"] in mine


def test_it_tags_and_says_when_an_image_is_missing(engine, local, dev_build):
    image = dev_build["record"]["image_id"]
    repository = "ngcbuild-test.invalid/local-engine"
    try:
        assert local.tag(image, repository, "t1") is True
        assert engine.inspect_image(f"{repository}:t1")["Id"] == image
        assert local.tag(image, repository, "t1", force=True) is True  # again: moved onto itself
    finally:
        with contextlib.suppress(docker.errors.APIError):
            engine.remove_image(f"{repository}:t1")
    with pytest.raises(EngineReplied) as missing:
        local.inspect_image(f"{repository}:never-built")
    assert missing.value.status == 404 and "no such image" in str(missing.value).lower()
    assert local.images(filters={"reference": f"{repository}:never-built"}) == []
