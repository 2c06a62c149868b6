"""The start-up snippets of templates/image/entrypoint/entrypoint.d run by bash against a fake driver:
forward compatibility is enabled only when it was tried and works, on both sides of that test."""

import shutil
import subprocess

import pytest

from ..conftest import REPO

SNIPPET = REPO / "templates" / "image" / "entrypoint" / "entrypoint.d" / "55-cuda-forward-compat.sh"


PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {}  Tue Sep 23 09:56:04 UTC 2025\n"
# NVIDIA's open kernel module (the default since R560, the only one for Blackwell) words its line otherwise.
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {}  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"


def _run(tmp_path, kernel: str, cuinit_status: int | None, line: str = PROPRIETARY, cuda_version: str = "13.1.0",
         flat: bool = False):
    """Source the snippet (under set -e, as the entrypoint does) with a compat libcuda 590.44.01, a kernel
    module of version `kernel` reported in `line`'s form (None: the version file cannot be read), and a
    `python3` whose cuInit returns `cuinit_status` (None: no Python at all); the library in compat/lib, or in
    compat/ itself (`flat`, the 2020 bases' layout). Returns (stdout, LD_LIBRARY_PATH, the library's folder)."""
    compat = tmp_path / "compat" if flat else tmp_path / "compat" / "lib"
    compat.mkdir(parents=True)
    (compat / "libcuda.so.590.44.01").write_text("")
    driver = tmp_path / "version"
    if kernel is None:
        driver.mkdir()  # a folder: sed cannot read it (as root, a file's mode would not stop it)
    else:
        driver.write_text(line.format(kernel) + "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if cuinit_status is not None:
        probe = bin_dir / "python3"
        # The probe's environment is what a CUDA program would get: record it, answer as cuInit would.
        probe.write_text(f'#!/bin/sh\necho "$LD_LIBRARY_PATH" > {tmp_path}/probe-env\nexit {cuinit_status}\n')
        probe.chmod(0o755)
    # Only the tools the snippet uses are on PATH, so the host's own python3 is not.
    for tool in ("ls", "sed", "head"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "CUDA_VERSION": cuda_version, "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64",
           "_CUDA_COMPAT_PATH": str(tmp_path / "compat"), "_NVIDIA_DRIVER_VERSION_FILE": str(driver)}
    result = subprocess.run([shutil.which("bash"), "-c", f'set -e; source "{SNIPPET}"; echo "LD=$LD_LIBRARY_PATH"'], env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    return out, out.rsplit("LD=", 1)[1].strip(), compat


def test_forward_compat_is_enabled_when_the_probe_succeeds(tmp_path):
    out, ld, compat = _run(tmp_path, "580.159.03", 0)
    assert "CUDA Forward Compatibility mode ENABLED" in out
    assert "driver version 590.44.01 with kernel driver version 580.159.03" in out
    assert ld == f"{compat}:/usr/local/nvidia/lib64"
    # the probe ran with the compat folder first, as the programs after it will
    assert (tmp_path / "probe-env").read_text().strip() == f"{compat}:/usr/local/nvidia/lib64"


@pytest.mark.parametrize("status", [1, 3])  # cuInit's error (804 is truncated by exit codes; any non-zero)
def test_forward_compat_stays_off_when_the_probe_fails(tmp_path, status):
    out, ld, _ = _run(tmp_path, "580.159.03", status)
    assert "ENABLED" not in out and "not supported on this GPU" in out
    assert ld == "/usr/local/nvidia/lib64"


def test_forward_compat_stays_off_without_python_to_probe(tmp_path):
    out, ld, _ = _run(tmp_path, "580.159.03", None)
    assert "ENABLED" not in out and "not supported on this GPU" in out and ld == "/usr/local/nvidia/lib64"


def test_a_new_enough_driver_needs_no_forward_compat(tmp_path):
    out, ld, _ = _run(tmp_path, "590.48.01", 0)
    assert out.strip().startswith("LD=") and ld == "/usr/local/nvidia/lib64"
    assert not (tmp_path / "probe-env").exists()


@pytest.mark.parametrize("line", [PROPRIETARY, OPEN], ids=["proprietary", "open"])
def test_both_kernel_modules_report_their_version(tmp_path, line):
    out, ld, compat = _run(tmp_path, "570.172.08", 0, line)
    assert "driver version 590.44.01 with kernel driver version 570.172.08" in out
    assert ld == f"{compat}:/usr/local/nvidia/lib64"


def test_an_unreadable_version_file_leaves_forward_compat_off(tmp_path):
    out, ld, _ = _run(tmp_path, None, 0)
    assert out.strip().startswith("LD=") and ld == "/usr/local/nvidia/lib64"
    assert not (tmp_path / "probe-env").exists()


@pytest.mark.parametrize("cuda_version", ["13.1.0", "13.1.0.036", "13.1"])
def test_the_note_names_the_cuda_release_as_nvidia_does(tmp_path, cuda_version):
    """NVIDIA's 25.12 banner: "Using CUDA 13.1 driver version 590.44.01 ..."; cuda-dl-base's CUDA_VERSION has
    four parts, which ${CUDA_VERSION%.*} would print as 13.1.0."""
    out, _, _ = _run(tmp_path, "580.159.03", 0, cuda_version=cuda_version)
    assert "Using CUDA 13.1 driver version 590.44.01 with kernel driver version 580.159.03." in out
    out, _, _ = _run(tmp_path / "failing", "580.159.03", 1, cuda_version=cuda_version)
    assert "CUDA 13.1 may need a newer driver." in out


def test_the_2020_layout_with_the_libraries_in_compat_itself_is_found(tmp_path):
    """The CUDA 10.2 and 11.1 bases keep libcuda.so.* in /usr/local/cuda/compat, not in compat/lib."""
    out, ld, compat = _run(tmp_path, "440.33.01", 0, flat=True)
    assert "CUDA Forward Compatibility mode ENABLED" in out and ld == f"{compat}:/usr/local/nvidia/lib64"
