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
    wrong = [(i + 1, want, lines[i] if i < len(lines) else None) for i, want in enumerate(expected["banner"])
             if i >= len(lines) or lines[i] != want]
    assert not wrong, f"the banner differs from the manifest's (line, expected, printed): {wrong}"


def test_driver_warning_matches_the_gpu_visibility(expected):
    result = _run_entrypoint(expected, "true")
    driver_visible = os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")
    warned = "WARNING: The NVIDIA Driver was not detected." in result.stdout
    assert warned != driver_visible, (
        f"a driver is {'visible' if driver_visible else 'not visible'}, but the entrypoint "
        f"{'warned that none was detected' if warned else 'printed no driver warning'}:\n{result.stdout}")


def test_shm_note_matches_the_shm_size(expected):
    result = _run_entrypoint(expected, "true")
    stat = os.statvfs("/dev/shm")
    small = stat.f_blocks * stat.f_frsize < 1024 ** 3
    noted = "NOTE: The SHMEM allocation limit" in result.stdout
    assert noted == small, (f"/dev/shm is {stat.f_blocks * stat.f_frsize >> 20} MiB, but the entrypoint "
                            f"{'printed' if noted else 'did not print'} the shared-memory note:\n{result.stdout}")


def test_command_runs_with_its_exit_status(expected):
    result = _run_entrypoint(expected, "sh", "-c", "echo from-command; exit 3")
    assert result.returncode == 3, (f"the entrypoint exited {result.returncode} for a command that exited 3: "
                                    "it does not pass the command's exit status on")
    assert result.stdout.rstrip().endswith("from-command"), f"the command's output is not last:\n{result.stdout}"


def test_entrypoint_started_this_suite():
    # The entrypoint exec's the command: the suite's interpreter is PID 1 itself, so that `docker stop`
    # signals reach the command and not a shell that ignores them.
    with open("/proc/1/cmdline", "rb") as handle:
        argv = [part.decode("utf-8", "replace") for part in handle.read().split(b"\0") if part]
    assert any(part.endswith("run_checks.py") for part in argv), f"PID 1 is not this suite: {argv}"
    assert os.getpid() == 1, (f"the entrypoint did not exec the command: PID 1 is {' '.join(argv[:2])}, "
                              f"the suite runs as PID {os.getpid()}")
