"""The GPU components an NGC image bundles work on the GPU: Apex, DALI, TensorRT, Transformer Engine, and the
cuSPARSELt library PyTorch is built with.

Each check runs only where the manifest puts the component in the image (marker `component`) or promises it
(stack.torch_with)."""

import pytest
from gpu_facts import (
    FP8_GEMM_TOLERANCE,
    MIN_CAPABILITY,
    capability_at_least,
    fp8_autocast,
    fp8_verdict,
    fused_adam_verdict,
    relative_error,
    release_at_least,
    tolerance,
)

from conftest import import_component

# Apex's CUDA extensions that FusedAdam and the fused layers load (built with --cuda_ext).
APEX_EXTENSIONS = ("amp_C", "fused_layer_norm_cuda")


@pytest.mark.component("apex")
@pytest.mark.parametrize("extension", APEX_EXTENSIONS)
def test_apex_cuda_extension_imports(gpu, extension):
    import_component("apex", extension)


@pytest.mark.component("apex")
def test_apex_fused_adam_steps_like_torch_adamw(gpu, figure):
    import torch

    FusedAdam = import_component("apex", "apex.optimizers").FusedAdam

    torch.manual_seed(0)
    start = [torch.randn(256, 128, device="cuda"), torch.randn(128, device="cuda")]
    fused = [p.clone().requires_grad_() for p in start]
    plain = [p.clone().requires_grad_() for p in start]
    # FusedAdam's default adam_w_mode=True is AdamW: decoupled weight decay.
    fused_opt = FusedAdam(fused, lr=1e-2, weight_decay=0.01)
    plain_opt = torch.optim.AdamW(plain, lr=1e-2, weight_decay=0.01)
    for _ in range(3):
        grads = [torch.randn_like(p) for p in start]
        for params, opt in ((fused, fused_opt), (plain, plain_opt)):
            for i, p in enumerate(params):
                p.grad = grads[i].clone()
            opt.step()
    moved = max(float((fused[i] - start[i]).abs().max()) for i in range(len(start)))
    error = max(relative_error(fused[i], plain[i]) for i in range(len(start)))
    figure(f"rel. error vs AdamW {error:.1e}")
    failure = fused_adam_verdict(moved, error)
    assert failure is None, failure


@pytest.mark.component("dali")
def test_dali_gpu_pipeline_runs(gpu, expected, figure):
    import numpy as np

    version = expected["components"]["dali"]
    if not release_at_least(version, "1.0"):
        pytest.skip(f"this check uses DALI's fn API (1.0 and later); the manifest pins DALI {version}")
    fn = import_component("dali", "nvidia.dali.fn")
    Pipeline = import_component("dali", "nvidia.dali.pipeline").Pipeline

    batch = [np.full((4, 4), i, dtype=np.float32) for i in range(3)]
    pipe = Pipeline(batch_size=len(batch), num_threads=1, device_id=0)
    with pipe:
        data = fn.external_source(source=lambda: batch, batch=True)
        pipe.set_outputs(data.gpu() * 2 + 1)
    pipe.build()
    (out,) = pipe.run()
    figure(type(out).__name__)
    assert "GPU" in type(out).__name__, f"the pipeline's output lives in {type(out).__name__}, not on the GPU"
    got = out.as_cpu().as_array()  # samples of one shape: one array (batch, 4, 4)
    assert np.array_equal(got, np.stack(batch) * 2 + 1), f"DALI computed {got.tolist()}"


