"""The pure half of verify's closure check (verify/closure.py): which distributions the pins need on
the target, from their metadata, with the target's markers. On PyPI, as a process, in
tests/integration/test_verify_closure.py."""

import json

from packaging.utils import canonicalize_name

from ngcbuild.verify import closure
from ngcbuild.verify.target import Target

from ..conftest import REPO

DATA = REPO / "tests" / "data" / "verify"
AMD64_311 = Target("3.11.2", "linux/amd64", "2.36").markers()
REQUESTS = {"requests": "2.32.5", "certifi": "2025.11.12", "charset-normalizer": "3.4.4", "idna": "3.11"}


def _recorded():
    """The metadata of requests 2.32.5, three of its four requirements and urllib3 2.8.0 (as pip 23.2
    reported it from PyPI for Python 3.11, manylinux x86_64; descriptions cut)."""
    report = json.loads((DATA / "pip-report-requests-unpinned.json").read_text())
    return {canonicalize_name(i["metadata"]["name"]): (i["metadata"]["name"], i["metadata"]["version"],
                                                       tuple(i["metadata"].get("requires_dist") or []))
            for i in report["install"]}


def test_a_requirement_the_constraints_do_not_pin_is_named_with_who_requires_it():
    found = closure.walk(_recorded(), REQUESTS, AMD64_311)
    assert found.unpinned == {"urllib3": ("2.8.0", {"requests"})}
    assert found.reached == {*REQUESTS, "urllib3"}
    assert found.excluded == []


def test_the_closed_set_has_nothing_unpinned():
    found = closure.walk(_recorded(), {**REQUESTS, "urllib3": "2.8.0"}, AMD64_311)
    assert found.unpinned == {} and found.excluded == [] and len(found.reached) == 5


def test_a_pin_a_requirement_excludes_is_named_with_both_versions():
    found = closure.walk(_recorded(), {**REQUESTS, "urllib3": "1.21"}, AMD64_311)
    assert found.excluded == ["requests 2.32.5 requires urllib3<3,>=1.21.1, pinned urllib3==1.21"]
    assert found.unpinned == {}


def test_extras_nobody_asked_for_are_not_needed():
    # requests' PySocks and chardet, urllib3's brotli, h2, zstd are all behind `extra == ...`
    found = closure.walk(_recorded(), {**REQUESTS, "urllib3": "2.8.0"}, AMD64_311)
    assert not {"pysocks", "chardet", "brotli", "h2", "backports-zstd"} & found.reached


def _report(*items):
    return {canonicalize_name(n): (n, v, tuple(r)) for n, v, r in items}


def test_markers_are_the_targets_not_the_interpreter_running_pip():
    # jupyter-server's `overrides; python_version < "3.12"` (pip 23.2 on Python 3.11 resolved it for 25.12's 3.12)
    report = _report(("jupyter-server", "2.17.0", ['overrides>=5.0; python_version < "3.12"']),
                     ("overrides", "7.7.0", []))
    assert closure.walk(report, {"jupyter-server": "2.17.0"}, Target("3.12.3", "linux/amd64", "2.39").markers()).unpinned == {}
    on_311 = closure.walk(report, {"jupyter-server": "2.17.0"}, AMD64_311)
    assert on_311.unpinned == {"overrides": ("7.7.0", {"jupyter-server"})}
    # a requirement only aarch64 has, which pip on x86_64 did not resolve: named, without a version
    arm = closure.walk(_report(("torch", "2.13.0", ['cuda-toolkit[cudart]==13.0.3; platform_machine == "aarch64"'])),
                       {"torch": "2.13.0"}, Target("3.11.2", "linux/arm64", "2.36").markers())
    assert arm.unpinned == {"cuda-toolkit": ("", {"torch"})}


def test_an_extra_a_pin_asks_for_brings_its_requirements():
    report = _report(("a", "1", ["b[fast]>=1"]), ("b", "1", ['c; extra == "fast"', 'd; extra == "slow"']),
                     ("c", "1", []))
    found = closure.walk(report, {"a": "1", "b": "1"}, AMD64_311)
    assert found.unpinned == {"c": ("1", {"b"})}


def test_unread_pins_and_what_the_image_builds_are_compared_but_not_walked():
    report = _report(("torchao", "0.14.0", ["torch>=2.9"]), ("torch", "2.9.1", ["nvidia-nccl-cu12==2.27.5"]),
                     ("torchvision", "0.24.1", ["torch==2.9.1"]))
    pins = {"torchao": "0.14.0", "torchvision": "0.24.1"}
    found = closure.walk(report, pins, AMD64_311, outside={"torch": "2.10.0a0+b4e4ee81d3.nv25.12"})
    assert found.unpinned == {}  # PyPI's torch and its CUDA 12 wheels are pip's stand-in, not the image's
    assert found.excluded == ["torchvision 0.24.1 requires torch==2.9.1, installed by the image at "
                              "torch==2.10.0a0+b4e4ee81d3.nv25.12"]
    unread = closure.walk(report, {"torchao": "0.14.0", "torch": "2.13.0+cpu"}, AMD64_311, unread=frozenset({"torch"}))
    assert unread.unpinned == {} and unread.excluded == [] and unread.reached == {"torchao"}


def test_markers_are_evaluated_for_the_images_full_python_version():
    """python_full_version is the interpreter the manifest pins (3.11.2 for bookworm), not 3.11.0."""
    report = _report(("a", "1", ['b; python_full_version < "3.11.1"', 'c; python_full_version >= "3.11.2"']),
                     ("b", "1", []), ("c", "1", []))
    on_bookworm = closure.walk(report, {"a": "1"}, AMD64_311)
    assert on_bookworm.unpinned == {"c": ("1", {"a"})}
    # what MAJOR.MINOR.0 would have said: b needed, c not
    at_zero = closure.walk(report, {"a": "1"}, Target("3.11.0", "linux/amd64", "2.36").markers())
    assert at_zero.unpinned == {"b": ("1", {"a"})}


def test_a_requirement_the_base_meets_is_not_followed_and_only_for_the_distribution_named():
    """pip.met_by_base (tensorrt-cu13 requires tensorrt-cu13-libs, TensorRT's libraries in the base image):
    that one edge is not walked; the same requirement of another distribution still is."""
    report = _report(("tensorrt-cu13", "10.14.1.48.post1", ["tensorrt-cu13-libs==10.14.1.48.post1"]),
                     ("other", "1", ["tensorrt-cu13-libs"]))
    met = frozenset({("tensorrt-cu13", "tensorrt-cu13-libs")})
    alone = {"tensorrt-cu13": "10.14.1.48.post1"}
    assert closure.walk(report, alone, AMD64_311).unpinned == {"tensorrt-cu13-libs": ("", {"tensorrt-cu13"})}
    assert closure.walk(report, alone, AMD64_311, met=met).unpinned == {}
    both = closure.walk(report, {**alone, "other": "1"}, AMD64_311, met=met)
    assert both.unpinned == {"tensorrt-cu13-libs": ("", {"other"})}
