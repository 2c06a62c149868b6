"""`ngcbuild bump` as a process against a local index of small fake distributions served as
https://pypi.org through a TLS-intercepting proxy of the test's own (tests/fake_index.py's FakePyPI):
uv resolves for real, verify's reader reads the metadata for real, nothing reaches the real PyPI
(whose state moves).

The index holds three torch releases: 2.1.0 (the release's), 2.2.0 (CUDA 13.1) and 2.3.0 (CUDA 14,
which the release's policy does not admit); the proposal must take 2.2.0 with what it pins, the
newest of the rest the whole set admits, drop what only 2.1.0 needed, explain every pin below the
newest, and be the same bytes when asked again."""

import pytest

from ..conftest import run_command
from ..fake_index import LINUX_311, FakePyPI, Wheel
from ..helpers import wheel_release_manifest

pytestmark = pytest.mark.index

LINUX = 'platform_system == "Linux"'


def _torch(version: str, cuda: str, cudnn: str, triton: str, *more: str) -> Wheel:
    local = "cu" + "".join(cuda.split(".")[:2])
    return Wheel("torch", version, [f"cuda-toolkit[cublas]=={cuda}; {LINUX}", f"nvidia-cudnn-cu13=={cudnn}; {LINUX}",
                                    f"triton{triton}; {LINUX}", "filelock", *more],
                 tag=LINUX_311, files={"torch/version.py": f"__version__ = '{version}+{local}'\n"})


WHEELS = [
    _torch("2.1.0", "13.0.1", "9.1.0", "==3.1.0", "oldthing"),
    _torch("2.2.0", "13.1.0", "9.2.0", "~=3.2.0"),
    _torch("2.3.0", "14.0.0", "9.3.0", "~=3.3.0"),
    *(Wheel("cuda-toolkit", v, [f'nvidia-cublas=={b}.*; extra == "cublas"'])
      for v, b in (("13.0.1", "13.0.1.5"), ("13.1.0", "13.1.0.2"), ("14.0.0", "14.0.0.1"))),
    *(Wheel("nvidia-cublas", v, tag=LINUX_311) for v in ("13.0.1.5", "13.1.0.2", "14.0.0.1")),
    *(Wheel("nvidia-cudnn-cu13", v, tag=LINUX_311) for v in ("9.1.0", "9.2.0", "9.3.0")),
    *(Wheel("triton", v, tag=LINUX_311) for v in ("3.1.0", "3.2.0", "3.2.1", "3.3.0")),
    *(Wheel("torchvision", v, [f"torch=={t}", "numpy"], tag=LINUX_311,
            files={"torchvision/version.py": f"__version__ = '{v}+cu13'\n"})
      for v, t in (("0.16.0", "2.1.0"), ("0.17.0", "2.2.0"), ("0.18.0", "2.3.0"))),
    Wheel("filelock", "3.0.0"), Wheel("filelock", "3.1.0"), Wheel("filelock", "4.0.0", requires_python=">=3.12"),
    Wheel("numpy", "1.0.0", tag=LINUX_311), Wheel("numpy", "2.0.0", tag=LINUX_311),
    Wheel("ninja", "1.0.0"), Wheel("ninja", "1.1.0"),
    Wheel("oldthing", "1.0"),
]

MANIFEST = wheel_release_manifest(
    "a small release from fake wheels, for bump's tests",
    """\
  leader: torch
  cuda: {major: '13', carried_by: cuda-toolkit}
  hold:
    numpy: {versions: '<2', reason: the fake extension is built against NumPy 1}
""",
    pip="  layers:\n    - [filelock, oldthing]\n",
    more="""\
components:
  cudnn:
    version: 9.1.0
    install: pip
    package: nvidia-cudnn-cu13
  pytorch:
    version: 2.1.0
    install: pip
    env_version: 2.1.0+cu130
    module_version: 2.1.0+cu130
  triton:
    version: 3.1.0
    install: pip
  torchvision:
    version: 0.16.0
    install: pip
    env_version: 0.16.0+cu13
banner:
  license:
    - PyTorch is under BSD-3-Clause; see /usr/local/lib/python3.11/dist-packages/torch-2.1.0.dist-info.
""")

