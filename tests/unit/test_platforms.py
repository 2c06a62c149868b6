"""Platforms other than the manifest's own: wheels whose metadata names the wrong platform (pip's
check in the image, `invoke verify`), the local name of another platform's base image, and a build
for a platform the manifest does not list."""

import json
import re
import shutil
import subprocess

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.engine.base_image import base_dockerfile, base_name
from ngcbuild.engine.options import check_platform_listed, options_from
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.verify import pins, report
from ngcbuild.verify.index import IndexFile
from ngcbuild.verify.metadata import Metadata
from ngcbuild.verify.target import Target
from ngcbuild.verify.wheel_tags import tags_of

from ..conftest import REPO

PROJECT = Project.at(REPO)
UNSUPPORTED = "nvidia-cusparselt-cu13 0.8.0 is not supported on this platform"


def _pip_check_line(release: str) -> str:
    dockerfile = render_files(PROJECT, load_release(PROJECT, release)).files["Dockerfile"].decode()
    start = dockerfile.index("/etc/pip/constraint.txt \\\n && ") + len("/etc/pip/constraint.txt \\\n && ")
    return dockerfile[start:dockerfile.index("\nENV PIP_CONSTRAINT", start)].replace("\\\n", "\n")


def _run_check(tmp_path, line: str, machine: str, pip_out: str, pip_status: int) -> int:
    """The rendered RUN line with a `python3` that prints `pip_out` and a `uname` that says `machine`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    lines = " ".join(f"'{line}'" for line in pip_out.split("\n"))
    (bin_dir / "python3").write_text(f"#!/bin/sh\nprintf '%s\\n' {lines}\nexit {pip_status}\n")
    (bin_dir / "uname").write_text(f"#!/bin/sh\necho {machine}\n")
    for tool in ("grep", "printf"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    for script in ("python3", "uname"):
        (bin_dir / script).chmod(0o755)
    return subprocess.run(["/bin/sh", "-c", line], env={"PATH": str(bin_dir)}, capture_output=True,
                          text=True, timeout=30).returncode


@pytest.mark.parametrize("machine,pip_out,status,passes", [
    ("x86_64", "No broken requirements found.", 0, True),
    ("aarch64", UNSUPPORTED, 1, True),  # the listed wheel, on the listed platform
    ("x86_64", UNSUPPORTED, 1, False),  # the same line on a platform the manifest does not name
    ("aarch64", "nvidia-nccl-cu13 2.28.9 is not supported on this platform", 1, False),  # another wheel
    ("aarch64", "torch 2.11.0 has requirement sympy>=1.13.3, but you have sympy 1.0.", 1, False),
    ("aarch64", "xnvidia-cusparselt-cu13 0.8.0 is not supported on this platform", 1, False),
])
def test_the_image_pip_check_tolerates_exactly_the_listed_wheel_tags(tmp_path, machine, pip_out, status, passes):
    line = _pip_check_line("cuda-dev")
    assert (_run_check(tmp_path, line, machine, pip_out, status) == 0) is passes


@pytest.mark.parametrize("machine,line,passes", [
    ("aarch64", UNSUPPORTED, True),
    ("x86_64", UNSUPPORTED, False),
    ("aarch64", "nvidia-nccl-cu13 2.28.9 is not supported on this platform", False),
    ("aarch64", "xnvidia-cusparselt-cu13 0.8.0 is not supported on this platform", False),
    ("aarch64", "nvidia-cusparselt-cu13 0.8.0 is not supported on this platform.", False),
    ("aarch64", "nvidia-cusparselt-cu13 requires x, which is not installed.", False),
])
def test_verify_tolerates_exactly_the_lines_the_image_lets_pass(tmp_path, machine, line, passes):
    """verify's prediction (manifest/pip_tolerances.py) and the rendered RUN step agree, line by line."""
    from ngcbuild.manifest.pip_tolerances import tolerances

    release = load_release(PROJECT, "cuda-dev").release
    platform = {"aarch64": "linux/arm64", "x86_64": "linux/amd64"}[machine]
    assert (_run_check(tmp_path, _pip_check_line("cuda-dev"), machine, line, 1) == 0) is passes
    assert any(t.matches(line) for t in tolerances(release, platform)) is passes


# What pip 25.3 printed in a venv with tensorrt-cu13-bindings 10.14.1.48.post1 (PyPI's cp311 wheel) and the
# wheels built from PyPI's tensorrt_cu13 and tensorrt 10.14.1.48.post1 sdists (issue 34, 2026-11-25).
TENSORRT_LIBS = "tensorrt-cu13 10.14.1.48.post1 requires tensorrt-cu13-libs, which is not installed."


