"""The pure parts of the GPU checks: version encodings, applicability, arch support, tolerances,
and the API of each PyTorch / Transformer Engine a manifest names (fakes of the old APIs)."""

import sys
import types
from types import SimpleNamespace

import numpy as np
import pytest

from ngcbuild.manifest.version_rule import reports
from ngcbuild.smoke.checks.gpu_facts import (
    FP8_GEMM_TOLERANCE,
    UNIT_ROUNDOFF,
    arch_support,
    capability_at_least,
    cudnn_number,
    cudnn_string,
    device_kernel_support,
    fp8_autocast,
    gpu_family,
    launcher_command,
    major_minor,
    manifest_nccl,
    nccl_library_tuple,
    nccl_tuple,
    release_at_least,
    tolerance,
    unsupported_family_reason,
)

from ..helpers import fp8_linear_error


@pytest.mark.parametrize("version,number", [
    ("7.6.5", 7605), ("8.0.5", 8005), ("8.9.7.29", 8907), ("9.0.0", 90000), ("9.17.0.29", 91700), ("9.1.1", 90101),
])
def test_cudnn_number_follows_cudnn_s_own_encoding(version, number):
    assert cudnn_number(version) == number
    assert cudnn_string(number) == ".".join(version.split(".")[:3])


@pytest.mark.parametrize("reported,expected", [
    ((2, 28, 9), (2, 28, 9)),                # PyTorch >= 1.10: a tuple
    ((2, 21, 5, "+cuda12.4"), (2, 21, 5)),   # PyTorch appends NCCL's version suffix
    # PyTorch < 1.10: NCCL_MAJOR*1000 + NCCL_MINOR*100 + NCCL_PATCH, whatever NCCL's own encoding
    (2408, (2, 4, 8)),                       # 20.02: PyTorch 1.5 with NCCL 2.4.8 (not 24.0.8)
    (2708, (2, 7, 8)),                       # 20.12: PyTorch 1.8 with NCCL 2.7.8
    (2906, (2, 9, 6)),                       # PyTorch 1.9 with NCCL 2.9.6: not NCCL's 20906
    (3003, (2, 10, 3)),                      # NCCL 2.10.3 under the old formula (not 3.0.3)
    (1000, (1, 0, 0)),                       # built with NCCL 1, which has no version macros
])
def test_nccl_tuple_reads_every_form_pytorch_reported(reported, expected):
    assert nccl_tuple(reported) == expected


@pytest.mark.parametrize("code,expected", [
    (2408, (2, 4, 8)), (2708, (2, 7, 8)), (2804, (2, 8, 4)),        # NCCL <= 2.8: major*1000
    (20906, (2, 9, 6)), (21805, (2, 18, 5)), (22809, (2, 28, 9)),  # NCCL >= 2.9: major*10000
])
def test_nccl_library_tuple_reads_ncclgetversion_of_each_era(code, expected):
    assert nccl_library_tuple(code) == expected


def test_manifest_nccl_drops_a_debian_revision():
    assert manifest_nccl("2.7.8-1") == (2, 7, 8)
    assert manifest_nccl("2.28.9") == (2, 28, 9)


@pytest.mark.parametrize("torch_cuda,manifest,same", [
    ("13.1", "13.1.0", True), ("10.2", "10.2.89", True), ("11.1", "11.1.1", True),
    ("13.0", "13.1.0", False), ("12.1", "11.1.0", False),
])
def test_cuda_is_compared_at_the_precision_torch_reports_it(torch_cuda, manifest, same):
    """torch.version.cuda and nvcc's "release" name MAJOR.MINOR: the rule compares the manifest's CUDA there."""
    assert reports(torch_cuda, major_minor(manifest)) is same


