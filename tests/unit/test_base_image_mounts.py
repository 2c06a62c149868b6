"""engine/base_image.py: a debootstrap that stopped halfway leaves /proc and /sys mounted in its root; they
are unmounted (deepest first, a name with a space too) so that the temporary folder can be removed."""

import os
import shutil
import subprocess

import pytest

from ngcbuild.engine.base_image import _unmount_under


def _mounted(path) -> bool:
    with open("/proc/self/mountinfo") as info:
        return any(line.split()[4].replace("\\040", " ") == str(path) for line in info)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root (CI and our machines run as root)")
def test_mounts_left_in_the_root_are_unmounted_and_the_folder_removed(tmp_path):
    root = tmp_path / "root"
    points = [root / "proc", root / "sys", root / "sys" / "inner dir"]
    for point in points:
        point.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "none", str(point)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"cannot mount a tmpfs here: {done.stderr}")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "none", str(outside)], check=True)
    try:
        assert all(_mounted(point) for point in points)
        _unmount_under(root)
        assert not any(_mounted(point) for point in points)
        assert _mounted(outside)  # only what lies under the root
        shutil.rmtree(root)
    finally:
        subprocess.run(["umount", "-l", str(outside)], capture_output=True)
        for point in reversed(points):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
