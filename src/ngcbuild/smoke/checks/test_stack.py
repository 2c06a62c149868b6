"""The software stack is the one the manifest names, checked without a GPU: versions that the
libraries themselves report, shared libraries the dynamic linker finds and that load, no unresolved
dependency, nvcc building a CUDA extension, a whole pip environment.

None of these needs a device, so none skips for lack of one; a check skips only where it does not
apply (the manifest names no such component, the image has no CUDA_HOME)."""

import ctypes
import importlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import List

import pytest
from gpu_facts import (
    cudnn_number,
    major_minor,
    manifest_nccl,
    nccl_library_tuple,
    nccl_tuple,
)
from processes import run
from version_rule import accepts, mismatch

from conftest import each, import_component, load_expected

# A library whose dependencies ldd cannot resolve prints "libfoo.so.1 => not found".
_NOT_FOUND = re.compile(r"^\s*(\S+) => not found", re.M)


def _stack():
    return load_expected().get("stack", {})


def pytest_generate_tests(metafunc):
    # One check per component, so the summary names what is wrong.
    if "module_component" in metafunc.fixturenames:
        each(metafunc, "module_component", sorted(_stack().get("modules", {})),
             f"{load_expected().get('release')} declares no component with a Python module to check")
    if "library_component" in metafunc.fixturenames:
        each(metafunc, "library_component", sorted(_stack().get("libraries", {})),
             f"{load_expected().get('release')} declares no component with a shared library to check")


def test_cuda_runtime_version_matches_the_manifest(expected, figure):
    import torch

    wanted = expected["gpu"]["cuda"]
    figure(f"CUDA {torch.version.cuda}")
    if not wanted:
        pytest.skip("the manifest names no CUDA component")
    # torch.version.cuda names MAJOR.MINOR: the rule compares the manifest's CUDA at that precision
    assert torch.version.cuda and mismatch(torch.version.cuda, major_minor(wanted)) is None, \
        f"torch.version.cuda is {torch.version.cuda}, the manifest says {wanted}"


def test_cudnn_version_matches_the_manifest(expected, figure):
    import torch

    wanted = expected["gpu"]["cudnn"]
    if not wanted:
        pytest.skip("the manifest names no cuDNN component")
    have = torch.backends.cudnn.version()
    figure(f"cuDNN {have}")
    assert have == cudnn_number(wanted), \
        f"torch.backends.cudnn.version() is {have}, the manifest's {wanted} is {cudnn_number(wanted)}"


def test_nccl_version_matches_the_manifest(expected, figure):
    """The NCCL this process loaded (ncclGetVersion) where torch links it as a library, else the
    version torch was compiled with (torch.cuda.nccl.version()); the two are reported side by side."""
    import torch

    wanted = expected["gpu"]["nccl"]
    if not wanted:
        pytest.skip("the manifest names no NCCL component")
    built = nccl_tuple(torch.cuda.nccl.version())
    loaded = loaded_nccl()
    have = loaded[1] if loaded else built
    figure("NCCL {}.{}.{}".format(*have) + (f" ({loaded[0]}; torch built with " + "{}.{}.{})".format(*built)
                                               if loaded else " (torch.cuda.nccl.version(): linked statically)"))
    source = f"{loaded[0]} (ncclGetVersion)" if loaded else "torch.cuda.nccl.version()"
    assert have == manifest_nccl(wanted), f"{source} is {have}, the manifest says {wanted}"


