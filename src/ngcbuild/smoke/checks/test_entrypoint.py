"""The NGC-style entrypoint prints the banner and the driver warning, then runs the command."""

import os

import pytest
from processes import run

# Checks of the image itself: host mode (no image) deselects them.
pytestmark = pytest.mark.image


def _run_entrypoint(expected, *command):
    return run([expected["entrypoint"], *command], timeout=60)


def test_banner_is_printed_first(expected):
    result = _run_entrypoint(expected, "true")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:len(expected["banner"])] == expected["banner"]


def test_driver_warning_matches_the_gpu_visibility(expected):
    result = _run_entrypoint(expected, "true")
    driver_visible = os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")
    warned = "WARNING: The NVIDIA Driver was not detected." in result.stdout
    assert warned != driver_visible, result.stdout


def test_shm_note_matches_the_shm_size(expected):
    result = _run_entrypoint(expected, "true")
    stat = os.statvfs("/dev/shm")
    small = stat.f_blocks * stat.f_frsize < 1024 ** 3
    assert ("NOTE: The SHMEM allocation limit" in result.stdout) == small, result.stdout


def test_command_runs_with_its_exit_status(expected):
    result = _run_entrypoint(expected, "sh", "-c", "echo from-command; exit 3")
    assert result.returncode == 3
    assert result.stdout.rstrip().endswith("from-command")


def test_entrypoint_started_this_suite():
    # PID 1 is the command the entrypoint exec'ed: this interpreter's parent chain starts with it.
    with open("/proc/1/cmdline", "rb") as handle:
        argv = handle.read().split(b"\0")
    assert b"run_checks.py" in b" ".join(argv)
