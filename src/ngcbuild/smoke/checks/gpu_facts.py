"""Pure helpers of the GPU checks: how vendors encode versions, which PyTorch a check needs, whether
a device runs a build's kernels, and how close a low-precision result must be to its reference.

No GPU and no torch import at module level: the host's unit tests import this file directly.
"""

import math
import re
from typing import Dict, List, Optional, Tuple

# The PyTorch release that first shipped an API a check uses. A check whose API is newer than the
# manifest's PyTorch does not apply to that image (skip with this reason); an image whose PyTorch is
# at least this version and lacks the API fails the check.
TORCH_API_SINCE = {
    "autocast(device_type=..., dtype=...)": "1.10",
    "torch.compile": "2.0",
    "scaled_dot_product_attention": "2.0",
    "torch.nn.attention.sdpa_kernel": "2.3",
    "torch.amp.GradScaler('cuda')": "2.3",
    "torchrun (torch.distributed.run)": "1.9",
    # MemPool itself is in 2.5; MemPool.snapshot(), which the check reads, from 2.6.
    "torch.cuda.MemPool.snapshot()": "2.6",
}

# Compute capabilities below which a kernel family does not exist (not a defect of the image).
MIN_CAPABILITY = {
    "bfloat16": (8, 0),          # Ampere: bf16 tensor cores
    "flash_attention": (8, 0),   # PyTorch's FlashAttention-2 kernels are built for sm80 and newer
    "efficient_attention": (5, 0),
    # FP8 tensor cores arrive with Ada (8.9) and Hopper (9.0); Transformer Engine supports both.
    "fp8": (8, 9),
}

# Unit roundoff (half the distance from 1.0 to the next number) of each format.
UNIT_ROUNDOFF = {
    "float32": 2.0 ** -24,
    "tf32": 2.0 ** -11,
    "float16": 2.0 ** -11,
    "bfloat16": 2.0 ** -8,
    "float8_e4m3": 2.0 ** -4,
}
# A product of two rounded inputs, accumulated in fp32 and rounded once more, is off by about 2-3
# unit roundoffs in the Frobenius norm; 8 leaves room for cuBLAS/cuDNN algorithm choice while a
# wrong kernel (garbage, a transposed operand, fp16 overflow) is off by order 1.
TOLERANCE_FACTOR = 8.0


def cudnn_number(version: str) -> int:
    """cuDNN's own integer for a version string: 8.0.5 -> 8005, 9.17.0 -> 91700.

    cuDNN 9 changed CUDNN_VERSION from major*1000 to major*10000 (+ minor*100 + patch)."""
    major, minor, patch = (int(p) for p in _numeric(version, 3))
    return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch


def nccl_tuple(reported) -> Tuple[int, int, int]:
    """(major, minor, patch) from what torch.cuda.nccl.version() returns in any PyTorch.

    PyTorch >= 1.10 returns a tuple (possibly with a suffix string as 4th item). Earlier ones return
    NCCL_MAJOR*1000 + NCCL_MINOR*100 + NCCL_PATCH of the header torch was compiled with (torch's own
    formula in torch/csrc/cuda/nccl.cpp, not NCCL's encoding), so 2.10.3 reads 3003. Every NCCL those
    PyTorch versions were built with is 2.x (1000 stands for NCCL 1): the thousands beyond 2000 are
    the minor's hundreds."""
    if isinstance(reported, (tuple, list)):
        return tuple(int(p) for p in reported[:3])
    code = int(reported)
    if code < 2000:
        return code // 1000, code // 100 % 10, code % 100
    return 2, (code - 2000) // 100, code % 100


def nccl_library_tuple(code: int) -> Tuple[int, int, int]:
    """(major, minor, patch) from NCCL's own NCCL_VERSION_CODE, what ncclGetVersion() of the loaded
    library returns: major*1000+minor*100+patch up to 2.8, major*10000+minor*100+patch from 2.9."""
    if code >= 10000:
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


