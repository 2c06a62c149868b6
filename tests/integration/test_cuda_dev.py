"""`cuda-dev` for real: NVIDIA's CUDA stack from PyPI's wheels built into an image on every CI run, and
its stack checks (versions, linker cache, ldd, nvcc building an extension) passing with no GPU.

The image is multi-GB and the session's (cuda_dev_build in conftest.py, shared with test_mutants.py): at the
end the `cuda-dev` tags go back where they were and the images made that no tag holds are removed (KeptTags)."""

import json
import xml.etree.ElementTree as ET

import pytest

from ..conftest import REPO
from .conftest import run_invoke

pytestmark = pytest.mark.engine
OUT = REPO / "build" / "cuda-dev"


@pytest.fixture(scope="module")
def cuda_dev(cuda_dev_build):
    # The build (and the removal of its images) is the session's: test_mutants.py uses it too.
    smoke = run_invoke("smoke", "--release", "cuda-dev", timeout=1800)
    return {**cuda_dev_build, "smoke": smoke}


def _cases(junit: str) -> dict:
    """name -> (outcome, message) for every check of a JUnit report."""
    cases = {}
    for case in ET.fromstring(junit).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, child.get("message", "")
        cases[f"{case.get('classname')}.{case.get('name')}"] = (outcome, message)
    return cases


def test_cuda_dev_builds_with_the_cuda_stack_from_wheels(cuda_dev):
    record = cuda_dev["record"]
    assert record["tags"][0] == "nvcr.io/nvidia/pytorch:cuda-dev-py3"
    layers = cuda_dev["build"].stdout
    for step in ("/stage/cuda", "/stage/cudnn", "/stage/pytorch", "/stage/python-packages"):
        assert step in layers, f"no build step installs into {step}"


def test_cuda_dev_smoke_passes_with_every_stack_check_run(cuda_dev):
    smoke = cuda_dev["smoke"]
    assert smoke.returncode == 0, f"smoke failed:\n{smoke.stdout[-6000:]}\n{smoke.stderr[-3000:]}"
    cases = _cases((OUT / "smoke-junit.xml").read_text())
    stack = {name: result for name, result in cases.items() if ".test_stack." in f".{name}"}
    # Versions of CUDA, cuDNN, NCCL, torch, torchvision, Triton and DALI; six libraries in the linker
    # cache; ldd; nvcc; the extension; pip check. The one GPU check of the module may skip.
    assert len(stack) >= 17, sorted(stack)
    skipped = {name: message for name, (outcome, message) in stack.items()
               if outcome == "skipped" and not name.endswith("test_the_cuda_extension_runs_on_the_gpu")}
    assert not skipped, f"stack checks must never skip in cuda-dev: {skipped}"
    failed = {name: message for name, (outcome, message) in cases.items() if outcome in ("failure", "error")}
    assert not failed, failed


def test_cuda_dev_gpu_checks_run_on_a_gpu_or_skip_with_their_reason(cuda_dev, engine):
    """Where the engine hands a GPU to containers (a GPU runner: the smoke run's own test, runner.gpu_visible)
    the GPU checks run on it and pass; elsewhere each skips, saying why. Holds on both kinds of runner."""
    from ngcbuild.smoke.runner import gpu_visible

    cases = _cases((OUT / "smoke-junit.xml").read_text())
    gpu = {name: (outcome, message) for name, (outcome, message) in cases.items() if ".test_gpu." in f".{name}"}
    assert gpu, "no GPU check ran"
    if gpu_visible(engine):
        unseen = {name: message for name, (_, message) in gpu.items() if "no GPU visible" in message}
        assert not unseen, f"a GPU is handed to the container, but PyTorch saw none: {unseen}"
        failed = {name: message for name, (outcome, message) in gpu.items() if outcome in ("failure", "error")}
        assert not failed, failed
    else:
        messages = {name: message for name, (_, message) in gpu.items()}
        assert all("no GPU visible to PyTorch 2.11.0+cu130" in message for message in messages.values()), messages


def test_cuda_dev_sbom_lists_the_nvidia_wheels(cuda_dev):
    result = run_invoke("sbom", "--release", "cuda-dev")
    assert result.returncode == 0, result.stdout + result.stderr
    sbom = json.loads((OUT / "sbom.cdx.json").read_text())
    versions = {c["name"]: c.get("version") for c in sbom["components"]}
    assert versions.get("nvidia-cudnn-cu13") == "9.19.0.56"
    assert versions.get("nvidia-nccl-cu13") == "2.28.9"
    assert versions.get("nvidia-cuda-nvcc") == "13.0.88"
    assert versions.get("torch") == "2.11.0"
