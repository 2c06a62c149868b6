"""Timing on the GPU for the performance smoke, and the arithmetic that turns times into figures.

The formulas are pure (unit-tested on the host); `time_per_call` needs a GPU and CUDA events, which
time the device's work rather than Python's launch overhead."""

import statistics
from typing import List


def gemm_tflops(m: int, n: int, k: int, seconds: float) -> float:
    """An (m x k) @ (k x n) product does m*n*k multiply-adds: 2*m*n*k floating-point operations."""
    return 2.0 * m * n * k / seconds / 1e12


def copy_gbps(nbytes: int, seconds: float) -> float:
    """A device-to-device copy of nbytes reads and writes nbytes each: 2*nbytes of memory traffic
    (the convention of the memory bandwidth figures on NVIDIA's datasheets)."""
    return 2.0 * nbytes / seconds / 1e9


def speedup(baseline_seconds: float, seconds: float) -> float:
    return baseline_seconds / seconds


def summarise(samples: List[float]) -> dict:
    """Median of repeated timings (robust to one disturbed repeat) and the spread around it."""
    median = statistics.median(samples)
    return {"median": median, "min": min(samples), "max": max(samples),
            "spread": (max(samples) - min(samples)) / median if median else 0.0, "repeats": len(samples)}


def time_per_call(fn, warmup: int = 3, calls: int = 10, repeats: int = 5) -> dict:
    """Seconds per call of fn on the current CUDA stream: `repeats` timings of `calls` calls each,
    after `warmup` calls (cuBLAS heuristics, allocator, clocks ramping up)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1000.0 / calls)
    return summarise(samples)
