"""The pure parts of the GPU checks: version encodings, applicability, arch support, tolerances."""

import pytest

from ngcbuild.smoke.checks.gpu_facts import (
    UNIT_ROUNDOFF,
    arch_support,
    capability_at_least,
    cuda_matches,
    cudnn_number,
    cudnn_string,
    launcher_command,
    manifest_nccl,
    nccl_tuple,
    release_at_least,
    tolerance,
    version_matches_pin,
)


@pytest.mark.parametrize("version,number", [
    ("7.6.5", 7605), ("8.0.5", 8005), ("8.9.7.29", 8907), ("9.0.0", 90000), ("9.17.0.29", 91700), ("9.1.1", 90101),
])
def test_cudnn_number_follows_cudnn_s_own_encoding(version, number):
    assert cudnn_number(version) == number
    assert cudnn_string(number) == ".".join(version.split(".")[:3])


@pytest.mark.parametrize("reported,expected", [
    ((2, 28, 9), (2, 28, 9)),
    ((2, 21, 5, "+cuda12.4"), (2, 21, 5)),   # PyTorch appends NCCL's version suffix
    (2708, (2, 7, 8)),                       # old PyTorch: NCCL_VERSION_CODE before 2.9
    (2408, (2, 4, 8)),
    (20906, (2, 9, 6)),                      # from NCCL 2.9 on: major*10000
    (21805, (2, 18, 5)),
])
def test_nccl_tuple_reads_every_form_pytorch_reported(reported, expected):
    assert nccl_tuple(reported) == expected


def test_manifest_nccl_drops_a_debian_revision():
    assert manifest_nccl("2.7.8-1") == (2, 7, 8)
    assert manifest_nccl("2.28.9") == (2, 28, 9)


@pytest.mark.parametrize("torch_cuda,manifest,same", [
    ("13.1", "13.1.0", True), ("10.2", "10.2.89", True), ("11.1", "11.1.1", True),
    ("13.0", "13.1.0", False), ("12.1", "11.1.0", False), (None, "13.1.0", False),
])
def test_cuda_matches_compares_major_minor(torch_cuda, manifest, same):
    assert cuda_matches(torch_cuda, manifest) is same


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


@pytest.mark.parametrize("actual,pin,ok", [
    ("2.10.0a0+b4e4ee81d3", "2.10.0a0+b4e4ee81d3", True),
    ("2.10.0a0+b4e4ee81d3", "2.10.0a0+b4e4ee8", True),      # abbreviated hash in the banner
    ("2.10.0a0+b4e4ee81d3", "2.10.0a0+a5b4d78", False),     # another build
    ("2.10.0a0+b4e4ee81d3", "2.10.0a0", False),             # a build without local part is another
    ("2.10.0a0+b4e4ee81d3", "2.10.0", False),
    ("2.10.0a0+b4", "2.10.0a0+b4e4ee81d3", False),          # too short to be a hash prefix
    ("2.13.0+cpu", "2.13.0+cpu", True),
    ("2.13.0", "2.13.0+cpu", False),
])
def test_version_matches_pin(actual, pin, ok):
    assert version_matches_pin(actual, pin) is ok


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
