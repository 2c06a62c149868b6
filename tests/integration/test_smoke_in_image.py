"""The smoke suite starts in the built `dev` image: staged as `invoke smoke` stages it, collected by
the image's own Python with the locked pytest, the same checks as this machine collects."""

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.smoke.runner import collect_in_image, image_python

from ..conftest import REPO
from ..helpers import collected_here

pytestmark = pytest.mark.engine


def test_the_suite_is_collected_inside_the_dev_image(engine, dev_build, tmp_path):
    project = Project.at(REPO)
    loaded = load_release(project, "dev")
    expected = render_files(project, loaded).files["expected.json"]
    items = collect_in_image(engine, dev_build["record"]["image_id"], expected, loaded.release.python.version,
                             project.build)
    assert items == collected_here("dev", tmp_path), "the image's Python collects other checks than this machine"


def test_a_baseline_image_is_asked_for_its_python(engine, dev_build):
    """--baseline may name any image: its own python3 says which locked pytest to stage."""
    assert image_python(engine, dev_build["record"]["image_id"]) == "3.11"
