"""dev/engine_leftovers.py's choice (a recorded engine's answers; the removal itself ran against the real engine by
hand, and runs at the end of every `invoke test`): what the run tagged under the test registry's name is untagged,
what it made or pulled that no tag holds is removed, and whatever was there before stays."""

import io

import docker
from dev import engine_leftovers
from dev.engine_leftovers import TEST_REGISTRY, EngineImages


class _Engine:
    def __init__(self, images):
        self.images_ = {image["Id"]: image for image in images}
        self.removed = []

    def images(self, all=False):  # noqa: A002 - docker-py's name
        return [dict(image) for image in self.images_.values()]

    def remove_image(self, ref):
        self.removed.append(ref)
        if ref == "in-use":
            raise docker.errors.APIError("conflict: used by a container")
        for image in self.images_.values():
            if ref in image["RepoTags"]:
                image["RepoTags"] = [tag for tag in image["RepoTags"] if tag != ref]
                return
        del self.images_[ref]


def test_only_what_the_run_left_goes(monkeypatch):
    engine = _Engine([
        {"Id": "base", "RepoTags": ["debian:bookworm-slim"], "Size": 1},
        {"Id": "old-dangling", "RepoTags": [], "Size": 1},  # someone's, from before the run
        {"Id": "old-pushed", "RepoTags": [f"{TEST_REGISTRY}/nvidia/pytorch:old"], "Size": 1},
        {"Id": "session-dev", "RepoTags": [f"{TEST_REGISTRY}/nvidia/pytorch:dev-py3"], "Size": 2},
        {"Id": "pulled", "RepoTags": ["<none>:<none>"], "Size": 3},
        {"Id": "kept-by-tag", "RepoTags": ["nvcr.io/nvidia/pytorch:mine"], "Size": 4},
        {"Id": "in-use", "RepoTags": [], "Size": 5},
    ])
    monkeypatch.setattr(engine_leftovers, "_client", lambda: engine)
    before = EngineImages(frozenset({"base", "old-dangling", "old-pushed"}),
                          frozenset({"debian:bookworm-slim", f"{TEST_REGISTRY}/nvidia/pytorch:old"}))
    out = io.StringIO()
    engine_leftovers.remove_left(before, out)
    assert set(engine.images_) == {"base", "old-dangling", "old-pushed", "kept-by-tag", "in-use"}
    assert engine.images_["old-pushed"]["RepoTags"] == [f"{TEST_REGISTRY}/nvidia/pytorch:old"]
    assert "removed 2 images the run left without a tag" in out.getvalue()


def test_no_engine_no_removal(monkeypatch):
    def gone():
        raise docker.errors.DockerException("no engine")

    monkeypatch.setattr(engine_leftovers, "_client", gone)
    assert engine_leftovers.snapshot() is None
    out = io.StringIO()
    engine_leftovers.remove_left(None, out)
    assert out.getvalue() == ""
