"""Performance smoke (runs only with --perf): GEMM throughput, device-to-device copy bandwidth and
the speed-up of torch.compile on a transformer training step. Each figure goes into the --perf-out JSON
with its spread within the run (what the regression gate allows for) and, where it is a rate of the
chip, the chip's own burst of it; the host adds the device's datasheet figure and any regression."""

import copy

import pytest
from gpu_facts import capability_at_least, relative_error, tolerance
from perf_measure import copy_gbps, gemm_tflops, ratio_spread, speedup, time_per_call

pytestmark = pytest.mark.perf

GEMM_N = 8192
COPY_BYTES = 1 << 30


@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_gemm_throughput(gpu, fmt, perf_results, figure):
    import torch

    capability = gpu.get_device_capability(0)
    if fmt == "bfloat16" and not capability_at_least(capability, "bfloat16"):
        pytest.skip(f"bfloat16 tensor cores need compute capability >= 8.0; cuda:0 is {capability[0]}.{capability[1]}")
    dtype = getattr(torch, fmt)
    a = torch.randn(GEMM_N, GEMM_N, device="cuda", dtype=dtype)
    b = torch.randn(GEMM_N, GEMM_N, device="cuda", dtype=dtype)
    out = torch.empty(GEMM_N, GEMM_N, device="cuda", dtype=dtype)
    timing = time_per_call(lambda: torch.matmul(a, b, out=out))
    tflops = gemm_tflops(GEMM_N, GEMM_N, GEMM_N, timing["median"])
    key = {"bfloat16": "gemm_bf16_tflops", "float16": "gemm_fp16_tflops"}[fmt]
    perf_results[key] = {"value": tflops, "unit": "TFLOP/s", "what": f"{fmt} matmul {GEMM_N}^3",
                         "spread": timing["spread"], "burst": gemm_tflops(GEMM_N, GEMM_N, GEMM_N, timing["burst_s"]),
                         "timing_s": timing}
    figure(f"{tflops:.1f} TFLOP/s")
    # The fastest kernel must still be right: its first row against a float64 product.
    row_error = relative_error(out[:1], a[:1].double() @ b.double())
    assert row_error <= tolerance(fmt), f"the timed {fmt} GEMM computed a wrong first row (rel. error {row_error:.2e})"


def test_device_to_device_copy_bandwidth(gpu, perf_results, figure):
    import torch

    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").fill_(7)
    dst = torch.empty_like(src)
    timing = time_per_call(lambda: dst.copy_(src))
    gbps = copy_gbps(COPY_BYTES, timing["median"])
    assert bool((dst[:: 1 << 20] == 7).all()), "the copy did not arrive"
    perf_results["d2d_copy_gbps"] = {"value": gbps, "unit": "GB/s", "timing_s": timing, "spread": timing["spread"],
                                     "burst": copy_gbps(COPY_BYTES, timing["burst_s"]),
                                     "what": f"copy_ of {COPY_BYTES >> 20} MiB (read + write)"}
    figure(f"{gbps:.0f} GB/s")
    assert gbps > 0


# The compiled step at a size where the GPU, not Python's launches, sets the pace: on an H200, d_model 512
# with a 16x256 batch gave speed-ups of 1.15-1.45x between runs (eager samples 26% apart within one); d_model
# 1024 with 32x512, 1.262-1.269x over five repeats (0.6%).
D_MODEL, HEADS, BATCH, SEQUENCE = 1024, 16, 32, 512


@pytest.mark.torch_api("torch.compile")
def test_compile_speedup_on_a_transformer_training_step(gpu, perf_results, figure):
    import time

    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=HEADS, dim_feedforward=4 * D_MODEL, dropout=0.0,
                                             batch_first=True)
    eager_model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).cuda()
    compiled_model = copy.deepcopy(eager_model)
    compiled = torch.compile(compiled_model)
    x = torch.randn(BATCH, SEQUENCE, D_MODEL, device="cuda")
    dtype = torch.bfloat16 if capability_at_least(gpu.get_device_capability(0), "bfloat16") else torch.float16

    def make_step(model, params):
        optimiser = torch.optim.AdamW(params, lr=1e-4)

        def step():
            optimiser.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=dtype):
                loss = model(x).float().pow(2).mean()
            loss.backward()
            optimiser.step()
        return step

    eager_step = make_step(eager_model, eager_model.parameters())
    compiled_step = make_step(compiled, compiled_model.parameters())
    started = time.perf_counter()
    compiled_step()  # the first call compiles
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - started
    eager = time_per_call(eager_step)
    fast = time_per_call(compiled_step)
    gain = speedup(eager["median"], fast["median"])
    what = (f"torch.compile vs eager, 4-layer transformer training step, d_model {D_MODEL}, batch {BATCH}x{SEQUENCE} "
            f"({str(dtype).replace('torch.', '')} autocast)")
    perf_results["compile_speedup"] = {"value": gain, "unit": "x", "what": what, "spread": ratio_spread(eager, fast),
                                       "eager_s": eager, "compiled_s": fast, "compile_s": compile_s}
    figure(f"{gain:.2f}x (compile {compile_s:.0f} s)")
    assert all(bool(torch.isfinite(p).all()) for p in compiled_model.parameters()), \
        "the compiled steps produced non-finite weights"