@pytest.mark.parametrize("version,since,ok", [
    ("2.10.0a0+b4e4ee81d3", "2.10", True),   # NGC's pre-release of 2.10 has 2.10's APIs
    ("2.10.0a0+b4e4ee81d3", "2.3", True),
    ("2.13.0+cpu", "2.0", True),
    ("1.5.0a0+8f84ded", "1.6", False),
    ("1.9.0a0+2ecb2c7", "1.10", False),      # 1.9 < 1.10: numbers, not strings
    ("8.6.1.6", "8.5", True), ("8.4.3.1", "8.5", False), ("10.14.1.48", "10", True),
])
def test_release_at_least_compares_release_numbers(version, since, ok):
    assert release_at_least(version, since) is ok


ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.mark.parametrize("capability,arch_list,how", [
    ((9, 0), ARCHES, "native (sm_90)"),
    ((8, 9), ARCHES, "compatible (sm_86)"),       # Ada runs Ampere cubins
    ((10, 3), ARCHES, "compatible (sm_100)"),
    ((12, 1), ARCHES, "compatible (sm_120)"),
    ((7, 0), ARCHES, None),                        # Volta: dropped from this build
    ((9, 0), ["sm_80", "sm_90a"], "native (sm_90a)"),
    ((10, 0), ["sm_80", "sm_90a"], None),          # arch-specific cubins do not run elsewhere
    ((10, 0), ["sm_90a", "compute_90"], "ptx (compute_90)"),
    ((8, 0), ["sm_90", "compute_90"], None),       # PTX runs only on newer devices
    ((10, 3), ["sm_100f"], "compatible (sm_100f)"),
    ((8, 0), [], None),
])
def test_arch_support(capability, arch_list, how):
    assert arch_support(capability, arch_list) == how


def test_capability_thresholds():
    assert capability_at_least((8, 0), "bfloat16") and not capability_at_least((7, 5), "bfloat16")
    assert capability_at_least((8, 9), "fp8") and capability_at_least((9, 0), "fp8")
    assert not capability_at_least((8, 6), "fp8")
    assert not capability_at_least((7, 5), "flash_attention")


def test_tolerances_follow_the_precision_of_each_format():
    assert tolerance("float32") < tolerance("float16") == tolerance("tf32") < tolerance("bfloat16") < tolerance("float8_e4m3")
    assert tolerance("float16") == pytest.approx(8 * 2 ** -11)


def test_launcher_is_torchrun_from_1_9_and_launch_before():
    new = launcher_command("python3", "2.10.0a0+b4e4ee81d3", 8, "x.py")
    assert new == ["python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=8", "x.py"]
    old = launcher_command("python3", "1.5.0a0+8f84ded", 2, "x.py")
    assert old[:3] == ["python3", "-m", "torch.distributed.launch"] and "--nproc_per_node=2" in old


def test_bf16_autocast_matmul_passes_and_a_wrong_result_fails():
    """The comparison the AMP checks make, with PyTorch's CPU autocast (where torch is installed)."""
    torch = pytest.importorskip("torch")
    from ngcbuild.smoke.checks.gpu_facts import relative_error

    torch.manual_seed(0)
    a, b = torch.randn(256, 128), torch.randn(128, 192)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = a @ b
    reference = a.double() @ b.double()
    assert out.dtype == torch.bfloat16
    assert relative_error(out, reference) <= tolerance("bfloat16")
    # A correct bf16 product carries bf16 rounding (about one unit roundoff), well inside 8.
    assert UNIT_ROUNDOFF["float16"] < relative_error(out, reference) < 2 * UNIT_ROUNDOFF["bfloat16"]
    assert relative_error(a @ b.flip(0), reference) > tolerance("float8_e4m3"), "a wrong operand order must fail"


def test_non_finite_results_never_pass():
    torch = pytest.importorskip("torch")
    from ngcbuild.smoke.checks.gpu_facts import relative_error

    reference = torch.ones(4, dtype=torch.float64)
    assert relative_error(torch.tensor([1.0, float("nan"), 1.0, 1.0]), reference) == float("inf")
    with pytest.raises(ValueError, match="shapes differ"):
        relative_error(torch.ones(3), reference)


# --- PyTorch 1.5 (20.02): no torch.cuda.get_arch_list (1.6), no Tensor.isfinite (1.6) -----------

class Cuda15:
    """torch.cuda of PyTorch 1.5 as the arch check uses it: two devices, no get_arch_list."""

    def device_count(self):
        return 2

    def get_device_capability(self, index):
        return (7, 0)


def test_arch_check_on_pytorch_1_5_runs_a_kernel_instead_of_listing_architectures():
    def run_kernel(index):
        if index == 1:
            raise RuntimeError("CUDA error: no kernel image is available for execution on the device")

    found = device_kernel_support(Cuda15(), run_kernel)
    assert found[0].startswith("ran a kernel") and found[1] is None


def test_arch_check_reads_the_arch_list_where_pytorch_has_it():
    cuda = SimpleNamespace(device_count=lambda: 1, get_device_capability=lambda i: (9, 0),
                           get_arch_list=lambda: ["sm_80", "sm_90"])
    assert device_kernel_support(cuda, run_kernel=None) == {0: "native (sm_90)"}


