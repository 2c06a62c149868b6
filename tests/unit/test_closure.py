"""The pure half of verify's closure check (verify/closure.py): which distributions the pins need on
the target, read from a pip report, and pip's reason for a set that does not resolve. pip itself, on
PyPI and on a local index, is in tests/integration/test_verify_closure.py."""

import json

from ngcbuild.verify import closure

from ..conftest import REPO

DATA = REPO / "tests" / "data" / "verify"
AMD64_311 = closure.marker_environment("3.11", "x86_64")
REQUESTS = {"requests": "2.32.5", "certifi": "2025.11.12", "charset-normalizer": "3.4.4", "idna": "3.11"}


def _recorded():
    """pip 23.2's report for requests 2.32.5 and three of its four requirements, urllib3 left unpinned
    (PyPI, Python 3.11, manylinux x86_64; descriptions cut)."""
    return json.loads((DATA / "pip-report-requests-unpinned.json").read_text())


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
    return {"install": [{"metadata": {"name": n, "version": v, "requires_dist": r}} for n, v, r in items]}


def test_markers_are_the_targets_not_the_interpreter_running_pip():
    # jupyter-server's `overrides; python_version < "3.12"` (pip 23.2 on Python 3.11 resolved it for 25.12's 3.12)
    report = _report(("jupyter-server", "2.17.0", ['overrides>=5.0; python_version < "3.12"']),
                     ("overrides", "7.7.0", []))
    assert closure.walk(report, {"jupyter-server": "2.17.0"}, closure.marker_environment("3.12", "x86_64")).unpinned == {}
    on_311 = closure.walk(report, {"jupyter-server": "2.17.0"}, AMD64_311)
    assert on_311.unpinned == {"overrides": ("7.7.0", {"jupyter-server"})}
    # a requirement only aarch64 has, which pip on x86_64 did not resolve: named, without a version
    arm = closure.walk(_report(("torch", "2.13.0", ['cuda-toolkit[cudart]==13.0.3; platform_machine == "aarch64"'])),
                       {"torch": "2.13.0"}, closure.marker_environment("3.11", "aarch64"))
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


def test_pips_reason_for_a_conflict_is_its_error_line_and_the_dependency_first():
    reason = closure.conflict_reason((DATA / "pip-output-conflict.txt").read_text())
    assert reason.startswith("Cannot install -r conf.txt (line 1) and urllib3==1.21 because these package "
                             "versions have conflicting dependencies. (requests 2.32.5 depends on urllib3<3 and >=1.21.1;")
    assert "ResolutionImpossible" not in reason and "loosen" not in reason
    assert closure.conflict_reason("WARNING: x\nsomething broke\n") == "something broke"


def test_a_conflict_of_what_a_distribution_requires_is_told_from_a_pin_without_files():
    assert closure.dependency_conflict((DATA / "pip-output-conflict.txt").read_text())
    # pip 23.2 against an index answering 500: the pin has no file, nothing depends on anything
    no_file = ("The conflict is caused by:\n    The user requested requests==2.32.5\n"
               "    The user requested (constraint) requests==2.32.5\n\nTo fix this you could try to:\n"
               "1. loosen the range of package versions you've specified\n")
    assert not closure.dependency_conflict(no_file)
    assert not closure.dependency_conflict("ERROR: No matching distribution found for urllib3<3")
