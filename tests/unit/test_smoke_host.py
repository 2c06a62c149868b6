"""Host mode and the in-image conftest: expectations from an environment, which checks apply, and
the GPU gate, run through real pytest processes (GPU parts only where torch is installed)."""

import importlib.util
import io
import json
import shutil
import subprocess
import sys

import pytest

from ngcbuild.core.errors import SmokeFailed
from ngcbuild.smoke import host
from ngcbuild.smoke.runner import CHECKS_DIR, suite_args

HAS_TORCH = importlib.util.find_spec("torch") is not None

GPU_HOST = {
    "python": "3.12", "site_packages": "/usr/local/lib/python3.12/dist-packages", "torch": "2.10.0a0+b4e4ee81d3",
    "cuda": "13.1", "cudnn": 91700, "nccl": [2, 28, 9], "mempool": True,
    "distributions": {"torch": "2.10.0a0+b4e4ee81d3", "nvidia_dali_cuda130": "1.53.0", "transformer_engine": "2.10.0",
                      "tensorrt": "10.14.1.48", "apex": "0.1", "numpy": "2.3.4"},
}


def test_expectations_from_a_gpu_environment():
    expected = host.expectations_from_env(GPU_HOST)
    assert expected["gpu"] == {"required": False, "min_compute_capability": None, "cuda": "13.1",
                               "cudnn": "9.17.0", "nccl": "2.28.9", "features": ["mempool"]}
    assert expected["components"] == {"pytorch": "2.10.0a0+b4e4ee81d3", "cuda": "13.1", "cudnn": "9.17.0",
                                      "nccl": "2.28.9", "apex": "0.1", "dali": "1.53.0", "tensorrt": "10.14.1.48",
                                      "transformer_engine": "2.10.0"}
    assert expected["components_in_image"] == sorted(expected["components"])
    assert expected["python"]["version"] == "3.12" and expected["release"] == "host"


def test_expectations_from_a_cpu_environment_name_no_cuda_stack():
    cpu = {"python": "3.11", "site_packages": "/x", "torch": "2.13.0+cpu", "cuda": None, "cudnn": None, "nccl": None,
           "mempool": True, "distributions": {"torch": "2.13.0+cpu"}}
    expected = host.expectations_from_env(cpu)
    assert expected["components"] == {"pytorch": "2.13.0+cpu"}
    assert expected["gpu"]["cuda"] is None and expected["gpu"]["cudnn"] is None and expected["gpu"]["nccl"] is None


def test_old_pytorch_reports_nccl_as_a_code():
    old = {**GPU_HOST, "torch": "1.5.0a0+8f84ded", "cudnn": 7605, "nccl": 2408, "mempool": False}
    assert host.expectations_from_env(old)["gpu"]["nccl"] == "2.4.8"
    assert host.expectations_from_env(old)["gpu"]["cudnn"] == "7.6.5"
    assert host.expectations_from_env(old)["gpu"]["features"] == []


def test_host_mode_deselects_image_checks_and_passes_the_gate_options(tmp_path):
    args = host.host_args(True, True, tmp_path / "j.xml", tmp_path / "m.json")
    assert args[args.index("-m") + 1] == "not image"
    assert "--require-gpu" in args and f"--perf-out={tmp_path / 'm.json'}" in args
    assert "junit_family=xunit1" in args  # figures live in testcase properties


def test_container_suite_args():
    assert "--require-gpu" not in suite_args() and "--perf" not in suite_args()
    assert suite_args(perf_only=True)[-2:] == ["-m", "perf"]
    assert "--perf-out=/opt/ngcbuild/out/perf-measured.json" in suite_args(perf=True)


def test_probe_refuses_a_python_without_torch(tmp_path):
    if HAS_TORCH:
        pytest.skip("this interpreter has torch; the refusal needs one without")
    from ngcbuild.core.errors import UserError

    with pytest.raises(UserError, match="has no PyTorch"):
        host.probe_environment(sys.executable)


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory):
    """An interpreter that cannot import torch, whatever this host has: a venv without site-packages."""
    folder = tmp_path_factory.mktemp("no-torch")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=120)
    return str(folder / "venv" / "bin" / "python")