def manifest_nccl(version: str) -> Tuple[int, int, int]:
    """'2.28.9' or '2.7.8-1' (a Debian revision) -> (2, 28, 9)."""
    return tuple(int(p) for p in _numeric(version, 3))


def major_minor(version: str) -> str:
    """MAJOR.MINOR of a version: what torch.version.cuda and nvcc's "release" name of CUDA ('13.1.0' ->
    '13.1'), the precision at which the version rule compares the manifest's CUDA with them."""
    return "{}.{}".format(*_numeric(version, 2))


def release_at_least(version: str, since: str) -> bool:
    """Whether a version (of PyTorch, DALI, TensorRT...) has what appeared in `since`, comparing
    release numbers only.

    NGC builds PyTorch from its main branch between releases (2.10.0a0+b4e4ee81d3): that
    pre-release already has what 2.10 has, although PEP 440 orders 2.10.0a0 before 2.10."""
    return _numeric(version, 4) >= _numeric(since, 4)


_ARCH = re.compile(r"(sm|compute)_([0-9]+)([a-z]?)")


def arch_support(capability: Tuple[int, int], arch_list: List[str]) -> Optional[str]:
    """How a device of this compute capability runs kernels of a build with this arch list, or None.

    - native: a cubin for exactly this architecture (sm_90, or the arch-specific sm_90a);
    - compatible: a cubin of the same major and an older minor (sm_86 runs on 8.9), or a
      family-specific one (sm_100f runs on 10.3);
    - ptx: PTX of an older or equal architecture that the driver compiles at load time.
    Arch-specific cubins (the 'a' suffix) run on that one architecture only."""
    major, minor = capability
    device = major * 10 + minor
    # For each way, the newest matching entry (the one closest to the device).
    found: Dict[str, Tuple[int, str]] = {}
    for entry in arch_list:
        match = _ARCH.fullmatch(entry)
        if not match:
            continue
        kind, number, suffix = match.group(1), int(match.group(2)), match.group(3)
        target_major, target_minor = divmod(number, 10)
        if kind == "sm" and number == device:
            how = "native"
        elif kind == "sm" and suffix in ("", "f") and target_major == major and target_minor <= minor:
            how = "compatible"
        elif kind == "compute" and suffix == "" and number <= device:
            how = "ptx"
        else:
            continue
        if how not in found or number > found[how][0]:
            found[how] = (number, entry)
    for how in ("native", "compatible", "ptx"):
        if how in found:
            return f"{how} ({found[how][1]})"
    return None


def capability_at_least(capability: Tuple[int, int], kernel: str) -> bool:
    return tuple(capability) >= MIN_CAPABILITY[kernel]


def tolerance(fmt: str) -> float:
    """Largest acceptable relative error (Frobenius norm) of a result computed in `fmt`."""
    return TOLERANCE_FACTOR * UNIT_ROUNDOFF[fmt]


def relative_error(actual, reference) -> float:
    """||actual - reference|| / ||reference|| in float64 on the CPU, for torch tensors of any dtype;
    NaN or infinity anywhere gives infinity, so a comparison against a tolerance fails.

    Functions of torch, not Tensor methods newer than PyTorch 1.5 (Tensor.isfinite is 1.6)."""
    import torch

    a = actual.detach().double().cpu()
    r = reference.detach().double().cpu()
    if a.shape != r.shape:
        raise ValueError(f"shapes differ: {tuple(a.shape)} vs {tuple(r.shape)}")
    if not bool(torch.isfinite(a).all()):
        return math.inf
    return float((a - r).norm()) / max(float(r.norm()), 1e-300)


