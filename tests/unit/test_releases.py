"""The NGC release manifests: what they state, where it comes from, and how archived releases and
incomplete manifests are told apart."""

import re

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release, release_names
from ngcbuild.render.context import render_files

from ..conftest import REPO

PROJECT = Project.at(REPO)
GPU_RELEASES = ("20.02", "20.12", "25.12")
ARCHIVED = ("19.08", "19.09", "19.10", "19.11", "19.12", "20.01", "20.03", "20.06", "20.07", "20.08", "20.09",
            "20.10", "20.11")


def release(name):
    return load_release(PROJECT, name).release


def test_the_archived_line_is_complete_and_archived():
    names = set(release_names(PROJECT))
    assert set(ARCHIVED) <= names
    assert all(release(name).status == "archived" for name in ARCHIVED)


@pytest.mark.parametrize("name", ARCHIVED)
def test_render_refuses_an_archived_release(name):
    with pytest.raises(UserError) as caught:
        render_files(PROJECT, load_release(PROJECT, name))
    assert f"release {name} is archived" in str(caught.value)


def test_archived_releases_keep_the_versions_table():
    """Ubuntu, CUDA, PyTorch and TensorRT of the seed's table. A merged (row-spanning) cell is
    NVIDIA's value for every row it spans, and the manifest says which cell it read; what the
    table does not give stays unknown."""
    assert release("20.11").os.version == "18.04"
    assert release("20.11").components["cuda"].version == "11.1.0"
    assert release("20.09").components["tensorrt"].version == "7.1.3"
    assert release("19.10").components["pytorch"].version == "1.3.0a0+24ae9b5"
    cuda = release("19.08").components["cuda"]  # the CUDA cell of 19.10 spans 19.09 and 19.08
    assert (cuda.version, cuda.provenance) == ("10.1.243", "nvidia") and "merged cell" in cuda.source
    assert (release("19.08").os.version, release("19.08").os.provenance) == ("18.04", "nvidia")
    assert release("19.08").python is None and "cudnn" not in release("19.08").components  # not invented


@pytest.mark.parametrize("name", GPU_RELEASES)
def test_gpu_releases_are_buildable_and_say_where_each_value_comes_from(name):
    r = release(name)
    assert r.status == "buildable"
    assert all(c.source for c in r.components.values()), [n for n, c in r.components.items() if not c.source]
    assert r.gpu.cuda_arch_list and r.components["pytorch"].install == "source"


def test_the_facts_of_the_seeds():
    r = release("20.12")
    versions = {name: c.version for name, c in r.components.items()}
    assert versions | {"cuda": "11.1.1", "cublas": "11.3.0", "cudnn": "8.0.5", "nccl": "2.8.3",
                       "openmpi": "4.0.5", "tensorrt": "7.2.2", "dali": "0.28.0", "magma": "2.5.2",
                       "nsight_compute": "2020.2.1.8", "nsight_systems": "2020.3.4.32",
                       "tensorboard": "1.15.0+nv20.11", "dlprof": "0.18.0"} == versions
    assert r.components["jupyter"].packages["jupyterlab"] == "1.2.0"
    assert r.notes.driver.minimum == "455 or later" and r.notes.gpu_requirements.families[-1] == "NVIDIA Ampere"
    assert len(r.notes.tensor_core_examples) == 11
    assert (r.os.version, r.python.version) == ("20.04", "3.8")
    r = release("25.12")
    assert r.components["pytorch"].version == "2.10.0a0+b4e4ee81d3"
    assert r.components["pytorch"].provenance == "nvidia"
    assert r.gpu.cuda_arch_list == "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
    assert r.pip.constraint_file and not release("20.12").pip.constraint_file


def test_the_20_02_pytorch_conflict_is_recorded_with_the_choice():
    r = release("20.02")
    assert r.components["pytorch"].version == "1.5.0a0+3bbb36e"
    (conflict,) = r.notes.conflicts
    assert "1.4.0a0+a5b4d78" in conflict.text and "We use 1.5.0a0+3bbb36e" in conflict.text


BUILDABLE = """\
summary: a GPU release
base: {image: 'nvidia/cuda:11.1.1-cudnn8-devel-ubuntu20.04'}
os: {name: Ubuntu, version: '20.04'}
pip: {constraint_file: false}
python: {version: '3.8', install: conda, site_packages: /opt/conda/lib/python3.8/site-packages,
         conda: {installer: 'https://repo.anaconda.com/miniconda/Miniconda3-py38_4.9.2-Linux-x86_64.sh'}}
"""


def error(scratch, text):
    scratch.manifest("r1", text)
    scratch.constraints("r1", "numpy==1.19.4\n")
    with pytest.raises(UserError) as caught:
        load_release(Project.at(scratch.root), "r1")
    return str(caught.value)


def test_an_archived_release_needs_only_what_is_known(scratch):
    scratch.manifest("r1", "status: archived\nsummary: old\ncomponents:\n  pytorch: {version: 1.2.0}\n")
    loaded = load_release(Project.at(scratch.root), "r1")
    assert loaded.release.python is None and loaded.constraints is None


@pytest.mark.parametrize("drop,expected", [
    ("python", "r1.yaml: python: required in a buildable release (or mark it status: archived)"),
    ("os", "r1.yaml: os: required in a buildable release (or mark it status: archived)"),
])
def test_a_buildable_release_needs_python_and_os(scratch, drop, expected):
    # each top-level key with its continuation lines
    blocks = BUILDABLE.replace("\n         ", " ").splitlines()
    text = "".join(f"{block}\n" for block in blocks if not block.startswith(f"{drop}:"))
    assert expected in error(scratch, text)


def test_a_buildable_release_needs_the_python_install(scratch):
    text = BUILDABLE.replace("install: conda, ", "")
    assert "python.install is required in a buildable release" in error(scratch, text)
    text = BUILDABLE.split("python:")[0] + "python: {version: '3.8', install: conda, site_packages: /opt/x}\n"
    assert "python.install: conda needs python.conda.installer" in error(scratch, text)


@pytest.mark.parametrize("component,expected", [
    ("nccl: {version: 2.8.3, install: apt}", "components.nccl: install: apt needs packages (name: version)"),
    ("dlprof: {version: 0.18.0, install: none}", "components.dlprof: install: none needs a reason"),
    ("apex: {version: '0.1', install: source, repo: 'https://github.com/NVIDIA/apex'}",
     "components.apex: install: source needs repo and ref, or url"),
    ("apex: {version: '0.1', install: source, url: 'https://x.org/a.tgz', options: ['--x; rm -rf /']}",
     "components.apex.options.0: '--x; rm -rf /' is not an option"),
])
def test_each_install_method_needs_its_pins(scratch, component, expected):
    assert expected in error(scratch, BUILDABLE + f"components:\n  {component}\n")


def test_the_readme_names_each_release_s_pytorch_as_its_manifest_does():
    """README's "PyTorch X (YY.MM)" mentions must agree with the manifest (it once said 2.11 for 25.12)."""
    text = (REPO / "README.md").read_text()
    mentions = re.findall(r"PyTorch (\d[\w.+]*) \((\d\d\.\d\d)\)", text.replace("\n", " "))
    assert mentions
    for version, name in mentions:
        assert release(name).components["pytorch"].version.startswith(version), (name, version)
