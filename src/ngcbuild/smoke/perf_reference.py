"""Reference figures per GPU model, to express a measured figure as a fraction of what the device
can do: dense (no sparsity) fp16/bf16 tensor-core peak and memory bandwidth from NVIDIA's
datasheets. A GEMM reaching 60-80 % of peak and a copy reaching 80-90 % of the memory bandwidth
are normal; the fraction makes a figure readable without knowing the device.

Keyed by the name torch.cuda.get_device_name() reports (a pattern, most specific first)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    model: str
    bf16_tflops: float | None  # None: the device has no bf16 tensor cores
    fp16_tflops: float
    memory_gbps: float
    source: str


# NVIDIA states tensor-core figures "with sparsity"; dense is half of those.
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (dense = half of the sparsity figure)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (dense = half of the sparsity figure)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (dense figures)"
_V100 = "NVIDIA Tesla V100 datasheet (tensor performance; no bf16)"
REFERENCES: tuple[tuple[str, Reference], ...] = (
    (r"NVIDIA H100 80GB HBM3", Reference("H100 SXM5 80GB", 989.4, 989.4, 3350, _H100)),
    (r"NVIDIA H100 NVL", Reference("H100 NVL", 835.5, 835.5, 3900, _H100)),
    (r"NVIDIA H100 PCIe", Reference("H100 PCIe 80GB", 756.5, 756.5, 2000, _H100)),
    (r"NVIDIA H200 NVL", Reference("H200 NVL", 835.5, 835.5, 4800, _H200)),
    (r"NVIDIA H200", Reference("H200 SXM 141GB", 989.5, 989.5, 4800, _H200)),
    (r"NVIDIA B200", Reference("B200 (HGX B200)", 2250, 2250, 8000,
                               "NVIDIA HGX B200 datasheet, per GPU (dense = half of the sparsity figure)")),
    (r"NVIDIA A100-SXM4-80GB", Reference("A100 SXM4 80GB", 312, 312, 2039, _A100)),
    (r"NVIDIA A100 80GB PCIe", Reference("A100 PCIe 80GB", 312, 312, 1935, _A100)),
    (r"NVIDIA A100-(SXM4|PCIE)-40GB", Reference("A100 40GB", 312, 312, 1555, _A100)),
    (r"NVIDIA L40S", Reference("L40S", 362.05, 362.05, 864,
                               "NVIDIA L40S datasheet (dense = half of the sparsity figure)")),
    (r"NVIDIA L4", Reference("L4", 121, 121, 300,
                             "NVIDIA L4 Tensor Core GPU datasheet (dense = half of the sparsity figure)")),
    (r"NVIDIA A10", Reference("A10", 125, 125, 600,
                              "NVIDIA A10 Tensor Core GPU datasheet (dense = half of the sparsity figure)")),
    (r"Tesla V100-SXM2-(16|32)GB", Reference("V100 SXM2", None, 125, 900, _V100)),
    (r"Tesla V100-PCIE-(16|32)GB", Reference("V100 PCIe", None, 112, 900, _V100)),
    (r"Tesla T4", Reference("T4", None, 65, 320, "NVIDIA T4 datasheet (mixed precision FP16/FP32)")),
)

# Which reference figure each measured figure is a fraction of (compile_speedup is itself a ratio).
METRIC_REFERENCE = {"gemm_bf16_tflops": "bf16_tflops", "gemm_fp16_tflops": "fp16_tflops",
                    "d2d_copy_gbps": "memory_gbps"}


def reference_for(device_name: str) -> Reference | None:
    for pattern, reference in REFERENCES:
        if re.fullmatch(pattern, device_name.strip()):
            return reference
    return None


def fraction_of_reference(metric: str, value: float, reference: Reference | None) -> float | None:
    field = METRIC_REFERENCE.get(metric)
    if reference is None or field is None or getattr(reference, field) is None:
        return None
    return value / getattr(reference, field)
