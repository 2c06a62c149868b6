"""What NVIDIA's notes promise and nothing checked before issue 53: a PyTorch built with cuSPARSELt (the
build's flag, the manifest's promise, the smoke suite's probe with a stand-in torch), and TensorRT's trtexec
in /opt/tensorrt/bin made by the image itself where the base lacks it (the rendered step against a stand-in
base)."""

import importlib.util
import json
import subprocess
import sys
import types
import warnings
from functools import lru_cache

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.smoke.runner import CHECKS_DIR

from ..conftest import REPO


@lru_cache(maxsize=None)
def _files(release: str) -> dict:
    project = Project.at(REPO)
    return {k: v.decode() for k, v in render_files(project, load_release(project, release)).files.items()
            if k in ("Dockerfile", "expected.json")}


def test_25_12_builds_torch_with_cusparselt_and_the_suite_checks_it():
    expected = json.loads(_files("25.12")["expected.json"])
    assert "cusparselt" in expected["stack"]["torch_with"]
    assert "USE_CUSPARSELT=1" in _files("25.12")["Dockerfile"].replace('"', "")
    pytorch = load_release(Project.at(REPO), "25.12").release.components["pytorch"]
    assert "cusparselt" in pytorch.needs and pytorch.build_env["USE_CUSPARSELT"] == "1"


def test_cuda_dev_promises_the_cusparselt_its_pypi_torch_requires():
    assert "cusparselt" in json.loads(_files("cuda-dev")["expected.json"])["stack"]["torch_with"]


@pytest.mark.parametrize("release", ["dev", "20.02", "20.12"])
def test_releases_without_cusparselt_promise_none(release):
    assert "cusparselt" not in json.loads(_files(release)["expected.json"])["stack"]["torch_with"]


# --- the suite's probe, with a stand-in torch ------------------------------------------------------------

def _probe(monkeypatch, backends):
    torch = types.ModuleType("torch")
    torch.backends = backends
    monkeypatch.setitem(sys.modules, "torch", torch)
    spec = importlib.util.spec_from_file_location("smoke_release_contents", CHECKS_DIR / "test_release_contents.py")
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():  # its `image` mark is the suite's own, registered by its conftest
        warnings.simplefilter("ignore")
        spec.loader.exec_module(module)
    return module._has_capability("cusparselt")


@pytest.mark.parametrize("compiled_in", [True, False])
def test_the_probe_reads_torch_backends_cusparselt(monkeypatch, compiled_in):
    backends = types.SimpleNamespace(cusparselt=types.SimpleNamespace(is_available=lambda: compiled_in))
    assert _probe(monkeypatch, backends) is compiled_in


def test_a_pytorch_before_the_backend_existed_has_no_cusparselt(monkeypatch):
    assert _probe(monkeypatch, types.SimpleNamespace()) is False


# --- trtexec in /opt/tensorrt/bin, made by the image -------------------------------------------------------

def _step(tmp_path) -> tuple[str, object, object]:
    lines = _files("25.12")["Dockerfile"].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RUN mkdir -p /opt/tensorrt/bin"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    folder, source = tmp_path / "opt-tensorrt-bin", tmp_path / "usr-src-tensorrt-bin"
    text = "\n".join(lines[start:end + 1])[len("RUN "):]
    return (text.replace("/opt/tensorrt/bin", str(folder)).replace("/usr/src/tensorrt/bin", str(source)),
            folder, source)


def _executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho '&&&& PASSED TensorRT.trtexec'\n")
    path.chmod(0o755)


def test_a_base_without_the_folder_gets_a_link_to_tensorrts_own_trtexec(tmp_path):
    command, folder, source = _step(tmp_path)
    _executable(source / "trtexec")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert (folder / "trtexec").is_symlink() and (folder / "trtexec").resolve() == (source / "trtexec").resolve()


def test_a_base_that_has_it_keeps_its_own(tmp_path):
    command, folder, source = _step(tmp_path)
    _executable(folder / "trtexec")
    _executable(source / "trtexec")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert not (folder / "trtexec").is_symlink()


def test_a_base_with_neither_fails_the_build_at_that_step_naming_both(tmp_path):
    command, folder, source = _step(tmp_path)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"trtexec: not in {folder} nor in {source}/trtexec of the base "
                                   "(stack.command_sources)")


def test_the_step_runs_in_the_runtime_stage_before_any_build():
    dockerfile = _files("25.12")["Dockerfile"]
    assert dockerfile.index("RUN mkdir -p /opt/tensorrt/bin") < dockerfile.index("AS builder")


def test_a_source_of_a_command_the_manifest_does_not_promise_is_one_line(scratch):
    scratch.copy_release("25.12")
    path = scratch.root / "manifests" / "25.12.yaml"
    path.write_text(path.read_text().replace("    trtexec: [/usr/src/tensorrt/bin/trtexec]",
                                             "    polygraphy: [/usr/src/tensorrt/bin/polygraphy]"))
    done = scratch.ngcbuild("render", "--release", "25.12")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ("manifests/25.12.yaml: stack.command_sources.polygraphy: polygraphy is not in stack.commands; expected "
            "a source of a command the image promises") in done.stderr


