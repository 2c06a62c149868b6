"""The registry layer cache's names (pure logic; the two-engine proof is tests/integration/test_layer_cache.py)."""

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.names import ImageNames
from ngcbuild.core.project import Project
from ngcbuild.engine.events import stage_names
from ngcbuild.engine.layer_cache import cache_repository, cache_tag
from ngcbuild.engine.options import options_from
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_release

from ..conftest import REPO


@pytest.fixture(scope="module")
def dev():
    return ImageNames.of(load_release(Project.at(REPO), "dev").release)


def test_stage_names_follow_the_rendered_dockerfile(dev):
    dockerfile = render_release(Project.at(REPO), "dev").files["Dockerfile"].decode()
    assert stage_names(dockerfile) == ["runtime", "builder", "final"]


def test_cache_tags_live_in_a_repository_of_their_own(dev):
    repository = cache_repository("localhost:5000", dev)
    assert repository == "localhost:5000/nvidia/pytorch-cache"
    assert repository != f"localhost:5000/{dev.repository_path}"
    assert cache_tag(dev, "linux/arm64", "builder") == "dev-arm64-builder"
    # never a release tag, even for the final stage
    assert cache_tag(dev, "linux/amd64", "final") != dev.tag


@pytest.mark.parametrize("option", ["cache_from", "cache_to"])
@pytest.mark.parametrize("value", ["localhost:5000/nvidia", "/"])
def test_a_cache_registry_must_be_a_host(option, value):
    with pytest.raises(UserError, match=f"--{option.replace('_', '-')}: "):
        options_from(None, None, None, False, {}, **{option: value})


@pytest.mark.parametrize("registry, reuse_from, tags, looked_in", [
    (None, None, "nvcr.io", None),  # no registry given: this engine only (nvcr.io names the tags)
    ("localhost:5000", None, "localhost:5000", "localhost:5000"),  # what --registry always meant: both
    ("localhost:5000", "local", "localhost:5000", None),  # tags for a registry never asked
    ("nvcr.io", "localhost:5000", "nvcr.io", "localhost:5000"),  # looked for in a mirror, named for nvcr.io
    (None, "localhost:5000", "nvcr.io", "localhost:5000"),
])
def test_the_registry_of_the_tags_and_the_one_looked_in_are_two_options(registry, reuse_from, tags, looked_in):
    options = options_from(registry, None, None, False, {}, reuse_from=reuse_from)
    assert (options.registry, options.reuse_from) == (tags, looked_in)
    with pytest.raises(UserError, match="--reuse-from: "):
        options_from(registry, None, None, False, {}, reuse_from="http://localhost:5000")