def loaded_nccl():
    """(path, version) of the libnccl this process has loaded with torch, or None where torch carries
    NCCL statically (no libnccl among the process's mappings) or the library cannot say."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "/libnccl.so" in line})
    if not paths:
        return None
    code = ctypes.c_int(0)
    library = ctypes.CDLL(paths[0])  # already loaded: the same handle, nothing new is loaded
    if library.ncclGetVersion(ctypes.byref(code)) != 0:
        return None
    return paths[0], nccl_library_tuple(code.value)


def test_component_reports_the_manifest_version(module_component, figure):
    entry = _stack()["modules"][module_component]
    module = import_component(module_component, entry["module"])
    have = getattr(module, "__version__", None)
    figure(f"{entry['module']} {have}")
    assert have is not None, f"{entry['module']} has no __version__"
    why = mismatch(str(have), entry["version"])
    assert why is None, (f"{entry['module']}.__version__ is {have}, the manifest says {entry['version']} "
                         f"(which accepts {accepts(entry['version'])}): {why}")


IMPORT_REPORT = Path(__file__).with_name("import_messages.py")


def test_component_imports_without_warnings(module_component, figure):
    """`import MODULE` in a fresh interpreter prints no warning and logs no "skipping" (torchao built for
    another torch skips its kernels with a log line, torchvision without its image library warns), except
    what the manifest accepts for the component with a reason (components.NAME.import_warnings)."""
    entry = _stack()["modules"][module_component]
    result = run([sys.executable, str(IMPORT_REPORT), entry["module"]], timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("ngcbuild-import-report ")]
    assert result.returncode == 0 and lines, \
        f"importing {entry['module']} in a fresh interpreter failed (exit {result.returncode}): {result.stderr[-1500:]}"
    report = json.loads(lines[-1].split(" ", 1)[1])
    assert report["error"] is None, f"import {entry['module']} failed: {report['error']}"
    accepted = entry.get("import_warnings", [])
    said = report["warnings"] + report["skipping"]
    unexpected = [message for message in said if not any(fragment in message for fragment in accepted)]
    figure(f"{len(said)} message(s), {len(said) - len(unexpected)} accepted by the manifest" if said else "quiet")
    assert not unexpected, (f"import {entry['module']} says {len(unexpected)} thing(s) the manifest does not accept "
                            f"(components.{module_component}.import_warnings): " + " | ".join(unexpected)[:1500])


def _linker_cache() -> dict:
    """soname -> path, as `ldconfig -p` lists the dynamic linker's cache."""
    out = run(["ldconfig", "-p"], check=True, timeout=60).stdout
    found = {}
    for line in out.splitlines()[1:]:
        name, _, path = line.strip().partition(" => ")
        found.setdefault(name.split(" (")[0], path)
    return found


@pytest.mark.image
def test_library_is_in_the_linker_cache_and_loads(library_component, figure):
    """Found by the dynamic linker for programs that are not Python, and loadable (its own
    dependencies resolve)."""
    prefix = _stack()["libraries"][library_component] + ".so"
    matches = {name: path for name, path in _linker_cache().items() if name.startswith(prefix)}
    assert matches, f"ldconfig -p lists no {prefix}*: the linker cannot find {library_component}'s library"
    figure(", ".join(sorted(matches)))
    for name in sorted(matches):
        ctypes.CDLL(name)  # by soname, as a program would


def _unresolved(path: Path) -> List[str]:
    """What `ldd` cannot resolve for a library, in the image's own environment. Extensions
    (torchvision's, one built with cpp_extension) link torch's libraries without a run path: in a
    user's process `import torch` has loaded them before, so a name this process has loaded counts
    as resolved (and nothing else: no search path is added that the image does not set)."""
    import torch  # noqa: F401  (what a user's process has loaded before an extension)

    out = run(["ldd", str(path)], timeout=60).stdout
    return [name for name in _NOT_FOUND.findall(out) if name not in _loaded_names()]


def _loaded_names():
    """File names of the shared objects this process has mapped (their sonames, for torch/lib)."""
    with open("/proc/self/maps") as maps:
        return {os.path.basename(line.split()[-1]) for line in maps if ".so" in line}


def _shared_objects(directory: Path):
    for path in sorted(directory.rglob("*.so*")):
        if path.is_file() and not path.is_symlink() and ".so" in path.name and not path.name.endswith(".py"):
            yield path


@pytest.mark.image
@pytest.mark.slow
def test_no_library_of_the_stack_has_an_unresolved_dependency(figure):
    stack = _stack()
    roots = {Path(importlib.import_module(entry["module"]).__file__).parent
             for entry in stack.get("modules", {}).values()}
    if stack.get("cuda_wheels"):
        roots.add(Path(stack["cuda_wheels"]))
    allowed = set(stack.get("unresolved_ok", []))
    checked, broken, tolerated = 0, {}, set()
    for root in sorted(roots):
        for path in _shared_objects(root):
            found = set(_unresolved(path))
            checked += 1
            tolerated |= found & allowed
            if found - allowed:
                broken[str(path)] = sorted(found - allowed)
    figure(f"{checked} libraries" + (f"; unresolved as the manifest allows: {', '.join(sorted(tolerated))}"
                                     if tolerated else ""))
    assert checked, f"no shared library under {sorted(map(str, roots))}"
    assert not broken, f"unresolved dependencies (ldd): {broken}"


def _cuda_home(expected):
    home = expected.get("stack", {}).get("cuda_home")
    if not home:
        pytest.skip(f"the manifest of {expected['release']} names no CUDA_HOME for the image")
    return Path(home)


