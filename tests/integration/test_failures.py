"""Failures are clean: a failing step moves no tag and leaves no containers; bad input exits 2."""

import pytest

from ..helpers import minimal_manifest
from .conftest import containers

pytestmark = pytest.mark.engine

BROKEN_STEP = minimal_manifest("a release whose interpreter pin does not exist", python3_apt="0.0.0-does-not-exist")


def test_failing_step_moves_no_tag_and_leaves_no_containers(engine, dev_build, scratch):
    scratch.copy_release("dev", "broken")
    scratch.manifest("broken", BROKEN_STEP)
    # An older image already holds the tag: it must keep it.
    engine.tag("debian:bookworm-slim", "nvcr.io/nvidia/pytorch", "broken-py3", force=True)
    before_id = engine.inspect_image("nvcr.io/nvidia/pytorch:broken-py3")["Id"]
    before = containers(engine)
    try:
        result = scratch.invoke("build", "--release", "broken")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "failed at step 2/" in result.stderr
        assert "python3=0.0.0-does-not-exist" in result.stderr  # the failing step is named
        assert "last 40 log lines" in result.stderr
        assert "Traceback" not in result.stderr
        assert engine.inspect_image("nvcr.io/nvidia/pytorch:broken-py3")["Id"] == before_id
        assert containers(engine) == before
        assert not (scratch.root / "build" / "broken" / "record.json").exists()
    finally:
        engine.remove_image("nvcr.io/nvidia/pytorch:broken-py3")


def test_bad_manifest_is_one_message_exit_2_and_builds_nothing(engine, scratch):
    scratch.copy_release("dev", "bad")
    text = (scratch.root / "manifests" / "bad.yaml").read_text().replace("summary:", "sumary:")
    scratch.manifest("bad", text)
    before = containers(engine)
    result = scratch.invoke("build", "--release", "bad")
    assert result.returncode == 2
    assert result.stderr.strip() == ("ngcbuild: manifests/bad.yaml: sumary: unknown key (did you mean 'summary'?); "
                                     "expected one of: " + result.stderr.split("expected one of: ", 1)[1].strip())
    assert "Traceback" not in result.stderr
    assert not (scratch.root / "build" / "bad").exists()
    assert containers(engine) == before


def test_no_engine_is_a_clear_message(scratch):
    scratch.copy_release("dev")
    result = scratch.invoke_env({"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, "build", "--release", "dev")
    assert result.returncode == 1
    assert "cannot reach the Docker engine at unix:///nonexistent/docker.sock" in result.stderr
    assert "Traceback" not in result.stderr


def test_other_platform_without_its_base_is_a_clear_error(engine, dev_build, scratch):
    # The amd64 base image is here; it must not stand in for arm64. dev lists amd64 only: without
    # --force-platform the build is refused before anything happens (exit 2, the list named).
    scratch.copy_release("dev")
    before = containers(engine)
    refused = scratch.invoke("build", "--release", "dev", "--platform", "linux/arm64", "--force")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "build.platforms: lists linux/amd64, not --platform linux/arm64" in refused.stderr
    result = scratch.invoke("build", "--release", "dev", "--platform", "linux/arm64", "--force", "--force-platform")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "base image debian:bookworm-slim for linux/arm64 is not here and cannot be pulled" in result.stderr
    assert "invoke base --release dev --platform linux/arm64` makes debian:bookworm-slim-arm64" in result.stderr
    assert "Traceback" not in result.stderr
    assert containers(engine) == before