@pytest.mark.parametrize("command", [
    ["-m", "ngcbuild.smoke.host"],  # what docs/gpu-runners.md gives a GPU machine without invoke
    ["-m", "ngcbuild", "smoke", "--host", "--release", "dev"],
    ["-m", "ngcbuild", "smoke", "--host", "--expect-from-env"],
])
def test_host_mode_says_one_line_where_the_python_has_no_torch(command, python_without_torch, tmp_path):
    from ..conftest import REPO

    done = subprocess.run([sys.executable, *command, "--python", python_without_torch], cwd=REPO, timeout=300,
                          capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"ngcbuild: {python_without_torch} has no PyTorch (") and \
        "name one with --python" in done.stderr, done.stderr


# --- the in-image conftest, run by real pytest processes --------------------------------------

SAMPLE = '''
import pytest

@pytest.mark.component("apex")
def test_needs_apex(): pass

@pytest.mark.component("pytorch")
def test_needs_pytorch(): pass

@pytest.mark.torch_api("torch.compile")
def test_needs_compile(): pass

@pytest.mark.gpu_feature("mempool")
def test_needs_mempool(): pass

@pytest.mark.perf
def test_perf_only(): pass
'''


def run_sample(tmp_path, expected, *args, sample=SAMPLE):
    checks = tmp_path / "checks"
    checks.mkdir(exist_ok=True)
    for name in ("conftest.py", "gpu_facts.py", "processes.py"):
        shutil.copy(CHECKS_DIR / name, checks / name)
    (checks / "test_sample.py").write_text(sample)
    (tmp_path / "expect").mkdir()
    (tmp_path / "expect" / "expected.json").write_text(json.dumps(expected))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", str(checks), *args],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={"NGCBUILD_SMOKE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin",
                               "PYTHONDONTWRITEBYTECODE": "1"})


def manifest_like(pytorch="2.13.0+cpu", features=(), in_image=("pytorch",)):
    return {"release": "r1", "components": {"pytorch": pytorch, "apex": "0.1"}, "components_in_image": list(in_image),
            "gpu": {"features": list(features)}}


def test_checks_that_do_not_apply_skip_with_the_manifest_reason(tmp_path):
    done = run_sample(tmp_path, manifest_like(pytorch="1.5.0a0+8f84ded"))
    assert "1 passed, 3 skipped, 1 deselected" in done.stdout, done.stdout + done.stderr
    assert "apex is not among the components of r1" in done.stdout  # documented-only: not in the image
    assert "torch.compile appeared in PyTorch 2.0; the manifest pins 1.5.0a0+8f84ded" in done.stdout
    assert "does not list gpu.features: mempool" in done.stdout


def test_applicable_checks_run_and_perf_runs_only_with_perf(tmp_path):
    expected = manifest_like(features=["mempool"], in_image=["pytorch", "apex"])
    without, with_perf = tmp_path / "without", tmp_path / "with"
    without.mkdir()
    with_perf.mkdir()
    done = run_sample(without, expected)
    assert "4 passed, 1 deselected" in done.stdout, done.stdout + done.stderr
    done = run_sample(with_perf, expected, "--perf")
    assert "5 passed" in done.stdout and "deselected" not in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(not HAS_TORCH, reason="the GPU gate imports torch; this interpreter has none")
def test_gpu_gate_skips_without_a_gpu_and_fails_under_require_gpu(tmp_path):
    sample = "def test_uses_gpu(gpu):\n    pass\n"
    skipped = run_sample(tmp_path, manifest_like(), sample=sample)
    assert "1 skipped" in skipped.stdout and "no GPU visible to PyTorch" in skipped.stdout
    (tmp_path / "strict").mkdir()
    failed = run_sample(tmp_path / "strict", manifest_like(), "--require-gpu", sample=sample)
    assert failed.returncode == 1 and "--require-gpu: no GPU visible" in failed.stdout


