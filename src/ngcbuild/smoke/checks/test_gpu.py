"""GPU checks: skip with a reason where no GPU is visible; --require-gpu makes the skip a failure."""

import pytest


def cudnn_number(version: str) -> int:
    """cuDNN's own integer for a version string: 8.0.5 -> 8005, 9.17.0 -> 91700."""
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch


def test_cuda_device_computes(gpu):
    import torch

    assert gpu.device_count() >= 1
    a = torch.randn(64, 64, device="cuda")
    assert torch.allclose((a @ a).cpu(), a.cpu() @ a.cpu(), atol=1e-3, rtol=1e-3)


def test_compute_capability_meets_the_minimum(gpu, expected):
    minimum = expected["gpu"]["min_compute_capability"]
    if minimum is None:
        pytest.skip("the manifest states no minimum compute capability")
    assert gpu.get_device_capability(0) >= tuple(int(p) for p in minimum.split("."))


def test_cuda_cudnn_nccl_versions_match_the_manifest(gpu, expected):
    import torch

    wanted = expected["gpu"]
    if wanted["cuda"]:
        assert torch.version.cuda == ".".join(wanted["cuda"].split(".")[:2])
    if wanted["cudnn"]:
        assert torch.backends.cudnn.version() == cudnn_number(wanted["cudnn"])
    if wanted["nccl"]:
        assert torch.cuda.nccl.version() == tuple(int(p) for p in wanted["nccl"].split(".")[:3])
