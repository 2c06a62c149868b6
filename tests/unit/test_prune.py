"""Which images `invoke prune` picks (pure logic on inspected images)."""

from ngcbuild.engine.image_build import RELEASE_LABEL
from ngcbuild.engine.prune import ours, to_remove
from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL


def _image(n: int, release: str | None, created: str, arch: str = "amd64") -> dict:
    labels = {CONTEXT_HASH_LABEL: str(n), RELEASE_LABEL: release} if release else {}
    return {"Id": f"sha256:{n:064x}", "Created": created, "Os": "linux", "Architecture": arch,
            "Config": {"Labels": labels}}


def test_the_newest_per_release_and_platform_are_kept():
    images = [_image(1, "dev", "2026-01-01"), _image(2, "dev", "2026-01-03"), _image(3, "dev", "2026-01-02"),
              _image(4, "dev", "2026-01-01", arch="arm64"), _image(5, "cuda-dev", "2025-01-01"),
              _image(6, None, "2020-01-01")]
    removed = {image["Id"][-1] for image in to_remove(images, keep=1)}
    assert removed == {"1", "3"}  # arm64 and cuda-dev keep their only one; unlabelled is not ours
    assert {image["Id"][-1] for image in to_remove(images, keep=0)} == {"1", "2", "3", "4", "5"}


def test_only_the_release_and_cache_repositories_are_ngcbuild_tags():
    repositories = {"nvidia/pytorch", "nvidia/pytorch-cache"}
    assert ours("nvcr.io/nvidia/pytorch:dev-py3", repositories)
    assert ours("localhost:5000/nvidia/pytorch-cache:dev-amd64-builder", repositories)
    assert not ours("someone/else:mine", repositories)
    assert not ours("nvcr.io/nvidia/pytorch-extra:dev-py3", repositories)
    assert not ours("debian:bookworm-slim", repositories)
    assert not ours("<none>:<none>", repositories)  # what old engines list for an untagged image
    assert not ours("nvidia/pytorch:dev-py3", repositories)  # Docker Hub's, not a registry of ours
