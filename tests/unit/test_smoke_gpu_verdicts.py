"""The GPU checks' own logic without a GPU: each verdict (smoke/checks/gpu_facts.py) is fed a correct
result and a wrong one, computed here with numpy the way the device computes them (inputs rounded
to the format, fp32 accumulation), and must pass the one and fail the other with a message naming
what is wrong. The version decodings, the arch check, the FP8 simulation and the perf regression gate
have their own tests (test_smoke_gpu_facts.py, test_smoke_perf.py)."""

import math

import numpy as np
import pytest

from ngcbuild.smoke.checks.gpu_facts import (
    COMPILE_TOLERANCE,
    amp_verdict,
    compile_verdict,
    fp8_verdict,
    fused_adam_verdict,
    grad_scaler_verdict,
    sdpa_verdict,
    tolerance,
)

from ..helpers import fp8_linear_error

RNG = np.random.default_rng(0)


def error(actual, reference) -> float:
    """The checks' relative_error (Frobenius, float64), for numpy arrays."""
    actual, reference = np.asarray(actual, np.float64), np.asarray(reference, np.float64)
    if not np.isfinite(actual).all():
        return math.inf
    return float(np.linalg.norm(actual - reference) / np.linalg.norm(reference))


def bf16(x):
    """Round float32 to bfloat16 (round to nearest even on the upper 16 bits), back in float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def rounded(fmt):
    return {"float16": lambda x: np.asarray(x, np.float16).astype(np.float32), "bfloat16": bf16}[fmt]


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_amp_matmul_verdict_passes_a_correct_product_and_fails_a_wrong_one(fmt):
    a, b = RNG.standard_normal((512, 256)), RNG.standard_normal((256, 384))
    rnd = rounded(fmt)
    out = rnd(rnd(a) @ rnd(b))  # inputs in fmt, fp32 accumulation, the output in fmt
    reference = a @ b
    assert amp_verdict("matmul", fmt, f"torch.{fmt}", error(out, reference)) is None
    wrong = rnd(rnd(a) @ rnd(b[::-1]))  # an operand read in the wrong order
    assert "off by" in amp_verdict("matmul", fmt, f"torch.{fmt}", error(wrong, reference))
    # Autocast that did not switch the format (the op ran in fp32) is caught by the dtype.
    assert "not " + fmt in amp_verdict("matmul", fmt, "torch.float32", error(a @ b, reference))
    assert amp_verdict("matmul", fmt, f"torch.{fmt}", math.inf) is not None  # NaN/inf never pass


def test_amp_conv_verdict_catches_a_kernel_off_by_a_flipped_filter():
    x, w = RNG.standard_normal((4, 32, 16)), RNG.standard_normal((8, 32, 3))

    def conv1d(signal, kernel):
        padded = np.pad(signal, ((0, 0), (0, 0), (1, 1)))
        windows = np.stack([padded[:, :, i:i + 3] for i in range(signal.shape[2])], axis=2)
        return np.einsum("bcwk,ock->bow", windows, kernel)

    rnd = rounded("float16")
    reference = conv1d(x, w)
    assert amp_verdict("conv2d", "float16", "torch.float16", error(rnd(conv1d(rnd(x), rnd(w))), reference)) is None
    flipped = rnd(conv1d(rnd(x), rnd(w[:, :, ::-1])))  # correlation taken for convolution
    assert amp_verdict("conv2d", "float16", "torch.float16", error(flipped, reference)) is not None


def test_grad_scaler_verdict():
    falling = [1.0 * 0.9 ** i for i in range(40)]
    assert grad_scaler_verdict(falling, 65536.0) is None
    assert "non-finite" in grad_scaler_verdict(falling[:-1] + [float("nan")], 65536.0)
    assert "collapsed" in grad_scaler_verdict(falling, 0.0)
    assert "did not halve" in grad_scaler_verdict([1.0] * 40, 65536.0)


def mlp(x, w1, b1, w2, dtype=np.float32, act="gelu"):
    h = (x.astype(dtype) @ w1.astype(dtype)) + b1.astype(dtype)
    h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3))) if act == "gelu" else np.maximum(h, 0)
    h = (h - h.mean(axis=1, keepdims=True)) / np.sqrt(h.var(axis=1, keepdims=True) + 1e-5)
    return h @ w2.astype(dtype)


def test_compile_verdict_passes_reordered_fp32_and_fails_a_miscompilation():
    x, w1, b1, w2 = (RNG.standard_normal(s) for s in ((64, 128), (128, 256), (256,), (256, 64)))
    eager = mlp(x, w1, b1, w2)
    # Inductor fuses and reorders fp32 reductions: the same model with another summation order.
    reordered = mlp(x[:, ::-1].copy(), w1[::-1].copy(), b1, w2)
    forward = error(reordered, eager)
    assert 0 < forward < COMPILE_TOLERANCE
    assert compile_verdict(forward, forward) is None
    miscompiled = mlp(x, w1, b1, w2, act="relu")  # a fused activation replaced by another
    assert "forward" in compile_verdict(error(miscompiled, eager), 0.0)
    no_bias_grad = mlp(x, w1, np.zeros_like(b1), w2)  # as if a gradient term were dropped
    assert "backward" in compile_verdict(forward, error(no_bias_grad, eager))


def attention(q, k, v, causal=True, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (scores / scores.sum(axis=-1, keepdims=True)) @ v


def test_sdpa_verdict_passes_fp16_attention_and_fails_a_wrong_mask_or_scale():
    q, k, v = (rounded("float16")(RNG.standard_normal((2, 8, 128, 64))) for _ in range(3))
    reference = attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32))
    fused = rounded("float16")(attention(q, k, v))  # fp16 in and out, fp32 inside
    assert sdpa_verdict("flash_attention", error(fused, reference)) is None
    assert "differs" in sdpa_verdict("flash_attention", error(attention(q, k, v, causal=False), reference))
    assert sdpa_verdict("efficient_attention", error(attention(q, k, v, scale=1.0), reference)) is not None
    assert error(fused, reference) < tolerance("float16")


def adamw(params, grads, lr=1e-2, wd=0.01, dtype=np.float64, decoupled=True):
    p = [x.astype(dtype) for x in params]
    m = [np.zeros_like(x) for x in p]
    s = [np.zeros_like(x) for x in p]
    for step, grad in enumerate(grads, 1):
        for i, g in enumerate(grad):
            g = g.astype(dtype) + (0 if decoupled else wd * p[i])
            if decoupled:
                p[i] = p[i] * (1 - lr * wd)
            m[i] = 0.9 * m[i] + 0.1 * g
            s[i] = 0.999 * s[i] + 0.001 * g * g
            p[i] = p[i] - lr * (m[i] / (1 - 0.9 ** step)) / (np.sqrt(s[i] / (1 - 0.999 ** step)) + 1e-8)
    return p


def test_fused_adam_verdict_passes_fp32_adamw_and_fails_plain_adam():
    start = [RNG.standard_normal((256, 128)), RNG.standard_normal(128)]
    grads = [[RNG.standard_normal(x.shape) for x in start] for _ in range(3)]
    reference = adamw(start, grads)
    fused = adamw(start, grads, dtype=np.float32)
    moved = max(float(np.abs(f - s).max()) for f, s in zip(fused, start, strict=True))
    worst = max(error(f, r) for f, r in zip(fused, reference, strict=True))
    assert fused_adam_verdict(moved, worst) is None
    coupled = adamw(start, grads, decoupled=False)  # Adam with L2 instead of AdamW's decoupled decay
    assert "differ" in fused_adam_verdict(moved, max(error(c, r) for c, r in zip(coupled, reference, strict=True)))
    assert "unchanged" in fused_adam_verdict(0.0, 0.0)


def test_fp8_verdict_passes_an_fp8_gemm_and_fails_a_broken_scale_or_a_bf16_fallback():
    assert fp8_verdict(fp8_linear_error()) is None
    assert "scaling factor" in fp8_verdict(fp8_linear_error(x_scale=2.0))
    x, w = RNG.standard_normal((64, 256)), RNG.uniform(-1 / 16, 1 / 16, (256, 256))
    fallback = error(bf16(bf16(x) @ bf16(w).T), x @ w.T)  # the GEMM ran in bf16, not FP8
    assert "too small for FP8" in fp8_verdict(fallback)