@pytest.mark.image
def test_nvcc_is_on_path_in_cuda_home_and_matches_cuda(expected, figure):
    home = _cuda_home(expected)
    assert os.environ.get("CUDA_HOME") == str(home), f"CUDA_HOME is {os.environ.get('CUDA_HOME')!r}, not {home}"
    nvcc = shutil.which("nvcc")
    assert nvcc, (f"nvcc is not on PATH ({os.environ.get('PATH')}); "
                  f"{home / 'bin' / 'nvcc'} {'exists' if (home / 'bin' / 'nvcc').exists() else 'does not exist'}")
    assert os.path.realpath(nvcc) == os.path.realpath(str(home / "bin" / "nvcc")), \
        f"the nvcc on PATH is {nvcc}, not CUDA_HOME's {home / 'bin' / 'nvcc'}"
    out = run(["nvcc", "--version"], timeout=60, check=True).stdout
    release = re.search(r"release ([0-9]+\.[0-9]+)", out)
    figure(out.strip().splitlines()[-1])
    assert release, f"nvcc --version says no release: {out!r}"
    assert mismatch(release.group(1), major_minor(expected["gpu"]["cuda"])) is None, \
        f"nvcc is CUDA {release.group(1)}, the manifest's CUDA is {expected['gpu']['cuda']}"


KERNEL = r"""
#include <cuda_runtime.h>
__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
void add_one_launch(float* x, int n) { add_one<<<(n + 255) / 256, 256>>>(x, n); }
"""
BINDING = r"""
#include <torch/extension.h>
void add_one_launch(float* x, int n);
torch::Tensor add_one(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "a float32 CUDA tensor");
  auto y = x.contiguous().clone();
  add_one_launch(y.data_ptr<float>(), (int) y.numel());
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }
"""
# A compiler's diagnostic line ("file:3:10: fatal error: cuda_runtime.h: No such file or directory").
_DIAGNOSTIC = re.compile(r"\b(fatal )?error\b\s*:", re.I)


@pytest.fixture(scope="session")
def cuda_extension(expected, tmp_path_factory):
    """A CUDA extension compiled with nvcc and linked by torch.utils.cpp_extension (no GPU needed), as a
    user's `docker build` extending the image would: with the image's environment as it is. Where no
    GPU is visible, torch reads the architectures from the image's TORCH_CUDA_ARCH_LIST; an image
    without it fails here as it would for the user (torch asks the absent device).

    Built with cpp_extension.load from a binding (.cpp) and a kernel (.cu) that includes only the CUDA
    runtime: the same path as load_inline (which prepends torch's headers to the kernel's source, that
    nvcc then parses once per architecture of the list: minutes on two cores for the same proof)."""
    _cuda_home(expected)
    from torch.utils.cpp_extension import load

    build = tmp_path_factory.mktemp("cuda_extension")
    (build / "binding.cpp").write_text(BINDING)
    (build / "kernel.cu").write_text(KERNEL)
    try:
        return load(name="ngcbuild_add_one", sources=[str(build / "binding.cpp"), str(build / "kernel.cu")],
                    build_directory=str(build), verbose=False)
    except Exception as exc:  # torch's own error may name no cause: say what the image had
        arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
        text = str(exc).strip()
        # The compiler's diagnostics first (the summary shows the first line), then the whole output.
        found = [line.strip()[-200:] for line in text.splitlines() if _DIAGNOSTIC.search(line)][:3]
        cause = " | ".join(found) or (text.splitlines() or [""])[0][:300]
        pytest.fail(f"building a one-kernel CUDA extension with torch.utils.cpp_extension failed "
                    f"(TORCH_CUDA_ARCH_LIST={arch!r}, CUDA_HOME={os.environ.get('CUDA_HOME')!r}): "
                    f"{type(exc).__name__}: {cause}\n{text[-1500:]}", pytrace=False)


@pytest.mark.image
@pytest.mark.slow
def test_nvcc_builds_a_cuda_extension(cuda_extension, figure):
    library = Path(cuda_extension.__file__)
    out = run(["ldd", str(library)], timeout=60).stdout
    figure(f"{library.name}, {library.stat().st_size // 1024} KiB")
    assert "libcudart" in out, f"the extension does not link the CUDA runtime:\n{out}"
    assert not _unresolved(library), f"the extension has unresolved dependencies: {_unresolved(library)}"


@pytest.mark.image
@pytest.mark.slow
def test_the_cuda_extension_runs_on_the_gpu(gpu, cuda_extension):
    import torch

    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    assert torch.equal(cuda_extension.add_one(x).cpu(), x.cpu() + 1)


@pytest.mark.image
def test_pip_check_passes(expected):
    out = run([sys.executable, "-m", "pip", "check", "--disable-pip-version-check"],
                         timeout=300)
    # The manifest's known lines on this machine (pip.wrong_wheel_tags, pip.met_by_base; each a pattern
    # of a whole line, as the build's own pip check reads them with grep -x -E), and nothing else.
    import platform

    tolerated = [re.compile(p) for p in expected.get("pip_check_tolerated", {}).get(platform.machine(), [])]
    left = [line for line in out.stdout.splitlines() if not any(p.fullmatch(line) for p in tolerated)]
    found = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 0 or (tolerated and not left and not out.stderr.strip()), \
        "pip check fails: {}".format(found[:1500])
