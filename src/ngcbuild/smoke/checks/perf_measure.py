"""Timing on the GPU for the performance smoke, and the arithmetic that turns times into figures.

The formulas are pure (unit-tested on the host); `time_per_call` needs a GPU and CUDA events, which
time the device's work rather than Python's launch overhead."""

import math
import statistics
from typing import List, Optional


def gemm_tflops(m: int, n: int, k: int, seconds: float) -> float:
    """An (m x k) @ (k x n) product does m*n*k multiply-adds: 2*m*n*k floating-point operations."""
    return 2.0 * m * n * k / seconds / 1e12


def copy_gbps(nbytes: int, seconds: float) -> float:
    """A device-to-device copy of nbytes reads and writes nbytes each: 2*nbytes of memory traffic
    (the convention of the memory bandwidth figures on NVIDIA's datasheets)."""
    return 2.0 * nbytes / seconds / 1e9


def speedup(baseline_seconds: float, seconds: float) -> float:
    return baseline_seconds / seconds


# Each timed sample lasts at least this long: a 15 ms sample measures boost clocks, not the sustained
# speed a training job sees once power and temperature limits apply.
MIN_SAMPLE_S = 0.1


def calls_per_sample(seconds_per_call: float, min_sample_s: float = MIN_SAMPLE_S, at_least: int = 1) -> int:
    """Calls per timed sample so that the sample lasts at least min_sample_s."""
    if seconds_per_call <= 0:
        return max(at_least, 1)
    return max(at_least, math.ceil(min_sample_s / seconds_per_call))


# The chip's burst: a few calls right after the warm-up, at boost clocks before power and heat limit them
# (an H200's bf16 GEMM: 801 TFLOP/s in a 10-call burst at 1980 MHz, 691 sustained at 1470 MHz).
BURST_CALLS = 10


def summarise(samples: List[float], calls: int = 1, burst_s: Optional[float] = None) -> dict:
    """Median of repeated timings (robust to one disturbed repeat) and the spread around it; each
    sample is the time per call over `calls` calls. `burst_s`: the time per call of the burst."""
    median = statistics.median(samples)
    return {"median": median, "min": min(samples), "max": max(samples),
            "spread": (max(samples) - min(samples)) / median if median else 0.0, "repeats": len(samples),
            "calls_per_sample": calls, "sample_s": median * calls, "burst_s": burst_s}


def ratio_spread(numerator: dict, denominator: dict) -> float:
    """The spread of a ratio of two timed figures (a speed-up): at most the sum of theirs."""
    return numerator["spread"] + denominator["spread"]


def time_per_call(fn, warmup: int = 3, repeats: int = 5, min_sample_s: float = MIN_SAMPLE_S,
                  burst_calls: int = BURST_CALLS) -> dict:
    """Seconds per call of fn on the current CUDA stream: `repeats` samples of at least min_sample_s
    each (as many calls as that takes, from the time of one call after `warmup` calls: cuBLAS
    heuristics, allocator, clocks ramping up), and before them one burst of `burst_calls` calls."""
    import torch

    def timed(calls: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0 / calls

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    burst_s = timed(burst_calls)
    calls = calls_per_sample(timed(1), min_sample_s)
    samples = [timed(calls) for _ in range(repeats)]
    return summarise(samples, calls, burst_s)