CONSTRAINTS = """\
torch==2.1.0
cuda-toolkit==13.0.1
nvidia-cublas==13.0.1.5
nvidia-cudnn-cu13==9.1.0
triton==3.1.0
torchvision==0.16.0
filelock==3.0.0
numpy==1.0.0
ninja==1.0.0
oldthing==1.0
"""


@pytest.fixture
def pypi(tmp_path):
    (tmp_path / "proxy-ca").mkdir()
    with FakePyPI(tmp_path / "proxy-ca") as served:
        served.index.add_wheels(*WHEELS)
        yield served


@pytest.fixture
def project(scratch):
    scratch.manifest("fake", MANIFEST)
    scratch.constraints("fake", CONSTRAINTS)
    return scratch


def bump(project, pypi, *args):
    result = run_command("ngcbuild", "bump", *args, cwd=project.root, env=pypi.env, timeout=600)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _pins(path) -> dict:
    return dict(line.split("==") for line in path.read_text().splitlines() if line and not line.startswith("#"))


def test_the_newest_admitted_set_with_its_reasons_and_the_same_bytes_again(project, pypi):
    first = bump(project, pypi, "--release", "fake", "--as", "fake-next")
    assert first.returncode == 0, first.stdout + first.stderr
    manifest = project.root / "manifests" / "fake-next.yaml"
    constraints = project.root / "constraints" / "fake-next.txt"
    report = project.root / "build" / "fake-next" / "bump.md"
    # torch 2.3.0 needs CUDA 14: the newest CUDA 13 torch is taken, with what it pins
    assert _pins(constraints) == {
        "cuda-toolkit": "13.1.0", "filelock": "3.1.0", "ninja": "1.1.0", "numpy": "1.0.0", "nvidia-cublas": "13.1.0.2",
        "nvidia-cudnn-cu13": "9.2.0", "torch": "2.2.0", "torchvision": "0.17.0", "triton": "3.2.1"}
    text = manifest.read_text()
    assert text.startswith("# Proposed by ngcbuild bump --release fake from https://pypi.org/simple, read ")
    assert "extends: fake\n" in text
    assert "env_version: 2.2.0+cu131" in text  # read from the wheel's torch/version.py
    assert "module_version: 2.2.0+cu131" in text  # what the smoke suite will hold torch to, read there too
    assert "module_version: 0.17" not in text  # torchvision states no module_version: none is proposed
    assert "env_version: 0.17.0+cu13" in text
    assert "torch-2.2.0.dist-info" in text and "torch-2.1.0" not in text  # the banner follows the wheel
    assert "layers:\n  - [filelock]\n" in text  # oldthing is gone: its layer entry too
    body = report.read_text()
    assert "# Proposed release fake-next: torch 2.1.0 → 2.2.0" in body
    assert "torch 2.3.0: " in body and "cuda-toolkit" in body.split("torch 2.3.0: ")[1].splitlines()[0]
    assert "oldthing 1.0 (was required by torch 2.1.0)" in body  # removed, with who needed it
    assert "| nvidia-cudnn-cu13 | 9.2.0 | 9.3.0 | torch 2.2.0 requires nvidia-cudnn-cu13==9.2.0 |" in body
    assert "| triton | 3.2.1 | 3.3.0 | torch 2.2.0 requires triton~=3.2.0 |" in body
    assert "| filelock | 3.1.0 | 4.0.0 | 4.0.0 requires Python \\>=3.12 |" in body
    assert "| numpy | 1.0.0 | 2.0.0 | held back by the policy (\\<2): the fake extension is built against NumPy 1 |" \
        in body
    assert "| closure | constraints/fake-next.txt | 9 pins | linux/amd64 | verified |" in body
    assert "The latest version of NVIDIA cuDNN 9.2.0" in body  # the Key Features draft
    assert "| ENV PYTORCH_VERSION | 2.1.0+cu130 | 2.2.0+cu131 |" in body
    # the product leaves the rest of the project alone, and the same proposal again rewrites nothing
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (manifest, constraints)}
    again = bump(project, pypi, "--release", "fake", "--as", "fake-next")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing rewritten" in again.stdout
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in before} == before
    assert report.read_text() == body
    # the proposal is itself a release that loads, and is current against the same index
    current = bump(project, pypi, "--release", "fake-next", "--check")
    assert current.returncode == 0 and "fake-next is current" in current.stdout, current.stdout + current.stderr
    newer = bump(project, pypi, "--release", "fake", "--check")
    assert newer.returncode == 1, newer.stdout + newer.stderr
    assert "a newer set its policy admits exists: torch 2.1.0 -> 2.2.0" in newer.stderr
    assert sorted(p.name for p in (project.root / "manifests").glob("*.yaml")) == ["fake-next.yaml", "fake.yaml"]


