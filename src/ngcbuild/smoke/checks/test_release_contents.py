"""What an NGC release holds beyond versions: the start-up text printed once, a PyTorch built with the
LAPACK and MPI the manifest promises (stack.torch_with), torchvision's compiled ops, one copy of each
Python distribution. No GPU needed. Runs on every release's Python, 3.6 included (no f-string `=`,
no importlib.metadata, no subprocess capture_output)."""

import os
import re
import subprocess
import sys
from collections import defaultdict

import pytest

LICENSE_LINE = "governed by the NVIDIA Deep Learning Container License"


def _entrypoint_output(expected):
    result = subprocess.run([expected["entrypoint"], "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.image
def test_start_up_text_is_printed_once(expected):
    """The image's snippets replace the base image's: a base's own license text must not print too."""
    out = _entrypoint_output(expected)
    wanted = sum(LICENSE_LINE in line for line in expected["banner"])
    assert out.count(LICENSE_LINE) == wanted, \
        "the license line is printed %d times, the manifest's banner has it %d times:\n%s" % (
            out.count(LICENSE_LINE), wanted, out)
    assert out.count("== PyTorch ==") == 1, \
        "the banner is printed %d times at start-up (once expected):\n%s" % (out.count("== PyTorch =="), out)


def _torch_with(expected):
    return expected.get("stack", {}).get("torch_with", [])


def test_torch_has_lapack_where_the_manifest_promises_it(expected):
    if "lapack" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: lapack")
    import torch

    # torch.inverse runs LAPACK's getrf/getri on the CPU; a build without LAPACK raises here.
    matrix = torch.tensor([[4.0, 7.0], [2.0, 6.0]], dtype=torch.float64)
    product = torch.matmul(matrix, torch.inverse(matrix))
    assert torch.allclose(product, torch.eye(2, dtype=torch.float64)), product


def test_torch_has_mpi_where_the_manifest_promises_it(expected):
    if "mpi" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: mpi")
    import torch.distributed as dist

    assert dist.is_available() and dist.is_mpi_available(), "PyTorch was built without MPI"


@pytest.mark.component("torchvision")
def test_torchvision_compiled_ops_run():
    import torch
    import torchvision

    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    kept = torchvision.ops.nms(boxes, scores, 0.5)  # a C++ op: fails if built against another torch
    assert kept.tolist() == [0, 2]


def _distributions():
    """Canonical name -> the dist-info/egg-info folders that hold it, over every site folder on sys.path
    (site-packages and dist-packages: the smoke suite's own mounted tools are not the image's)."""
    found = defaultdict(set)
    for folder in sys.path:
        site = os.path.basename(folder) in ("site-packages", "dist-packages")
        if not site or not os.path.isdir(folder):
            continue
        for entry in os.listdir(folder):
            match = re.match(r"^(.+?)-[0-9][^-]*(-py[0-9.]+)?(-.+)?\.(dist-info|egg-info)$", entry)
            if match:
                name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
                found[name].add(os.path.join(os.path.realpath(folder), entry))
    return found


def test_each_distribution_is_installed_once():
    """A second copy (conda's and pip's of the same package) leaves pip and imports disagreeing."""
    duplicated = dict((name, sorted(paths)) for name, paths in _distributions().items() if len(paths) > 1)
    assert not duplicated, "installed more than once: %s" % duplicated


@pytest.mark.image
def test_workspace_holds_the_rendered_files(expected):
    """/workspace holds the license and README the manifest renders, each as rendered."""
    import hashlib

    wanted = expected.get("workspace", {})
    if not wanted:
        pytest.skip("the manifest of %s puts no files under /workspace" % expected["release"])
    wrong = {}
    for name, digest in sorted(wanted.items()):
        path = os.path.join(expected["workdir"], name)
        if not os.path.isfile(path):
            wrong[path] = "missing"
            continue
        with open(path, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() != digest:
                wrong[path] = "not the rendered text"
    assert not wrong, "/workspace: %s" % wrong
