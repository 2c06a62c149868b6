"""PyTorch's GPU numerics: mixed precision, torch.compile, attention kernels and memory pools give
the answers of a higher-precision reference.

References are computed in float64 on the CPU (or fp32 with the math kernels), so TF32 or a
reduced-precision path on the GPU cannot hide an error in the reference itself."""

import math

import pytest
from gpu_facts import (
    MIN_CAPABILITY,
    amp_verdict,
    capability_at_least,
    compile_verdict,
    grad_scaler_verdict,
    relative_error,
    release_at_least,
    sdpa_verdict,
    tolerance,
)


@pytest.mark.torch_api("autocast(device_type=..., dtype=...)")
@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["matmul", "conv2d"])
def test_autocast_matches_the_fp64_reference(gpu, op, fmt, figure):
    import torch
    import torch.nn.functional as F

    _needs_format(gpu, fmt)
    dtype = getattr(torch, fmt)
    torch.manual_seed(0)
    if op == "matmul":
        a, b = torch.randn(512, 256, device="cuda"), torch.randn(256, 384, device="cuda")
        with torch.autocast(device_type="cuda", dtype=dtype):
            out = a @ b
        reference = a.cpu().double() @ b.cpu().double()
    else:
        x, w = torch.randn(8, 16, 32, 32, device="cuda"), torch.randn(32, 16, 3, 3, device="cuda")
        with torch.autocast(device_type="cuda", dtype=dtype):
            out = F.conv2d(x, w, padding=1)
        reference = F.conv2d(x.cpu().double(), w.cpu().double(), padding=1)
    error = relative_error(out, reference) if out.dtype == dtype else math.inf
    figure(f"rel. error {error:.1e} (limit {tolerance(fmt):.1e})")
    failure = amp_verdict(op, fmt, str(out.dtype), error)
    assert failure is None, failure


@pytest.mark.torch_api("autocast(device_type=..., dtype=...)")
def test_grad_scaler_training_step_lowers_the_loss(gpu, figure):
    import torch

    torch.manual_seed(0)
    x = torch.randn(512, 64, device="cuda")
    y = x @ torch.randn(64, 1, device="cuda") / 8
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)).cuda()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    scaler = _grad_scaler(torch)
    losses = []
    for _ in range(40):
        optimiser.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(optimiser)  # skipped when the scaled fp16 gradients overflowed
        scaler.update()
        losses.append(loss.item())
    figure(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, scale {scaler.get_scale():g}")
    failure = grad_scaler_verdict(losses, scaler.get_scale())
    assert failure is None, failure


@pytest.mark.torch_api("torch.compile")
def test_torch_compile_matches_eager(gpu, figure):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
                                torch.nn.Linear(256, 64)).cuda()
    x = torch.randn(64, 128, device="cuda")
    eager = model(x)
    eager.sum().backward()
    eager_grad = model[0].weight.grad.clone()
    model.zero_grad(set_to_none=True)
    # fullgraph: a graph break would mean Dynamo gave up on part of the model, not a pass.
    compiled = torch.compile(model, fullgraph=True)
    out = compiled(x)
    out.sum().backward()
    forward_error = relative_error(out, eager)
    grad_error = relative_error(model[0].weight.grad, eager_grad)
    figure(f"rel. error fwd {forward_error:.1e}, grad {grad_error:.1e}")
    failure = compile_verdict(forward_error, grad_error)
    assert failure is None, failure


@pytest.mark.torch_api("scaled_dot_product_attention")
@pytest.mark.parametrize("backend", ["flash_attention", "efficient_attention"])
def test_sdpa_backend_matches_the_math_backend(gpu, backend, figure):
    import torch
    import torch.nn.functional as F

    capability = gpu.get_device_capability(0)
    if not capability_at_least(capability, backend):
        pytest.skip(f"{backend} needs compute capability >= {'.'.join(map(str, MIN_CAPABILITY[backend]))}; "
                    f"cuda:0 is {capability[0]}.{capability[1]}")
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    with _only_sdpa_backend(torch, "math"):
        reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    # Only this backend enabled: where it cannot run, PyTorch raises "No available kernel".
    with _only_sdpa_backend(torch, backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    error = relative_error(out, reference)
    figure(f"rel. error {error:.1e} (limit {tolerance('float16'):.1e})")
    failure = sdpa_verdict(backend, error)
    assert failure is None, failure


@pytest.mark.gpu_feature("mempool")
@pytest.mark.torch_api("torch.cuda.MemPool.snapshot()")
def test_mempool_serves_allocations_made_inside_it(gpu, figure):
    import torch

    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        inside = torch.ones(1 << 20, device="cuda")
    outside = torch.ones(1 << 20, device="cuda")
    segments = pool.snapshot()
    spans = [(s["address"], s["address"] + s["total_size"]) for s in segments]
    figure(f"{len(segments)} segment(s), {sum(b - a for a, b in spans) >> 20} MiB")

    def in_pool(tensor):
        return any(a <= tensor.data_ptr() < b for a, b in spans)

    assert in_pool(inside), f"an allocation under use_mem_pool is not in the pool's segments {spans}"
    assert not in_pool(outside), "an allocation outside use_mem_pool landed in the pool"
    assert float(inside.sum()) == float(1 << 20), "memory from the pool does not hold what was written"


def _needs_format(gpu, fmt):
    capability = gpu.get_device_capability(0)
    if fmt == "bfloat16" and not capability_at_least(capability, "bfloat16"):
        pytest.skip(f"bfloat16 tensor cores need compute capability >= 8.0; cuda:0 is {capability[0]}.{capability[1]}")


def _grad_scaler(torch):
    if release_at_least(torch.__version__, "2.3"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def _only_sdpa_backend(torch, backend):
    """A context in which scaled_dot_product_attention may use this one backend only."""
    if release_at_least(torch.__version__, "2.3"):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        names = {"math": "MATH", "flash_attention": "FLASH_ATTENTION", "efficient_attention": "EFFICIENT_ATTENTION"}
        return sdpa_kernel(getattr(SDPBackend, names[backend]))
    return torch.backends.cuda.sdp_kernel(enable_math=backend == "math",
                                          enable_flash=backend == "flash_attention",
                                          enable_mem_efficient=backend == "efficient_attention")