def test_a_newer_release_on_the_index_changes_the_proposal_and_check_says_so(project, pypi):
    assert bump(project, pypi, "--release", "fake", "--as", "fake-next").returncode == 0
    pypi.index.add_wheels(Wheel("ninja", "1.2.0"))
    check = bump(project, pypi, "--release", "fake-next", "--check")
    assert check.returncode == 1 and "1 pins changed" in check.stderr, check.stdout + check.stderr
    again = bump(project, pypi, "--release", "fake", "--as", "fake-next")
    assert again.returncode == 0, again.stdout + again.stderr
    assert _pins(project.root / "constraints" / "fake-next.txt")["ninja"] == "1.2.0"


def test_an_unresolvable_proposal_writes_nothing_and_gives_the_resolvers_reason(project, pypi):
    # every CUDA 13 torch needs a triton 3.x: held below 3, nothing resolves
    project.manifest("fake", MANIFEST.replace(
        "  hold:\n", "  hold:\n    triton: {versions: '<3', reason: a test}\n"))
    result = bump(project, pypi, "--release", "fake", "--as", "fake-next")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no torch the policy of fake admits resolves with the rest: 2.3.0: " in result.stderr
    assert "; 2.2.0: " in result.stderr and "; 2.1.0: " in result.stderr  # each tried, newest first
    reason = result.stderr.partition("; 2.1.0: ")[2]
    assert "triton" in reason and "you require torch==2.1.0" in reason and "unsatisfiable" in reason  # uv's words
    assert not (project.root / "manifests" / "fake-next.yaml").exists()
    assert not (project.root / "constraints" / "fake-next.txt").exists()
    assert not (project.root / "build" / "fake-next").exists()


def test_a_release_already_current_writes_nothing(project, pypi):
    pinned = dict(line.split("==") for line in CONSTRAINTS.splitlines())
    for wheel in WHEELS:  # the index keeps only what the release pins (and the held-back NumPy 2)
        if wheel.name in pinned and wheel.version != pinned[wheel.name] and wheel.name != "numpy":
            pypi.index.remove(wheel.name, wheel.version)
    check = bump(project, pypi, "--release", "fake", "--check")
    assert check.returncode == 0 and "fake is current" in check.stdout, check.stdout + check.stderr
    result = bump(project, pypi, "--release", "fake", "--as", "fake-next")
    assert result.returncode == 0 and "nothing written" in result.stdout, result.stdout + result.stderr
    assert not (project.root / "manifests" / "fake-next.yaml").exists()


NVIDIA = """\
extends: parts/debian-bookworm
summary: a small NVIDIA-style release, for bump's draft of the next one
os:
  apt_sources: []
pip:
  constraint_file: true
  break_system_packages: true
build:
  number: '1234'
banner:
  copyright: [Container image Copyright (c) 2025, NVIDIA CORPORATION.]
  license: [This container image is governed by the NVIDIA Deep Learning Container License.]
components:
  cudnn:
    version: 9.1.0
    install: base
    provenance: nvidia
    source: NVIDIA's notes
  pytorch:
    version: 2.1.0a0+abcdef1
    install: source
    provenance: nvidia
    repo: https://github.com/pytorch/pytorch
    ref: 0123456789abcdef0123456789abcdef01234567
    module_version: 2.1.0a0+abcdef1.nv25.12
  triton:
    version: 3.1.0
    install: pip
    provenance: secondary
  numpy:
    version: 1.0.0
    install: pip
notes:
  key_features: [PyTorch container image version 25.12 is based on 2.1.0a0+abcdef1.]
"""
NVIDIA_CONSTRAINTS = "triton==3.1.0\nnumpy==1.0.0\ntorchmetrics==1.0\nfilelock==3.0.0\n"