@pytest.mark.skipif(not HAS_TORCH, reason="host mode runs the checks with a Python that has torch")
def test_host_run_on_a_cpu_machine_skips_every_gpu_check_and_writes_no_figures(tmp_path):
    facts = host.probe_environment(sys.executable)
    expected = json.dumps(host.expectations_from_env(facts)).encode()
    out = io.StringIO()
    result = host.run_host(tmp_path, expected, "host", perf=True, out=out)
    assert result["failed"] == 0 and result["skipped"] >= 20 and result["passed"] >= 3
    perf = json.loads((tmp_path / "host" / "perf.json").read_text())
    assert perf["status"] == "no-gpu" and perf["figures"] == {} and "no GPU visible" in perf["reason"]
    with pytest.raises(SmokeFailed, match="host smoke failed"):
        host.run_host(tmp_path, expected, "host", require_gpu=True, out=io.StringIO())


def test_pytorch_2_5_has_mempool_but_not_the_snapshot_the_check_reads():
    """Host mode gated MemPool on the class alone; MemPool.snapshot() came in 2.6."""
    for torch_version, features in (("2.5.1+cu124", []), ("2.6.0+cu126", ["mempool"])):
        facts = {**GPU_HOST, "torch": torch_version, "distributions": {"torch": torch_version}}
        assert host.expectations_from_env(facts)["gpu"]["features"] == features


def test_the_mempool_check_skips_on_pytorch_2_5_even_where_the_manifest_lists_it(tmp_path):
    sample = ('import pytest\n\n@pytest.mark.gpu_feature("mempool")\n'
              '@pytest.mark.torch_api("torch.cuda.MemPool.snapshot()")\ndef test_pool(): pass\n')
    done = run_sample(tmp_path, manifest_like(pytorch="2.5.1", features=["mempool"]), sample=sample)
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "torch.cuda.MemPool.snapshot() appeared in PyTorch 2.6; the manifest pins 2.5.1" in done.stdout


def test_a_component_whose_module_does_not_import_is_reported_as_such(tmp_path):
    """TensorRT with install: base, from a base image without its Python bindings."""
    sample = ("from conftest import import_component\n\n"
              "def test_trt():\n    import_component('tensorrt', 'tensorrt_not_here')\n")
    expected = {**manifest_like(in_image=["pytorch", "tensorrt"]), "release": "25.12"}
    expected["components"]["tensorrt"] = "10.14.1.48"
    done = run_sample(tmp_path, expected, sample=sample)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr
    assert ("tensorrt 10.14.1.48 is in the image by the manifest of 25.12, but its Python module does not import: "
            "`import tensorrt_not_here`: No module named 'tensorrt_not_here'") in done.stdout
    assert "Traceback" not in done.stdout and "raise ImportError" not in done.stdout


FAKE_TORCH_ON_H100 = '''
"""torch as the gpu fixture sees it on one H100: available, one device, compute capability 9.0."""
__version__ = "1.5.0a0+8f84ded"


class _Version:
    cuda = "10.2"


version = _Version()


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def get_device_name(index):
        return "NVIDIA H100 80GB HBM3"

    @staticmethod
    def get_device_capability(index):
        return (9, 0)
'''


def test_an_old_image_on_a_newer_gpu_family_skips_naming_it_even_under_require_gpu(tmp_path):
    """20.02 (Pascal, Volta, Turing) on a Hopper: the GPU checks do not apply; not a failure."""
    sample = "def test_uses_gpu(gpu):\n    pass\n"
    expected = {**manifest_like(pytorch="1.5.0a0+8f84ded"), "release": "20.02"}
    expected["gpu"]["families"] = ["Pascal", "Volta", "Turing"]
    (tmp_path / "checks" / "torch").mkdir(parents=True)
    (tmp_path / "checks" / "torch" / "__init__.py").write_text(FAKE_TORCH_ON_H100)
    done = run_sample(tmp_path, expected, "--require-gpu", sample=sample)
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout + done.stderr
    assert ("cuda:0 is NVIDIA H100 80GB HBM3 (compute capability 9.0, Hopper); "
            "the manifest of 20.02 supports Pascal, Volta, Turing") in done.stdout
    (tmp_path / "listed").mkdir()
    (tmp_path / "listed" / "checks" / "torch").mkdir(parents=True)
    (tmp_path / "listed" / "checks" / "torch" / "__init__.py").write_text(FAKE_TORCH_ON_H100)
    expected["gpu"]["families"] = ["Hopper"]
    done = run_sample(tmp_path / "listed", expected, "--require-gpu", sample=sample)
    assert "1 passed" in done.stdout, done.stdout + done.stderr