@pytest.mark.component("tensorrt")
def test_tensorrt_builds_and_runs_an_engine(gpu, expected, figure):
    import numpy as np
    import torch

    version = expected["components"]["tensorrt"]
    if not release_at_least(version, "8.5"):
        pytest.skip(f"this check uses TensorRT's named-tensor API (8.5 and later); the manifest pins {version}")
    # install: base means the base image brings it; one without the Python bindings fails here, saying so.
    trt = import_component("tensorrt", "tensorrt")

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    # Networks are always explicit-batch from TensorRT 10 on; before, it had to be asked for.
    flags = 0 if release_at_least(trt.__version__, "10") else 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    weights = np.arange(12, dtype=np.float32).reshape(4, 3) / 10 - 0.5
    x = network.add_input("x", trt.float32, (2, 4))
    w = network.add_constant((4, 3), trt.Weights(weights)).get_output(0)
    product = network.add_matrix_multiply(x, trt.MatrixOperation.NONE, w, trt.MatrixOperation.NONE)
    relu = network.add_activation(product.get_output(0), trt.ActivationType.RELU)
    relu.get_output(0).name = "y"
    network.mark_output(relu.get_output(0))
    serialized = builder.build_serialized_network(network, builder.create_builder_config())
    assert serialized is not None, "TensorRT could not build the engine (see its log above)"
    engine = trt.Runtime(logger).deserialize_cuda_engine(serialized)
    context = engine.create_execution_context()

    inputs = torch.tensor([[1.0, -2.0, 3.0, 0.5], [0.0, 1.0, -1.0, 2.0]], device="cuda")
    output = torch.empty(2, 3, device="cuda")
    context.set_tensor_address("x", inputs.data_ptr())
    context.set_tensor_address("y", output.data_ptr())
    # A stream of our own: TensorRT warns about (and serialises on) the legacy default stream, handle 0.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the inputs were written on the current stream
    assert stream.cuda_stream != 0
    assert context.execute_async_v3(stream.cuda_stream), "execute_async_v3 reported a failure"
    stream.synchronize()
    reference = torch.relu(inputs.cpu().double() @ torch.from_numpy(weights).double())
    error = relative_error(output, reference)
    figure(f"TensorRT {trt.__version__}, rel. error {error:.1e}")
    # TensorRT may run the fp32 matmul with TF32 tensor cores.
    assert error <= tolerance("tf32"), f"the engine computed {output.tolist()}, expected {reference.tolist()}"


@pytest.mark.component("transformer_engine")
def test_transformer_engine_linear_runs_in_fp8(gpu, figure):
    import torch

    capability = gpu.get_device_capability(0)
    if not capability_at_least(capability, "fp8"):
        pytest.skip(f"FP8 needs compute capability >= {'.'.join(map(str, MIN_CAPABILITY['fp8']))} "
                    f"(Ada, Hopper and later); cuda:0 is {capability[0]}.{capability[1]}")
    te = import_component("transformer_engine", "transformer_engine.pytorch")
    recipe = import_component("transformer_engine", "transformer_engine.common.recipe")

    torch.manual_seed(0)
    layer = te.Linear(256, 256, bias=True, params_dtype=torch.float32).cuda()
    x = torch.randn(64, 256, device="cuda")
    with fp8_autocast(te, recipe.DelayedScaling()):
        out = layer(x)
    reference = torch.nn.functional.linear(x.cpu().double(), layer.weight.detach().cpu().double(),
                                           layer.bias.detach().cpu().double())
    error = relative_error(out, reference)
    figure(f"rel. error {error:.1e} (limit {FP8_GEMM_TOLERANCE:.1e})")
    # Both operands in E4M3 (3 mantissa bits): a correct FP8 GEMM is off by a few percent; a
    # silent fallback to bf16 would be far more accurate, a broken scale far less.
    failure = fp8_verdict(error)
    assert failure is None, failure


def test_cusparselt_loads_on_the_gpu_where_the_manifest_promises_it(gpu, expected):
    """The PyTorch build has cuSPARSELt compiled in (test_release_contents.py) and, on a GPU, its library loads
    and names its version (torch.backends.cusparselt.version())."""
    if "cusparselt" not in expected.get("stack", {}).get("torch_with", []):
        pytest.skip("the manifest does not list stack.torch_with: cusparselt")
    import torch

    backend = getattr(torch.backends, "cusparselt", None)  # PyTorch before 2.1 has no such backend
    assert backend is not None and backend.is_available(), \
        "PyTorch %s was built without cuSPARSELt (torch.backends.cusparselt.is_available() is False), which the " \
        "manifest promises (stack.torch_with)" % torch.__version__
    version = backend.version()
    assert version, "cuSPARSELt does not load on %s: torch.backends.cusparselt.version() is %r" % (
        torch.cuda.get_device_name(0), version)