def test_an_nvidia_release_is_drafted_with_each_of_nvidias_values_unknown(scratch, pypi):
    pypi.index.add_wheels(Wheel("torchmetrics", "1.0", ["torch>=2.0", "filelock"]),
                   Wheel("torchmetrics", "1.1", ["torch>=2.0", "filelock>=3.1"]))
    scratch.manifest("25.12", NVIDIA)
    scratch.constraints("25.12", NVIDIA_CONSTRAINTS)
    result = bump(scratch, pypi, "--release", "25.12", "--as", "26.01")
    assert result.returncode == 0, result.stdout + result.stderr
    text = (scratch.root / "manifests" / "26.01.yaml").read_text()
    assert "extends: '25.12'" in text
    for key in ("summary: UNKNOWN", "number: UNKNOWN", "image: UNKNOWN", "ref: UNKNOWN", "module_version: UNKNOWN",
                "key_features: UNKNOWN"):
        assert key in text, key
    assert "  numpy:\n    version: 2.0.0\n" in text  # our own pip component, not NVIDIA's: proposed at its newest
    pins = _pins(scratch.root / "constraints" / "26.01.txt")
    # torch is built from source: pip saw a stand-in, and the stand-in is no pin; triton is NVIDIA's
    assert pins == {"filelock": "3.1.0", "numpy": "2.0.0", "torchmetrics": "1.1"}, pins
    assert "# triton: UNKNOWN (NVIDIA's)" in (scratch.root / "constraints" / "26.01.txt").read_text()
    report = (scratch.root / "build" / "26.01" / "bump.md").read_text()
    assert "`components.pytorch.ref`" in report and "`base.image`" in report
    # the draft does not build: every command that loads it names each value still UNKNOWN (exit 2)
    render = run_command("ngcbuild", "render", "--release", "26.01", cwd=scratch.root)
    assert render.returncode == 2, render.stdout + render.stderr
    named = render.stderr.split("still UNKNOWN (a draft): ")[1].split("; fill")[0].split(", ")
    assert {"summary", "build.number", "base.image", "banner.copyright.0", "notes.key_features", "components.cudnn.version",
            "components.pytorch.ref", "components.triton.version"} <= set(named), named
    assert "Traceback" not in render.stderr
    assert not (scratch.root / "build" / "26.01" / "Dockerfile").exists()


def test_a_cpu_release_takes_only_the_leaders_cpu_builds(scratch, pypi):
    pypi.index.add_wheels(*(Wheel("torch", v, ["filelock"], tag=LINUX_311) for v in ("2.1.0+cpu", "2.2.0+cpu")))
    scratch.manifest("cpu", """\
extends: parts/debian-bookworm
summary: a CPU release from fake wheels
origin: public-wheels
os:
  apt_sources: []
pip:
  constraint_file: true
components:
  pytorch:
    version: 2.1.0+cpu
    install: pip
bump:
  leader: torch
  leader_local: cpu
""")
    scratch.constraints("cpu", "torch==2.1.0+cpu\nfilelock==3.0.0\n")
    result = bump(scratch, pypi, "--release", "cpu", "--as", "cpu-next")
    assert result.returncode == 0, result.stdout + result.stderr
    # the index's 2.3.0 is newer, but it is no +cpu build (a CUDA one requiring cuda-toolkit)
    assert _pins(scratch.root / "constraints" / "cpu-next.txt") == {"torch": "2.2.0+cpu", "filelock": "3.1.0"}
    assert "version: 2.2.0+cpu" in (scratch.root / "manifests" / "cpu-next.yaml").read_text()