def device_kernel_support(cuda, run_kernel) -> Dict[int, Optional[str]]:
    """How each visible device runs the build's kernels, None where it cannot.

    From torch.cuda.get_arch_list() where PyTorch has it (1.6 on); PyTorch 1.5 lists no
    architectures, so there a small kernel is run on each device: "no kernel image is available"
    is the answer a missing architecture gives."""
    devices = range(cuda.device_count())
    if hasattr(cuda, "get_arch_list"):
        arch_list = cuda.get_arch_list()
        return {i: arch_support(cuda.get_device_capability(i), arch_list) for i in devices}
    found = {}
    for i in devices:
        try:
            run_kernel(i)
        except RuntimeError as exc:
            if "no kernel image" not in str(exc):
                raise
            found[i] = None
        else:
            found[i] = "ran a kernel (this PyTorch has no torch.cuda.get_arch_list)"
    return found


# Each GPU family by compute capability (major, or (major, minor) where a major holds two).
GPU_FAMILIES = {(3,): "Kepler", (5,): "Maxwell", (6,): "Pascal", (7, 0): "Volta", (7, 2): "Volta",
                (7, 5): "Turing", (8, 0): "Ampere", (8, 6): "Ampere", (8, 7): "Ampere", (8, 9): "Ada",
                (9,): "Hopper", (10,): "Blackwell", (11,): "Blackwell", (12,): "Blackwell"}


def gpu_family(capability: Tuple[int, int]) -> Optional[str]:
    major, minor = capability
    return GPU_FAMILIES.get((major, minor)) or GPU_FAMILIES.get((major,))


def unsupported_family_reason(devices: List[Tuple[str, Tuple[int, int]]], families: List[str],
                              release: str) -> Optional[str]:
    """Why the checks do not apply on these devices, or None: the manifest lists the GPU families its
    stack supports, and an older image on a newer family (20.02's CUDA 10.2 on a Hopper) would fail
    in cuBLAS/cuDNN/NCCL for a reason that is not a defect of the image."""
    if not families:
        return None
    for index, (name, capability) in enumerate(devices):
        family = gpu_family(capability)
        if family not in families:
            return (f"cuda:{index} is {name} (compute capability {capability[0]}.{capability[1]}, "
                    f"{family or 'an unknown family'}); the manifest of {release} supports {', '.join(families)}")
    return None


def fp8_autocast(te, recipe):
    """Transformer Engine's FP8 region: te.autocast(recipe=...) where TE has it (2.9 on; 2.10
    deprecates the other), te.fp8_autocast(fp8_recipe=...) before."""
    if hasattr(te, "autocast"):
        return te.autocast(enabled=True, recipe=recipe)
    return te.fp8_autocast(enabled=True, fp8_recipe=recipe)


# A GEMM with both operands in E4M3 under per-tensor scaling is off by about 3.7% in the Frobenius
# norm (simulated in tests/unit/test_smoke_gpu_facts.py; 3-5% on devices): each operand carries a
# rounding error of up to one unit roundoff, 1/16. 7.5% leaves twice that; a scale that lets one
# operand saturate (its amax underestimated twofold) gives 10% or more. 8 unit roundoffs (0.5)
# would pass that.
FP8_GEMM_TOLERANCE = 0.075


def _numeric(version: str, count: int) -> Tuple[int, ...]:
    """The first `count` numeric parts of a version, padded with zeros ('13.1' -> (13, 1, 0))."""
    parts = re.match(r"[0-9]+(\.[0-9]+)*", version.strip())
    if not parts:
        raise ValueError(f"{version!r} does not start with a version number")
    numbers = tuple(int(p) for p in parts.group(0).split("."))[:count]
    return numbers + (0,) * (count - len(numbers))

# torch.compile (Inductor) fuses and reorders fp32 reductions; eager and compiled results then
# differ by a few fp32 roundoffs per reduction step, far below a real miscompilation.
COMPILE_TOLERANCE = 1e-4


