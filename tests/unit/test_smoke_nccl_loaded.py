"""The NCCL check reads the version of the libnccl the process has loaded (ncclGetVersion), in
NCCL's own encoding of each era, and falls back to torch's compile-time report when none is loaded.
A small library with NCCL's entry point stands in for libnccl.so.2 (built with the system's gcc)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ngcbuild.smoke.runner import CHECKS_DIR
from ngcbuild.smoke.staging import SHARED_MODULES

from ..conftest import fail_in_ci_else_skip

# The checks import the shared modules staged beside their expectations (smoke/staging.py): loaded here by path.
PROBE = f"""
import ctypes, importlib.util, json, sys
sys.path.insert(0, {str(CHECKS_DIR)!r})
for path in {[str(p) for p in SHARED_MODULES]!r}:
    name = path.rsplit("/", 1)[-1][:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[name])
if len(sys.argv) > 1:
    ctypes.CDLL(sys.argv[1])  # as `import torch` loads libnccl through libtorch_cuda
from test_stack import loaded_nccl
print(json.dumps(loaded_nccl()))
"""


def fake_nccl(tmp_path, code: int) -> str:
    if shutil.which("gcc") is None:
        fail_in_ci_else_skip("no gcc to build the stand-in libnccl")
    folder = tmp_path / str(code)
    folder.mkdir()
    source = folder / "nccl.c"
    source.write_text(f"int ncclGetVersion(int* version) {{ *version = {code}; return 0; }}\n")
    library = folder / "libnccl.so.2"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def loaded(*library):
    done = subprocess.run([sys.executable, "-c", PROBE, *library], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("code,version", [(2408, [2, 4, 8]), (2708, [2, 7, 8]), (22809, [2, 28, 9])])
def test_the_loaded_library_reports_its_version_in_its_era_encoding(tmp_path, code, version):
    path = fake_nccl(tmp_path, code)
    assert loaded(path) == [path, version]


def test_without_a_loaded_libnccl_the_check_falls_back_to_torch():
    assert loaded() is None
