"""The GPU is there, PyTorch sees every device the driver hands in, and the build has kernels for them.
The versions of the CUDA stack need no GPU: test_stack.py checks them.

Each check skips with a reason where no GPU is visible; --require-gpu makes that skip a failure."""

import os
import shutil

import pytest
from gpu_facts import device_kernel_support
from processes import run


def test_cuda_is_available(gpu):
    import torch

    assert torch.cuda.is_available(), "torch.cuda.is_available() is False although a device is counted"


def test_device_count_matches_the_driver(gpu, figure):
    """PyTorch sees every GPU the container was given (nvidia-smi lists what the driver hands in)."""
    names = _driver_gpu_names()
    figure(f"{gpu.device_count()} GPU(s)")
    assert gpu.device_count() >= 1
    if names is None:
        pytest.skip("no nvidia-smi in the image, or CUDA_VISIBLE_DEVICES is set: the count is only checked as >= 1")
    assert gpu.device_count() == len(names), f"PyTorch sees {gpu.device_count()} GPUs, the driver lists {names}"


def test_device_names_match_the_driver(gpu, figure):
    torch_names = [gpu.get_device_name(i) for i in range(gpu.device_count())]
    figure(", ".join(sorted(set(torch_names))))
    assert all(torch_names), f"a device has no name: {torch_names}"
    names = _driver_gpu_names()
    if names is None:
        pytest.skip("no nvidia-smi in the image, or CUDA_VISIBLE_DEVICES is set: names come from PyTorch only")
    # CUDA orders devices fastest first, nvidia-smi by PCI bus: compare the names as multisets.
    assert sorted(torch_names) == sorted(names), f"PyTorch names {torch_names}, the driver {names}"


def test_cuda_device_computes(gpu):
    import torch

    a = torch.randn(64, 64, device="cuda", dtype=torch.float64)
    assert torch.allclose((a @ a).cpu(), a.cpu() @ a.cpu(), atol=1e-10, rtol=1e-10), \
        "float64 matmul on the GPU differs from the CPU"


def test_compute_capability_meets_the_minimum(gpu, expected, figure):
    minimum = expected["gpu"]["min_compute_capability"]
    capabilities = [gpu.get_device_capability(i) for i in range(gpu.device_count())]
    figure(", ".join("{}.{}".format(*c) for c in sorted(set(capabilities))))
    if minimum is None:
        pytest.skip("the manifest states no minimum compute capability")
    wanted = tuple(int(p) for p in minimum.split("."))
    below = [f"cuda:{i} is {c[0]}.{c[1]}" for i, c in enumerate(capabilities) if tuple(c) < wanted]
    assert not below, f"below the manifest's minimum compute capability {minimum}: {below}"


def test_device_architecture_is_in_the_build(gpu, figure):
    """The PyTorch build carries kernels for every visible device (else: "no kernel image is available")."""
    import torch

    def run_kernel(index):
        torch.ones(16, device="cuda:{}".format(index)).add_(1).cpu()

    found = device_kernel_support(gpu, run_kernel)
    figure("; ".join(sorted({how for how in found.values() if how})) or "none")
    missing = ["cuda:{} (sm_{}{})".format(i, *gpu.get_device_capability(i)) for i, how in found.items() if how is None]
    listed = gpu.get_arch_list() if hasattr(gpu, "get_arch_list") else "not listed by this PyTorch"
    assert not missing, f"{missing} not runnable with torch.cuda.get_arch_list() = {listed}"


def _driver_gpu_names():
    """GPU names as the driver lists them, or None where they cannot be compared with PyTorch's:
    no nvidia-smi in the image, or CUDA_VISIBLE_DEVICES hides some of them from CUDA."""
    if shutil.which("nvidia-smi") is None or os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    out = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], timeout=60, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]
