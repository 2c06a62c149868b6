"""Fixtures of the in-image smoke suite: expectations rendered from the manifest, the image's own
config, and the GPU gate (skip with a reason, or fail under --require-gpu)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXPECT_DIR = Path(os.environ.get("NGCBUILD_SMOKE_DIR", "/opt/ngcbuild")) / "expect"


def pytest_addoption(parser):
    parser.addoption("--require-gpu", action="store_true", help="a GPU check that would skip fails instead")


@pytest.fixture(scope="session")
def expected():
    return json.loads((EXPECT_DIR / "expected.json").read_text())


@pytest.fixture(scope="session")
def image_config():
    """`Config` of the image under test, as the engine reports it (env, labels, workdir, entrypoint)."""
    return json.loads((EXPECT_DIR / "image.json").read_text())


@pytest.fixture(scope="session")
def installed():
    """Distributions a plain interpreter of the image sees (without the mounted pytest)."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(output.stdout)


@pytest.fixture
def gpu(request):
    """torch.cuda, when a GPU is visible; otherwise skip with the reason (fail under --require-gpu)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return torch.cuda
    reason = (f"no GPU visible to PyTorch {torch.__version__} (CUDA build: {torch.version.cuda}; "
              f"/dev/nvidiactl {'present' if os.path.exists('/dev/nvidiactl') else 'absent'})")
    if request.config.getoption("--require-gpu"):
        pytest.fail(f"--require-gpu: {reason}")
    pytest.skip(reason)
