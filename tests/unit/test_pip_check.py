"""verify's prediction of the image's own `pip check` (verify/pip_check.py, pure): the lines pip prints,
in its words, for the image's interpreter; what a tolerance lets pass. The same prediction against real
pip, on a local index: tests/unit/test_verify_prediction.py."""

from packaging.tags import Tag

from ngcbuild.verify.pip_check import Installed, predict
from ngcbuild.verify.target import Target

AMD64 = Target("3.12.3", "linux/amd64", "2.39")
ARM64 = Target("3.11.2", "linux/arm64", "2.36")


def _predict(target, *dists):
    installed = {d.name.lower().replace("_", "-"): d for d in dists}
    return predict(installed, target.markers(), set(target.tag_priority))


def test_a_requirement_nothing_installs_is_pips_missing_line():
    # 25.12: tensorrt-cu13 installed with --no-deps; its sdist's setup.py requires the libraries wheel
    found = _predict(AMD64, Installed("tensorrt_cu13", "10.14.1.48.post1",
                                      ("tensorrt_cu13_libs==10.14.1.48.post1", "tensorrt_cu13_bindings==10.14.1.48.post1",
                                       'numpy; extra == "numpy"')),
                     Installed("tensorrt_cu13_bindings", "10.14.1.48.post1", ()))
    assert found.lines == ["tensorrt-cu13 10.14.1.48.post1 requires tensorrt-cu13-libs, which is not installed."]


def test_an_excluded_version_is_pips_conflict_line():
    found = _predict(AMD64, Installed("requests", "2.32.5", ("urllib3<3,>=1.21.1",)), Installed("urllib3", "1.21", ()))
    assert found.lines == ["requests 2.32.5 has requirement urllib3<3,>=1.21.1, but you have urllib3 1.21."]
    # a pre-release satisfies a specifier in pip check (prereleases admitted)
    assert not _predict(AMD64, Installed("te", "2.10", ("torch>=2.1",)),
                        Installed("torch", "2.10.0a0+b4e4ee81d3.nv25.12", ())).lines


def test_markers_are_the_images_interpreter_with_its_full_version():
    dist = Installed("a", "1", ('b; python_full_version < "3.12.1"', 'c; python_full_version >= "3.12.3"',
                                'd; platform_machine == "aarch64"', 'e; python_version < "3.12"'))
    assert _predict(AMD64, dist).lines == ["a 1 requires c, which is not installed."]
    # the MAJOR.MINOR.0 verify used to assume would have named b, not c
    assert _predict(Target("3.12.0", "linux/amd64", "2.39"), dist).lines == ["a 1 requires b, which is not installed."]
    assert _predict(ARM64, dist).lines == ["a 1 requires b, which is not installed.",  # 3.11.2 on aarch64
                                           "a 1 requires d, which is not installed.",
                                           "a 1 requires e, which is not installed."]


def test_extras_of_a_requirement_are_not_followed():
    found = _predict(AMD64, Installed("a", "1", ("b[fast]>=1",)), Installed("b", "1", ('c; extra == "fast"',)))
    assert found.lines == []


def test_a_wheel_for_another_platform_is_reported_by_pip_23_3_on():
    sbsa = Installed("nvidia-cusparselt-cu13", "0.8.0", (), ("py3-none-manylinux2014_sbsa",))
    fine = Installed("numpy", "2.3.5", (), ("cp311-cp311-manylinux_2_17_aarch64",))
    found = _predict(ARM64, sbsa, fine, Installed("pip", "25.3", ()))
    assert found.lines == ["nvidia-cusparselt-cu13 0.8.0 is not supported on this platform"]
    older = _predict(ARM64, sbsa, fine, Installed("pip", "23.2.1", ()))
    assert older.lines == [] and not older.platform_checked


def test_requirements_pip_cannot_parse_fail_and_leave_the_distribution_out_of_the_set():
    found = _predict(AMD64, Installed("a", "1", ("b >= 1 ;; nonsense",)), Installed("c", "1", ("a",)))
    assert found.lines[0].startswith("Error parsing dependencies of a:")
    assert found.lines[1:] == ["c 1 requires a, which is not installed."]


def test_a_distribution_whose_requirements_are_unknown_still_counts_as_installed():
    found = _predict(AMD64, Installed("a", "1", ("b>=2",)), Installed("b", "2.1", None))
    assert found.lines == [] and found.unknown == ["b 2.1"]


def test_a_tolerance_matches_the_image_steps_lines_exactly():
    from ngcbuild.manifest.pip_tolerances import Tolerance, literal

    line = "nvidia-cusparselt-cu13 0.8.0 is not supported on this platform"
    wrong = Tolerance(f"{literal('nvidia-cusparselt-cu13')} [^ ]+ is not supported on this platform", "test")
    other = Tolerance(f"{literal('nvidia-cusparselt')} [^ ]+ is not supported on this platform", "test")
    assert wrong.matches(line)
    assert not other.matches(line) and not wrong.matches("x" + line)
    assert not wrong.matches("nvidia-cusparselt-cu13 0.8.0 requires x, which is not installed.")
    assert Tag("py3", "none", "any") in AMD64.tag_priority