@pytest.mark.parametrize("machine,pip_out,status,passes", [
    ("x86_64", TENSORRT_LIBS, 1, True),  # the base image carries TensorRT's libraries (pip.met_by_base)
    ("aarch64", TENSORRT_LIBS, 1, True),  # on every platform
    ("x86_64", "tensorrt-cu13 10.14.1.48.post1 requires tensorrt-cu13-bindings, which is not installed.", 1, False),
    ("x86_64", "tensorrt 10.14.1.48.post1 requires tensorrt-cu13-libs, which is not installed.", 1, False),
    ("x86_64", TENSORRT_LIBS + "\ntorchao 0.15.0 requires torch, which is not installed.", 1, False),
    ("x86_64", "tensorrt-cu13 10.14.1.48.post1 requires tensorrt-cu13-libs, which is not installed", 1, False),
    ("riscv64", TENSORRT_LIBS, 1, False),  # a machine no platform of ours names
])
def test_the_image_pip_check_tolerates_exactly_what_the_base_image_meets(tmp_path, machine, pip_out, status, passes):
    """Issue 34: 25.12's last build step failed on this line. It is tolerated (and only it) because the base
    carries TensorRT's libraries; the smoke suite's own pip check reads the same patterns."""
    line = _pip_check_line("25.12")
    assert (_run_check(tmp_path, line, machine, pip_out, status) == 0) is passes
    expected = json.loads(render_files(PROJECT, load_release(PROJECT, "25.12")).files["expected.json"])
    patterns = expected["pip_check_tolerated"].get(machine, [])
    in_suite = all(any(re.fullmatch(p, out) for p in patterns) for out in pip_out.split("\n"))
    assert in_suite is passes


def test_a_release_without_wrong_wheel_tags_runs_plain_pip_check():
    assert _pip_check_line("dev") == "python3 -m pip check --disable-pip-version-check"


def test_expected_json_names_the_tolerated_wheels_per_machine():
    expected = json.loads(render_files(PROJECT, load_release(PROJECT, "cuda-dev")).files["expected.json"])
    assert expected["pip_check_tolerated"] == {"aarch64": ["nvidia-cusparselt-cu13 [^ ]+ is not supported on this platform"]}


def test_compressed_tag_sets_are_expanded():
    assert tags_of("Tag: cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64\nTag: py3-none-any\n") == [
        "cp311-cp311-manylinux2014_x86_64", "cp311-cp311-manylinux_2_17_x86_64", "py3-none-any"]


TARGET = Target("3.11.2", "linux/arm64", "2.36")
FILE = "nvidia_cusparselt_cu13-0.8.0-py3-none-manylinux2014_aarch64.whl"


def _chosen(tags, filename=FILE, name="nvidia-cusparselt-cu13"):
    file = IndexFile(filename, "https://files.example/" + filename, "https://pypi.example/simple", None, "", False,
                     False, None)
    metadata = Metadata(name, "0.8.0", (), "", tags, "range reads of the wheel") if tags is not False else None
    return pins.Chosen(name, "0.8.0", file, metadata, "HTTP 500" if metadata is None else "")


def test_verify_fails_a_wheel_whose_metadata_names_no_tag_of_its_platform():
    row = pins.wheel_tag_row(_chosen(("py3-none-manylinux2014_sbsa",)), TARGET, {})
    assert row.status == report.FAILED and "manylinux2014_sbsa, no tag of linux/arm64" in row.reason


def test_verify_accepts_a_known_wrong_tag_with_its_evidence():
    row = pins.wheel_tag_row(_chosen(("py3-none-manylinux2014_sbsa",)), TARGET,
                             {"nvidia-cusparselt-cu13": "read on 2026-11-24"})
    assert row.status == report.VERIFIED and "read on 2026-11-24" in row.reason


def test_verify_is_quiet_about_wheels_whose_tags_fit():
    assert pins.wheel_tag_row(_chosen(("py3-none-manylinux2014_aarch64",)), TARGET, {}) is None
    assert pins.wheel_tag_row(_chosen(None, "x-1-py3-none-any.whl", "x"), TARGET, {}) is None


def test_an_unreadable_wheel_is_left_to_its_pip_row_which_is_not_verified():
    assert pins.wheel_tag_row(_chosen(False), TARGET, {}) is None
    row = pins._wheel_row(_chosen(False), TARGET)
    assert row.status == report.NOT_VERIFIED and "HTTP 500" in row.reason


def test_another_platform_s_base_gets_a_name_of_its_own():
    release = load_release(PROJECT, "cuda-dev").release
    assert base_name(release, "linux/amd64") == "debian:bookworm-slim"
    assert base_name(release, "linux/arm64") == "debian:bookworm-slim-arm64"
    dockerfile = base_dockerfile(release.base.bootstrap)
    assert dockerfile.startswith("FROM scratch\nADD rootfs.tar /\n") and 'CMD ["bash"]' in dockerfile


def test_a_platform_the_manifest_does_not_list_is_refused_unless_forced():
    release = load_release(PROJECT, "dev").release
    options = options_from(None, None, None, False, {}, platform="linux/arm64")
    with pytest.raises(UserError, match=r"manifests/dev.yaml: build.platforms: lists linux/amd64, not --platform "
                                        r"linux/arm64; .*--force-platform"):
        check_platform_listed(options, release, "manifests/dev.yaml")
    check_platform_listed(options_from(None, None, None, False, {}, platform="linux/arm64", force_platform=True),
                          release, "manifests/dev.yaml")
    check_platform_listed(options, load_release(PROJECT, "cuda-dev").release, "manifests/cuda-dev.yaml")
