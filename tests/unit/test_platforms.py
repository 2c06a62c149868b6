"""Platforms other than the manifest's own: wheels whose metadata names the wrong platform (pip's
check in the image, `invoke verify`), the local name of another platform's base image, and a build
for a platform the manifest does not list."""

import io
import json
import random
import re
import shutil
import subprocess
import zipfile

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.engine.base_image import base_dockerfile, base_name
from ngcbuild.engine.options import check_platform_listed, options_from
from ngcbuild.manifest import verify
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.wheel_tags import RangeFile, WheelMetadataError, declared_tags, tags_of
from ngcbuild.render.context import render_files

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


def _wheel(tag_lines: str, name="demo-1.0.dist-info") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("demo/_native.so", random.Random(7).randbytes(3_000_000))  # a body to read past
        wheel.writestr(f"{name}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n{tag_lines}")
        wheel.writestr(f"{name}/METADATA", "Name: demo\nVersion: 1.0\n")
    return buffer.getvalue()


class _Server:
    """Answers HEAD with the size and GET with the asked range of `data`, counting requests."""

    def __init__(self, data: bytes):
        self.data, self.requests = data, []

    def __call__(self, request, timeout):
        self.requests.append(request.get_header("Range"))
        data = self.data
        if request.get_method() == "GET":
            first, last = (int(x) for x in re.fullmatch(r"bytes=(\d+)-(\d+)", request.get_header("Range")).groups())
            body = data[first:last + 1]
        else:
            body = b""

        class Response(io.BytesIO):
            headers = {"content-length": str(len(data))}

            def __enter__(self):
                return self

        response = Response(body)
        response.headers = _Headers({"Content-Length": str(len(data))})
        return response


class _Headers(dict):
    def get(self, key, default=None):
        return next((v for k, v in self.items() if k.lower() == key.lower()), default)


def test_declared_tags_are_read_from_the_wheel_file_with_a_few_range_requests():
    data = _wheel("Tag: py3-none-manylinux2014_sbsa\n")
    server = _Server(data)
    assert declared_tags("https://example.invalid/demo.whl", server, 5) == ["py3-none-manylinux2014_sbsa"]
    fetched = sum(int(b) - int(a) + 1 for a, b in (re.findall(r"\d+", r) for r in server.requests if r))
    assert len(server.requests) <= 6 and fetched < len(data) / 5  # the directory and the member, not the body


def test_compressed_tag_sets_are_expanded():
    assert tags_of("Tag: cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64\nTag: py3-none-any\n") == [
        "cp311-cp311-manylinux2014_x86_64", "cp311-cp311-manylinux_2_17_x86_64", "py3-none-any"]


@pytest.mark.parametrize("data,message", [
    (b"not a zip at all" * 100, "not a zip file"),
    (_wheel("Tag: py3-none-any\n", name="a/b.dist-info"), "0 WHEEL files"),
])
def test_a_wheel_that_is_not_one_is_a_clear_error(data, message):
    with pytest.raises(WheelMetadataError, match=message):
        declared_tags("https://example.invalid/x.whl", _Server(data), 5)


def test_a_short_answer_to_a_range_request_is_an_error():
    reader = RangeFile(100, lambda first, last: b"x")
    with pytest.raises(WheelMetadataError, match="asked for 10 bytes, got 1"):
        reader.read(10)


TARGET = verify.Target("3.11", "linux/arm64", "2.36")
FILE = "nvidia_cusparselt_cu13-0.8.0-py3-none-manylinux2014_aarch64.whl"


def test_verify_fails_a_wheel_whose_metadata_names_no_tag_of_its_platform():
    row = verify.wheel_tag_row("nvidia-cusparselt-cu13", "0.8.0", FILE, "u", TARGET, {},
                               lambda url: ["py3-none-manylinux2014_sbsa"])
    assert row.status == verify.FAILED and "manylinux2014_sbsa, no tag of linux/arm64" in row.reason


def test_verify_accepts_a_known_wrong_tag_with_its_evidence():
    row = verify.wheel_tag_row("nvidia-cusparselt-cu13", "0.8.0", FILE, "u", TARGET,
                               {"nvidia-cusparselt-cu13": "read on 2026-11-24"}, lambda url: ["py3-none-manylinux2014_sbsa"])
    assert row.status == verify.VERIFIED and "read on 2026-11-24" in row.reason


def test_verify_is_quiet_about_wheels_whose_tags_fit():
    assert verify.wheel_tag_row("x", "1", FILE, "u", TARGET, {}, lambda url: ["py3-none-manylinux2014_aarch64"]) is None
    assert verify.wheel_tag_row("x", "1", "x-1-py3-none-any.whl", "u", TARGET, {}, None) is None


def test_an_unreadable_wheel_is_not_verified_never_passed():
    def broken(url):
        raise WheelMetadataError("HTTP 500")

    row = verify.wheel_tag_row("x", "1", FILE, "u", TARGET, {}, broken)
    assert row.status == verify.NOT_VERIFIED and "HTTP 500" in row.reason


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
