"""NCCL: an all-reduce across every visible GPU under torchrun gives the exact sum."""

import subprocess
import sys
from pathlib import Path

from gpu_facts import launcher_command
from processes import run

SCRIPT = Path(__file__).with_name("nccl_allreduce.py")
TIMEOUT_S = 300


def test_nccl_allreduce_under_torchrun_is_exact(gpu, figure):
    import torch

    world = gpu.device_count()
    command = launcher_command(sys.executable, torch.__version__, world, str(SCRIPT))
    try:
        done = run(command, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the all-reduce across {world} GPU(s) hung for {TIMEOUT_S}s: "
                             f"{' '.join(command)}") from None
    log = (done.stdout + done.stderr)[-3000:]
    figure(f"{world} rank(s)")
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{log}"
    assert f"allreduce ok world={world}" in done.stdout, f"rank 0 did not report an exact sum:\n{log}"
