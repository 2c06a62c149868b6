"""The pure parts of `ngcbuild bump` (no index, no resolver): the policy as the manifest states it, the draft's
UNKNOWN values, which wheels a target installs, who requires whom on a target, the roots of a release,
the reasons a pin stays below the newest, the texts' headers and the dist-info names in banners.
bump itself, against an index, is tests/integration/test_bump.py."""

import pytest
from packaging.version import Version

from ngcbuild.bump.components import _rename_dist_info
from ngcbuild.bump.propose import requirers, roots_of
from ngcbuild.bump.texts import header_of
from ngcbuild.core.errors import ManifestError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.unknown import unknown_keys
from ngcbuild.resolver.whole_set import Dist, installs_on
from ngcbuild.verify.target import Target

from ..conftest import REPO

X86 = Target("3.11.2", "linux/amd64", "2.36")
ARM = Target("3.11.2", "linux/arm64", "2.36")
ENVIRONMENTS = [X86.markers(), ARM.markers()]


def test_cuda_dev_states_its_policy():
    policy = load_release(Project.at(REPO), "cuda-dev").release.bump
    assert policy.leader == "torch" and policy.cuda.major == "13" and policy.cuda.carried_by == "cuda-toolkit"
    assert "cuda-toolkit[nvcc,crt,nvvm,cccl]" in policy.require


@pytest.mark.parametrize("policy, key, words", [
    ("bump: {hold: {numpy: {versions: 'rm -rf /', reason: x}}}", "bump.hold.numpy.versions", "version specifier"),
    ("bump: {hold: {numpy: {versions: '<2'}}}", "bump.hold.numpy.reason", "required"),
    ("bump: {cuda: {major: 'thirteen', carried_by: cuda-toolkit}}", "bump.cuda.major", "pattern"),
    ("bump: {require: {'x; os_name == \"posix\"': y}}", "bump.require", "no markers"),
    ("bump: {leader: 'torch; rm'}", "bump.leader", "package name"),
    ("bump: {candidates: 100}", "bump.candidates", "10"),
    ("bump: {hold: {numpy: {versions: '<2', reason: x, until: tomorrow}}}", "bump.hold.numpy.until", "unknown key"),
])
def test_a_policy_is_validated_like_every_key(scratch, policy, key, words):
    scratch.copy_release("dev")
    path = scratch.root / "manifests" / "dev.yaml"
    own = path.read_text().split("\nbump:\n", 1)[0]  # dev's own policy replaced by the one tried
    path.write_text(own + "\n" + policy + "\n")
    with pytest.raises(ManifestError) as caught:
        load_release(Project.at(scratch.root), "dev")
    assert caught.value.key.startswith(key) and words in str(caught.value), str(caught.value)


def test_unknown_values_are_found_wherever_they_are():
    data = {"summary": "UNKNOWN", "base": {"image": "UNKNOWN"}, "banner": {"copyright": ["a", "UNKNOWN"]},
            "components": {"cuda": {"version": "13.1.0", "source": "not UNKNOWN"}}, "n": 1}
    assert unknown_keys(data) == ["summary", "base.image", "banner.copyright.1"]


def test_a_draft_with_unknown_values_never_loads(scratch):
    scratch.copy_release("dev")
    scratch.manifest("next", "extends: dev\ncomponents:\n  pytorch:\n    version: UNKNOWN\n")
    scratch.constraints("next", "torch==2.13.0+cpu\n")
    with pytest.raises(ManifestError, match=r"1 value is still UNKNOWN \(a draft\): components.pytorch.version"):
        load_release(Project.at(scratch.root), "next")


@pytest.mark.parametrize("filename, target, version", [
    ("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", X86, "2.15.0"),
    ("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", ARM, None),
    ("torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl", X86, None),
    ("torch-2.15.0-cp311-cp311-manylinux_2_39_x86_64.whl", X86, None),  # newer glibc than bookworm's
    ("torchvision-0.29.2-py3-none-manylinux_2_28_aarch64.whl", ARM, "0.29.2"),
    ("cuda_bindings-13.5.0-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", X86, "13.5.0"),
    ("cuda_bindings-13.5.0-cp312-abi3-manylinux_2_17_x86_64.whl", X86, None),  # abi3 from 3.12 on
    ("filelock-3.1.0-py3-none-any.whl", ARM, "3.1.0"),
    ("filelock-3.1.0.tar.gz", X86, None),
    ("not a wheel.whl", X86, None),
])
def test_which_wheels_a_target_installs(filename, target, version):
    assert installs_on(filename, target) == (Version(version) if version else None)


def _dist(name, version, *requires):
    return Dist(name, version, tuple(requires))


def test_who_requires_whom_on_the_targets_with_markers_and_extras():
    dists = {d.key: d for d in (
        _dist("torch", "2.15.0", 'cuda-toolkit[cublas]==13.2.2; platform_system == "Linux"',
              'triton~=3.9.0; platform_machine == "x86_64"', 'pywin32; sys_platform == "win32"'),
        _dist("cuda-toolkit", "13.2.2", 'nvidia-cublas==13.4.*; extra == "cublas"', 'nvidia-npp; extra == "npp"'),
        _dist("nvidia-cublas", "13.4.1.3"), _dist("triton", "3.9.0"), _dist("ninja", "1.13.2"))}
    found = requirers(dists, ENVIRONMENTS)
    assert sorted(found) == ["cuda-toolkit", "nvidia-cublas", "triton"]  # no pywin32, no npp (extra not asked)
    assert [str(r.specifier) for _, r in found["nvidia-cublas"]] == ["==13.4.*"]


def test_the_roots_are_the_pins_nothing_requires_and_the_components_packages():
    loaded = load_release(Project.at(REPO), "cuda-dev")
    pins = {p.key: p for p in loaded.constraints.pins}
    metadata = {key: _dist(pin.name, pin.version) for key, pin in pins.items()}
    metadata["torch"] = _dist("torch", "2.11.0", "filelock", "sympy>=1.13.3", "setuptools")
    roots = roots_of(loaded, metadata, ENVIRONMENTS)
    assert "filelock" not in roots and "sympy" not in roots and "setuptools" not in roots
    assert {"ninja", "pip", "torch", "cuda-toolkit", "nvidia-cuda-nvcc", "nvidia-dali-cuda130"} <= set(roots)
    assert len(roots) == len(set(roots))


def test_headers_say_which_release_and_day():
    text = ("# Proposed by ngcbuild bump --release cuda-dev from https://pypi.org/simple, read 2026-11-25:\n"
            "extends: cuda-dev\n")
    assert header_of(text) == ("cuda-dev", "2026-11-25")
    assert header_of("# a release written by hand\nextends: cuda-dev\n") is None
    assert header_of("# Proposed by ngcbuild bump --release x\n read 2026-11-25") is None  # one line only


def test_dist_info_folders_follow_their_distribution():
    moved = {"torch": ("2.11.0", "2.15.0"), "nvidia-cudnn-cu13": ("9.19.0.56", "9.26.0.51")}
    line = "see /usr/lib/python3.11/dist-packages/torch-2.11.0.dist-info and torchvision-0.26.0.dist-info"
    assert _rename_dist_info(line, moved) == ("see /usr/lib/python3.11/dist-packages/torch-2.15.0.dist-info and "
                                              "torchvision-0.26.0.dist-info")
    assert _rename_dist_info("nvidia_cudnn_cu13-9.19.0.56.dist-info", moved) == "nvidia_cudnn_cu13-9.26.0.51.dist-info"
    assert _rename_dist_info("torch-2.10.0.dist-info", moved) == "torch-2.10.0.dist-info"  # not the old pin: left