def test_another_kernel_failure_is_not_taken_for_a_missing_architecture():
    def run_kernel(index):
        raise RuntimeError("CUDA error: out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        device_kernel_support(Cuda15(), run_kernel)


class Tensor15:
    """What relative_error touches of a PyTorch 1.5 tensor, backed by numpy: no isfinite() or
    clamp_min() methods."""

    def __init__(self, values):
        self.values = np.asarray(values, dtype=np.float64)

    def detach(self):
        return self

    def double(self):
        return self

    def cpu(self):
        return self

    @property
    def shape(self):
        return self.values.shape

    def __sub__(self, other):
        return Tensor15(self.values - other.values)

    def norm(self):
        return Tensor15(np.linalg.norm(self.values))

    def all(self):
        return Tensor15(self.values.all())

    def __float__(self):
        return float(self.values)

    def __bool__(self):
        return bool(self.values)


def test_relative_error_uses_only_what_pytorch_1_5_has(monkeypatch):
    from ngcbuild.smoke.checks.gpu_facts import relative_error

    torch15 = types.ModuleType("torch")
    torch15.isfinite = lambda t: Tensor15(np.isfinite(t.values))
    monkeypatch.setitem(sys.modules, "torch", torch15)
    assert relative_error(Tensor15([1.0, 2.0]), Tensor15([1.0, 2.0])) == 0.0
    assert relative_error(Tensor15([3.0, 4.0]), Tensor15([0.0, 0.0])) == pytest.approx(5e300)
    assert relative_error(Tensor15([1.0, float("nan")]), Tensor15([1.0, 1.0])) == float("inf")


# --- Transformer Engine on both sides of 2.9, and the FP8 bound ------------------------------------

def te_module(*apis):
    calls = []
    te = types.ModuleType("transformer_engine.pytorch")
    for api in apis:
        setattr(te, api, lambda api=api, **kwargs: calls.append((api, kwargs)) or api)
    return te, calls


def test_fp8_region_uses_te_autocast_where_transformer_engine_has_it():
    te, calls = te_module("autocast", "fp8_autocast")  # 2.9 and later (fp8_autocast deprecated in 2.10)
    assert fp8_autocast(te, "R") == "autocast" and calls == [("autocast", {"enabled": True, "recipe": "R"})]


def test_fp8_region_uses_fp8_autocast_before_2_9():
    te, calls = te_module("fp8_autocast")
    assert fp8_autocast(te, "R") == "fp8_autocast"
    assert calls == [("fp8_autocast", {"enabled": True, "fp8_recipe": "R"})]


def test_the_fp8_bound_passes_a_correct_gemm_and_catches_a_half_broken_scaling():
    correct = fp8_linear_error()
    assert 0.03 < correct < 0.05  # the 3-5% a correct FP8 GEMM shows
    assert correct < FP8_GEMM_TOLERANCE
    # One operand's amax underestimated twofold: its upper half saturates at 448.
    for broken in (fp8_linear_error(x_scale=2.0), fp8_linear_error(w_scale=2.0)):
        assert broken > FP8_GEMM_TOLERANCE
        assert broken < tolerance("float8_e4m3")  # what the former bound (8 unit roundoffs) let pass


# --- GPU families: an old image on a newer GPU skips, naming the family ------------------------------

@pytest.mark.parametrize("capability,family", [
    ((6, 0), "Pascal"), ((7, 0), "Volta"), ((7, 5), "Turing"), ((8, 0), "Ampere"), ((8, 6), "Ampere"),
    ((8, 9), "Ada"), ((9, 0), "Hopper"), ((10, 0), "Blackwell"), ((12, 0), "Blackwell"), ((4, 0), None),
])
def test_gpu_family_of_a_compute_capability(capability, family):
    assert gpu_family(capability) == family


def test_an_old_release_on_a_newer_family_does_not_apply():
    families = ["Pascal", "Volta", "Turing"]  # 20.02
    reason = unsupported_family_reason([("NVIDIA V100", (7, 0)), ("NVIDIA H100 80GB HBM3", (9, 0))], families, "20.02")
    assert reason == ("cuda:1 is NVIDIA H100 80GB HBM3 (compute capability 9.0, Hopper); "
                      "the manifest of 20.02 supports Pascal, Volta, Turing")
    assert unsupported_family_reason([("Tesla V100", (7, 0))], families, "20.02") is None
    assert unsupported_family_reason([("H200", (9, 0))], [], "host") is None  # no limit stated
