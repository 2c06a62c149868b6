"""What expected.json tells the GPU checks: the manifest's GPU features and the components in the image."""

import json

from ngcbuild.manifest import load_release
from ngcbuild.project import Project
from ngcbuild.render import render_files

from ..conftest import REPO
from .test_manifest import DEV_CONSTRAINTS, GOOD, error

WITH_GPU = GOOD.replace("pip:\n", "gpu:\n  min_compute_capability: '7.5'\n  features: [mempool]\npip:\n") + """\
  nccl:
    version: 2.28.9
    install: base
"""


def expected_of(scratch, text):
    scratch.manifest("r1", text)
    scratch.constraints("r1", DEV_CONSTRAINTS)
    project = Project.at(scratch.root)
    return json.loads(render_files(project, load_release(project, "r1")).files["expected.json"])


def test_gpu_features_and_components_in_the_image_reach_expected_json(scratch):
    expected = expected_of(scratch, WITH_GPU)
    assert expected["gpu"]["features"] == ["mempool"]
    assert expected["gpu"]["nccl"] == "2.28.9" and expected["gpu"]["min_compute_capability"] == "7.5"
    assert expected["components_in_image"] == ["nccl", "pytorch"]


def test_dev_promises_no_gpu_feature():
    project = Project.at(REPO)
    expected = json.loads(render_files(project, load_release(project, "dev")).files["expected.json"])
    assert expected["gpu"]["features"] == [] and expected["components_in_image"] == ["pytorch"]


def test_an_unknown_gpu_feature_is_an_error(scratch):
    message = error(scratch, WITH_GPU.replace("[mempool]", "[mempools]"))
    assert "gpu.features" in message and "mempool" in message