def launcher_command(python: str, torch_version: str, nproc: int, script: str) -> List[str]:
    """The command that starts `script` once per GPU on this node.

    torchrun (torch.distributed.run) from PyTorch 1.9 on, with its standalone rendezvous on the
    loopback interface; earlier PyTorch has only torch.distributed.launch (a fixed local port)."""
    if release_at_least(torch_version, "1.9"):
        return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", script]
    return [python, "-m", "torch.distributed.launch", f"--nproc_per_node={nproc}",
            "--master_addr=127.0.0.1", "--master_port=29511", script]


def cudnn_string(number: int) -> str:
    """The inverse of cudnn_number: 91700 -> '9.17.0', 8005 -> '8.0.5'."""
    if number >= 90000:
        return f"{number // 10000}.{number // 100 % 100}.{number % 100}"
    return f"{number // 1000}.{number // 100 % 10}.{number % 100}"


# --- Verdicts of the GPU checks: whether a measured result passes, and why not. Pure (numbers in,
# a message or None out), so that the host's unit tests feed them a correct and a wrong result.

def amp_verdict(op: str, fmt: str, out_dtype: str, error: float) -> Optional[str]:
    """An op under autocast(fmt): computed in fmt, and within fmt's tolerance of the fp64 reference."""
    if out_dtype.replace("torch.", "") != fmt:
        return f"autocast computed {op} in {out_dtype}, not {fmt}"
    if not error <= tolerance(fmt):  # NaN fails too
        return f"{op} under autocast({fmt}) is off by {error:.2e} > {tolerance(fmt):.2e}"
    return None


def grad_scaler_verdict(losses: List[float], scale: float) -> Optional[str]:
    """Scaled fp16 training steps: finite losses, a live loss scale, and the loss at least halved."""
    if not all(map(math.isfinite, losses)):
        return f"non-finite loss: {losses}"
    if not scale > 0:
        return "the loss scale collapsed to zero"
    if not losses[-1] < 0.5 * losses[0]:
        return f"{len(losses)} scaled fp16 steps did not halve the loss: {losses[0]:.4f} -> {losses[-1]:.4f}"
    return None


def compile_verdict(forward_error: float, grad_error: float) -> Optional[str]:
    """torch.compile against eager: forward and gradient within COMPILE_TOLERANCE."""
    if not forward_error <= COMPILE_TOLERANCE:
        return f"compiled forward differs from eager by {forward_error:.2e}"
    if not grad_error <= COMPILE_TOLERANCE:
        return f"compiled backward differs from eager by {grad_error:.2e}"
    return None


def sdpa_verdict(backend: str, error: float) -> Optional[str]:
    """A fused attention backend (fp16 inputs) against the math backend in fp32."""
    if not error <= tolerance("float16"):
        return f"{backend} differs from the math backend by {error:.2e}"
    return None


def fused_adam_verdict(moved: float, error: float) -> Optional[str]:
    """Apex's FusedAdam against torch.optim.AdamW after the same steps."""
    if not moved > 0:
        return "FusedAdam.step() left the parameters unchanged"
    if not error <= FUSED_ADAM_TOLERANCE:
        return f"FusedAdam steps differ from torch.optim.AdamW by {error:.2e}"
    return None


def fp8_verdict(error: float) -> Optional[str]:
    """An FP8 GEMM (te.Linear under FP8 autocast) against float64: within FP8_GEMM_TOLERANCE, and not
    so accurate that it cannot have run in FP8 (a silent fallback to bf16)."""
    if not error <= FP8_GEMM_TOLERANCE:
        return f"te.Linear in FP8 is off by {error:.2e}: is a scaling factor wrong?"
    if not error > 4 * UNIT_ROUNDOFF["bfloat16"]:
        return f"error {error:.1e} is too small for FP8: did the GEMM run in FP8?"
    return None


# Three fp32 Adam steps, fused or not, differ by a few fp32 roundoffs (the update's order of operations).
FUSED_ADAM_TOLERANCE = 1e-5

