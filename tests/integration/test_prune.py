"""`invoke prune` against a private engine (it removes images: never run on the shared engine)."""

from __future__ import annotations

import io
import tarfile

import pytest

from ngcbuild.engine.image_build import RELEASE_LABEL
from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL

from ..conftest import ScratchProject
from .conftest import KeptTags

pytestmark = pytest.mark.engine


def _context(dockerfile: str) -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
    data.seek(0)
    return data


def _build(client, base: str, n: int, release: str | None = "pa", tag: str | None = None) -> str:
    """A small image (one RUN: it needs no network) as ngcbuild labels it, or unlabelled."""
    labels = {CONTEXT_HASH_LABEL: f"{n:064x}", RELEASE_LABEL: release} if release else {}
    events = list(client.build(fileobj=_context(f"FROM {base}\nRUN head -c 3000000 /dev/urandom > /blob-{n}\n"),
                               custom_context=True, decode=True, rm=True, forcerm=True, labels=labels, tag=tag))
    ids = [e["aux"]["ID"] for e in events if isinstance(e.get("aux"), dict) and "ID" in e["aux"]]
    assert ids, events
    return ids[-1]


def test_prune_keeps_the_newest_and_what_is_in_use_or_not_ours(private_engine, tmp_path):
    engine, base = private_engine, private_engine.base  # emptied for this test (conftest.py)
    client = engine.client()
    repo = "nvcr.io/nvidia/pytorch"
    old = [_build(client, base, n, tag=f"{repo}:pa-py3-{n:012x}") for n in (1, 2)]
    in_use = _build(client, base, 3, tag=f"{repo}:pa-py3-{3:012x}")
    client.create_container(in_use, command=["true"])
    foreign = _build(client, base, 4, tag=f"{repo}:pa-py3-{4:012x}")
    client.tag(foreign, "someone/else", "mine")
    newest = _build(client, base, 5, tag=f"{repo}:pa-py3")
    cache_stage = _build(client, base, 6, release=None, tag="nvcr.io/nvidia/pytorch-cache:pa-amd64-builder")
    other_release = _build(client, base, 7, release="pb", tag=f"{repo}:pb-py3")
    dangling = _build(client, base, 8, release=None)
    assert client.inspect_image(dangling)["RepoTags"] == []

    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    result = project.invoke_env({"DOCKER_HOST": engine.host}, "prune", "--keep", "1")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out

    present = {image["Id"] for image in client.images(all=True)}
    assert not set(old) & present, out
    assert dangling not in present, out
    for kept in (in_use, foreign, newest, cache_stage, other_release, client.inspect_image(base)["Id"]):
        assert kept in present, out
    assert f"kept {in_use[7:19]}" in out and "a container uses it" in out
    assert "not ngcbuild's: someone/else:mine" in out
    assert "pruned 3 images, freed" in out
    freed_mb = float(out.split("freed ")[1].split(" MB")[0])
    assert freed_mb >= 3 * 3.0  # three 3 MB blobs at least (two old images and the dangling one)

    again = project.invoke_env({"DOCKER_HOST": engine.host}, "prune", "--keep", "1")
    assert "pruned 0 images" in again.stdout, again.stdout + again.stderr


def test_prune_refuses_a_keep_that_is_not_a_number(tmp_path):
    project = ScratchProject(tmp_path / "project")
    result = project.invoke("prune", "--keep", "all")
    assert result.returncode == 2
    assert "--keep 'all': expected a whole number" in result.stderr
    assert "Traceback" not in result.stderr


def test_kept_tags_go_back_and_only_the_images_made_since_are_removed(private_engine):
    """The harness's own clean-up (conftest.KeptTags, used by the dev and cuda-dev builds on the shared
    engine), proven here on the private engine: a release's tags go back to the images they named, the
    images made since that lost their tags are removed, and nobody else's image is touched."""
    client, base = private_engine.client(), private_engine.base
    repo, cache = "nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/pytorch-cache"
    old = _build(client, base, 11, release="kt", tag=f"{repo}:kt-py3")
    client.tag(old, repo, "kt-py3-00000000000b")
    stage = _build(client, base, 12, release=None, tag=f"{cache}:kt-amd64-builder")
    kept = KeptTags(client, "kt")

    new = _build(client, base, 14, release="kt", tag=f"{repo}:kt-py3")  # the tests' build moves the tags
    client.tag(new, repo, "kt-py3-00000000000e")
    new_stage = _build(client, base, 15, release=None, tag=f"{cache}:kt-amd64-builder")
    theirs = _build(client, base, 16, release=None, tag="someone/else:mine")  # made meanwhile by others
    dangling = _build(client, base, 17, release=None)
    kept.restore()

    assert client.inspect_image(f"{repo}:kt-py3")["Id"] == old
    assert client.inspect_image(f"{cache}:kt-amd64-builder")["Id"] == stage
    assert kept.now() == kept.tags
    present = {image["Id"] for image in client.images(all=True)}
    assert new not in present and new_stage not in present
    assert {old, stage, theirs, dangling} <= present