def test_several_sources_are_tried_in_order(scratch, tmp_path):
    scratch.copy_release("25.12")
    path = scratch.root / "manifests" / "25.12.yaml"
    path.write_text(path.read_text().replace("    trtexec: [/usr/src/tensorrt/bin/trtexec]",
                                             "    trtexec: [/usr/src/tensorrt/bin/trtexec, /usr/bin/trtexec]"))
    project = Project.at(scratch.root)
    lines = render_files(project, load_release(project, "25.12")).files["Dockerfile"].decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RUN mkdir -p /opt/tensorrt/bin"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    folder, first, second = tmp_path / "folder", tmp_path / "first", tmp_path / "second"
    command = ("\n".join(lines[start:end + 1])[len("RUN "):].replace("/opt/tensorrt/bin", str(folder))
               .replace("/usr/src/tensorrt/bin", str(first)).replace("/usr/bin", str(second)))
    _executable(second / "trtexec")
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert (folder / "trtexec").resolve() == (second / "trtexec").resolve()
    _executable(first / "trtexec")
    (folder / "trtexec").unlink()
    subprocess.run(["sh", "-c", command], check=True, timeout=30)
    assert (folder / "trtexec").resolve() == (first / "trtexec").resolve()


# --- the GPU check of cuSPARSELt, run by pytest as the suite runs it, with a stand-in torch ------------------

STAND_IN_TORCH = '''
"""torch as the suite sees it: {gpu} GPU, cuSPARSELt {compiled} (version {version!r})."""
__version__ = "2.10.0a0+b4e4ee81d3.nv25.12"


class _Version:
    cuda = "13.1"


version = _Version()


class cuda:
    @staticmethod
    def is_available():
        return {gpu}

    @staticmethod
    def device_count():
        return 1 if {gpu} else 0

    @staticmethod
    def get_device_name(index):
        return "NVIDIA H200"

    @staticmethod
    def get_device_capability(index):
        return (9, 0)


class _CuSparseLt:
    @staticmethod
    def is_available():
        return {compiled}

    @staticmethod
    def version():
        return {version!r}


class backends:
    cusparselt = _CuSparseLt
'''


def _gpu_check(tmp_path, *args, gpu=True, compiled=True, version=801, torch_with=None):
    """test_gpu_components.py's cuSPARSELt check against 25.12's expectations, as `smoke --host` runs it."""
    import shutil

    checks, expect = tmp_path / "checks", tmp_path / "expect"
    checks.mkdir()
    expect.mkdir()
    for name in ("conftest.py", "gpu_facts.py", "processes.py", "test_gpu_components.py"):
        shutil.copy(CHECKS_DIR / name, checks / name)
    (checks / "torch").mkdir()
    (checks / "torch" / "__init__.py").write_text(STAND_IN_TORCH.format(gpu=gpu, compiled=compiled, version=version))
    expected = json.loads(_files("25.12")["expected.json"])
    if torch_with is not None:
        expected["stack"]["torch_with"] = torch_with
    (expect / "expected.json").write_text(json.dumps(expected))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", "-k", "cusparselt", str(checks), *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={"NGCBUILD_SMOKE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"})


def test_without_a_gpu_the_cusparselt_check_skips_in_the_projects_words_and_fails_under_require_gpu(tmp_path):
    (tmp_path / "cpu").mkdir()
    done = _gpu_check(tmp_path / "cpu", gpu=False)
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout + done.stderr
    assert ("no GPU visible to PyTorch 2.10.0a0+b4e4ee81d3.nv25.12 (CUDA build: 13.1; /dev/nvidiactl "
            in done.stdout), done.stdout
    (tmp_path / "strict").mkdir()
    done = _gpu_check(tmp_path / "strict", "--require-gpu", gpu=False)
    assert done.returncode == 1 and "1 error" in done.stdout, done.stdout + done.stderr  # the gpu fixture fails
    assert "Failed: --require-gpu: no GPU visible to PyTorch" in done.stdout


def test_on_a_gpu_the_cusparselt_check_passes_where_the_library_loads(tmp_path):
    done = _gpu_check(tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("compiled,version,said", [
    (False, None, "PyTorch 2.10.0a0+b4e4ee81d3.nv25.12 was built without cuSPARSELt "
                  "(torch.backends.cusparselt.is_available() is False), which the manifest promises"),
    (True, None, "cuSPARSELt does not load on NVIDIA H200: torch.backends.cusparselt.version() is None"),
])
def test_on_a_gpu_the_cusparselt_check_fails_naming_what_is_missing(tmp_path, compiled, version, said):
    done = _gpu_check(tmp_path, compiled=compiled, version=version)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr
    assert said in done.stdout, done.stdout


def test_a_release_that_promises_no_cusparselt_skips_the_gpu_check_saying_so(tmp_path):
    done = _gpu_check(tmp_path, "--require-gpu", compiled=False, version=None, torch_with=[])
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "the manifest does not list stack.torch_with: cusparselt" in done.stdout
