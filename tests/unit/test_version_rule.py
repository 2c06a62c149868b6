"""The one version rule (manifest/version_rule.py): what a module, a label or the interpreter reports
against what the manifest states, for the real strings of every component with a module in every release
we build, rendered as the smoke suite receives them; and the same rule in a host-mode run of the real
stack check against 25.12's expectations."""

import json
import shutil
import subprocess
import sys
from functools import lru_cache

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.version_rule import accepts, mismatch, parse, reports
from ngcbuild.render.context import render_files
from ngcbuild.smoke.runner import CHECKS_DIR
from ngcbuild.smoke.staging import stage_expectations

from ..conftest import REPO

# What each module really reports (__version__) in the image of each release we build, and where that was read.
REPORTED = {
    "25.12": {
        # torch.__version__ in NGC's 25.12 image (public reports: ngc-image-layout.md); the build stamps it
        "pytorch": "2.10.0a0+b4e4ee81d3.nv25.12",
        # TE's setup appends its commit: 2.10.0+769ed778 reported with this torch build (a public report)
        "transformer_engine": "2.10.0+769ed778",
        # NGC's 25.12 torchao (round-4 audit); the build stamps the same suffix (VERSION_SUFFIX)
        "torchao": "0.15.0+git01374eb5",
        "triton": "3.5.1",  # reported inside the 25.12 image (a public report)
        # tensorrt/__init__.py of tensorrt-cu13 10.14.1.48.post1 re-exports tensorrt_bindings' __version__,
        # "10.14.1.48.post1" in the cp312 bindings wheel (both read from PyPI's files, 2026-11-27)
        "tensorrt_python": "10.14.1.48.post1",
        "lightning_thunder": "0.2.7.dev20251214",  # thunder/__about__.py of PyPI's wheel (read 2026-11-27)
        "modelopt": "0.40.0",  # modelopt/__init__.py: importlib.metadata.version("nvidia-modelopt")
        "polygraphy": "0.49.26",  # polygraphy/__init__.py of PyPI's wheel
        # nvidia/dali/__init__.py holds the literal (PyPI's 1.53.0 wheel says '1.53.0', read 2026-11-27)
        "dali": "1.52.0",
        "torchvision": "0.24.1",  # setup.py writes BUILD_VERSION, which the build sets to the version
    },
    "cuda-dev": {
        "pytorch": "2.11.0+cu130",  # PyPI's CUDA 13.0 torch (the H200 run of issue 42 printed it)
        "torchvision": "0.26.0+cu130",
        "triton": "3.6.0",
        "dali": "1.53.0",
    },
    "dev": {"pytorch": "2.13.0+cpu"},
    "20.12": {"pytorch": "1.8.0a0+1606899", "torchvision": "0.8.2", "dali": "0.28.0"},
    # $PYTORCH_VERSION of nvcr.io/nvidia/pytorch:20.02-py3 (a bats test); the build stamps it
    "20.02": {"pytorch": "1.5.0a0+3bbb36e", "torchvision": "0.5.0", "dali": "0.18.0"},
}

# What another build of each reports: the rule must refuse it against the same expectations.
OTHER_BUILDS = {
    "25.12": {
        "pytorch": "2.10.0a0+b4e4ee8",  # not stamped with NGC's .nv25.12 (the banner's form)
        "transformer_engine": "2.9.0+70f5366",
        "tensorrt_python": "10.14.1.48",  # TensorRT's own wheel (NGC's pip show tensorrt), not PyPI's post1
        "lightning_thunder": "0.2.7.dev20251207",  # last week's build
        "torchao": "0.14.1",  # PyPI's, built for torch 2.9
    },
    "cuda-dev": {"pytorch": "2.11.0+cpu", "torchvision": "0.26.0"},
    "dev": {"pytorch": "2.13.0+cu130"},
    "20.12": {"pytorch": "1.8.0a0+a5b4d78"},
}


@lru_cache(maxsize=None)
def expected(release: str) -> dict:
    project = Project.at(REPO)
    return json.loads(render_files(project, load_release(project, release)).files["expected.json"])


@pytest.mark.parametrize("release", sorted(REPORTED))
def test_every_module_of_every_release_reports_a_version_its_manifest_accepts(release):
    modules = expected(release)["stack"]["modules"]
    assert sorted(modules) == sorted(REPORTED[release]), "a module with no real string recorded here, or one gone"
    wrong = {name: (REPORTED[release][name], entry["version"], mismatch(REPORTED[release][name], entry["version"]))
             for name, entry in modules.items() if not reports(REPORTED[release][name], entry["version"])}
    assert not wrong, wrong


@pytest.mark.parametrize("release", sorted(OTHER_BUILDS))
def test_another_build_is_refused_by_the_same_expectations(release):
    modules = expected(release)["stack"]["modules"]
    passed = {name: text for name, text in OTHER_BUILDS[release].items() if reports(text, modules[name]["version"])}
    assert not passed, passed


def test_25_12_expects_what_each_module_reports_not_the_env_form():
    """The expectation is module_version where stated, else the version: never env_version (TE's env says
    '2.10'; torch's env and banner say 2.10.0a0+b4e4ee8)."""
    modules = expected("25.12")["stack"]["modules"]
    assert modules["transformer_engine"]["version"] == "2.10.0"
    assert modules["pytorch"]["version"] == "2.10.0a0+b4e4ee81d3.nv25.12"
    assert expected("25.12")["env"]["TRANSFORMER_ENGINE_VERSION"] == "2.10"


def test_base_labels_and_the_interpreter_are_held_by_the_rule_too():
    labels = expected("25.12")["base_labels"]
    assert reports("9.17.0.29", labels["com.nvidia.cudnn.version"])  # cuDNN's label is four-part
    assert not reports("9.16.0.29", labels["com.nvidia.cudnn.version"])
    assert reports("3.12.3", expected("25.12")["python"]["version"])
    assert not reports("3.1.2", "3.12")


@pytest.mark.parametrize("reported,stated,why", [
    # a manifest that states less accepts more
    ("2.10.0+769ed778", "2.10.0", None),
    ("2.10.0+769ed778", "2.10", None),
    ("2.10.3", "2.10", None),
    ("9.17.0.29", "9.17.0", None),
    ("13.1", "13.1.0", None),  # trailing zeros: the same release
    ("10.14.1.48.post1", "10.14.1.48", None),  # a post-release re-packages the release
    ("0.1", "0.1", None),  # APEX's distribution
    # what the manifest states holds
    ("10.14.1.48", "10.14.1.48.post1", "post-release none is not 1"),
    ("2.10.1", "2.10.0", "release 2.10.1 is not 2.10.0"),
    ("2.10.0", "2.10.0a0", "pre-release none is not a0"),
    ("2.10.0rc1", "2.10", "pre-release rc1 is not none"),
    ("0.2.7", "0.2.7.dev20251214", "dev release none is not 20251214"),
    ("2.11.0", "2.10", "release 2.11.0 is not 2.10"),
    ("1!2.0", "2.0", "epoch 1 is not 0"),
    # a local part only where the manifest states one, a commit hash abbreviated on either side
    ("2.10.0a0+b4e4ee81d3", "2.10.0a0+b4e4ee8", None),
    ("2.10.0a0+b4e4ee8", "2.10.0a0+b4e4ee81d3", None),
    ("2.10.0a0+b4e4ee8", "2.10.0a0+b4e4ee81d3.nv25.12", "local part +b4e4ee8 is not +b4e4ee81d3.nv25.12"),
    # stated, compared whole: another release's suffix appended is another build (a planted defect's)
    ("2.10.0a0+b4e4ee81d3.nv25.12.nv99.99", "2.10.0a0+b4e4ee81d3.nv25.12",
     "local part +b4e4ee81d3.nv25.12.nv99.99 is not +b4e4ee81d3.nv25.12"),
    ("2.10.0a0+a5b4d78", "2.10.0a0+b4e4ee8", "local part +a5b4d78 is not +b4e4ee8"),
    ("2.10.0a0+b4e4", "2.10.0a0+b4e4ee81d3", "local part +b4e4 is not +b4e4ee81d3"),  # too short for a hash
    ("0.15.0+git01374eb58a", "0.15.0+git01374eb5", None),
    ("0.15.0+01374eb5", "0.15.0+git01374eb5", "local part +01374eb5 is not +git01374eb5"),
    ("2.13.0+cpu", "2.13.0+cu130", "local part +cpu is not +cu130"),
    ("2.13.0", "2.13.0+cpu", "no local part, the manifest states +cpu"),
    # a later point's pre-, dev- and post-releases judged by the reported version (issue 53's strings first)
    ("2.10.0.1.dev0", "2.10.0", "dev release 0 is not none"),
    ("1.52.0.1rc1", "1.52.0", "pre-release rc1 is not none"),
    ("2.10.3a0", "2.10", "pre-release a0 is not none"),
    ("2.10.0.1a0+b4e4ee81d3.nv25.12", "2.10.0a0+b4e4ee81d3.nv25.12", "2.10.0.1 is a later release than "
     "2.10.0a0+b4e4ee81d3.nv25.12"),
    ("0.2.7.1.dev20251214", "0.2.7.dev20251214", "0.2.7.1 is a later release than 0.2.7.dev20251214"),
    ("2.10.0.1.post1", "2.10.0", None),  # a re-packaging of 2.10.0.1, which 2.10.0 accepts
    ("2.10.0.1", "2.10.0", None),
    ("2.10.0.1+769ed778", "2.10.0", None),
    ("2.10.0.1.post1.dev0", "2.10.0", "dev release 0 is not none"),
    # a local segment matches by prefix only where the manifest states a hash of letters and digits
    ("1.8.0a0+16068990", "1.8.0a0+1606899", "local part +16068990 is not +1606899"),
    ("1.8.0a0+1606899dbe", "1.8.0a0+1606899", "local part +1606899dbe is not +1606899"),
    ("1.8.0a0+1606899", "1.8.0a0+1606899", None),  # 20.12's torch.__version__, as stated
    ("1.8.0a0+160689", "1.8.0a0+1606899", "local part +160689 is not +1606899"),
    ("1.5.0a0+3bbb36e5f0", "1.5.0a0+3bbb36e", None),  # 20.02's, a hash of letters and digits
    ("1.0+abcdefab", "1.0+abcdefa", "local part +abcdefab is not +abcdefa"),  # letters only: a word, whole
    ("1.0+git12345678", "1.0+git1234567", "local part +git12345678 is not +git1234567"),
    ("1.0+git01374eb", "1.0+git01374eb5", None),
    ("1.0+01374eb5.nv25.120", "1.0+01374eb5.nv25.12", "local part +01374eb5.nv25.120 is not +01374eb5.nv25.12"),
    ("1.0+cu1300", "1.0+cu130", "local part +cu1300 is not +cu130"),
    # more adversarial forms of a later point's pre- and dev release
    ("2.10.0.0.1rc1", "2.10.0", "pre-release rc1 is not none"),
    ("2.10.0.1rc1", "2.10", "pre-release rc1 is not none"),
    ("1.52.0.1rc1+abc1234", "1.52.0", "pre-release rc1 is not none"),
    ("2.10.0.1.dev0+769ed778", "2.10.0", "dev release 0 is not none"),
    # a reported text that is not PEP 440 where the manifest states a PEP 440 version: never read as text
    ("2.10.0.1.dev0.dirty", "2.10.0",
     "2.10.0.1.dev0.dirty is not a PEP 440 version (the manifest states 2.10.0, which is one)"),
    ("1.52.0.1.post1rc1", "1.52.0",
     "1.52.0.1.post1rc1 is not a PEP 440 version (the manifest states 1.52.0, which is one)"),
    ("2.10.0-rc1-dirty", "2.10.0", "2.10.0-rc1-dirty is not a PEP 440 version (the manifest states 2.10.0, which is one)"),
    # the hash rule both ways, and case
    ("1.8.0a0+1606899", "1.8.0a0+16068990", "local part +1606899 is not +16068990"),
    ("1.8.0a0+1606899.1", "1.8.0a0+1606899", "local part +1606899.1 is not +1606899"),
    ("1.5.0a0+3bbb36", "1.5.0a0+3bbb36e", "local part +3bbb36 is not +3bbb36e"),  # 6 characters: not a hash
    ("2.10.0A0+B4E4EE81D3.NV25.12", "2.10.0a0+b4e4ee81d3.nv25.12", None),
    # spellings pip normalises
    ("2.10.0-rc.1", "2.10.0rc1", None),
    ("V1.0.POST2", "1.0.post2", None),
    # not PEP 440: as text, with more parts after the stated ones
    ("12.2.2.009-dev", "12.2.2.009-dev", None),
    ("r36.4.0", "r36.4", None),
    ("r36.5", "r36.4", "r36.5 is not r36.4 (compared as text: not a PEP 440 version)"),
])
def test_the_rule(reported, stated, why):
    assert mismatch(reported, stated) == why
    assert reports(reported, stated) is (why is None)


def test_the_rule_says_what_it_accepts():
    assert accepts("2.10.0") == "2.10.0 or 2.10.0.N (post-releases too), with any local part"
    assert accepts("10.14.1.48.post1") == "10.14.1.48.post1, with any local part"
    assert accepts("2.10.0a0+b4e4ee81d3.nv25.12") == (
        "2.10.0a0 (post-releases too), with the local part +b4e4ee81d3.nv25.12 (a commit hash abbreviated to 7 "
        "characters or more)")


def test_accepts_names_the_hash_only_where_the_manifest_states_one_of_letters_and_digits():
    assert accepts("1.8.0a0+1606899") == "1.8.0a0 (post-releases too), with the local part +1606899"
    assert accepts("1.5.0a0+3bbb36e").endswith("(a commit hash abbreviated to 7 characters or more)")


def test_the_docstring_states_the_cases_the_tests_hold():
    """The rule's docstring is its specification: every case it names by example is one the rule decides so."""
    import ngcbuild.manifest.version_rule as rule
    for phrase in ("2.10.0.1.dev0", "1.52.0.1rc1", "16068990", "b4e4ee8", "2.10.0.1.post1", "13.1 is 13.1.0",
                   "2.10.0.1.dev0.dirty", "r36.4.0"):
        assert phrase in rule.__doc__
    assert not reports("2.10.0.1.dev0", "2.10.0") and not reports("1.52.0.1rc1", "1.52.0")
    assert not reports("1.8.0a0+16068990", "1.8.0a0+1606899") and reports("2.10.0.1.post1", "2.10.0")
    assert reports("13.1", "13.1.0") and reports("2.10.0a0+b4e4ee8", "2.10.0a0+b4e4ee81d3")
    assert not reports("2.10.0.1.dev0.dirty", "2.10.0") and reports("r36.4.0", "r36.4")


def test_parse_reads_every_part():
    parts = parse("1!2.10.0rc2.post3.dev4+Git.ABC")
    assert (parts.epoch, parts.release, parts.pre, parts.post, parts.dev, parts.local) == \
        (1, (2, 10, 0), ("rc", 2), 3, 4, ("git", "abc"))
    assert parse("not a version") is None


# --- host mode: the real stack check, with 25.12's expectations as `smoke --host --release 25.12` renders them

def _fake_modules(folder, reported: dict, modules: dict) -> None:
    """A package per module of the stack that reports `reported[name]` as its __version__."""
    for name, entry in modules.items():
        path = folder.joinpath(*entry["module"].split("."))
        path.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(folder).parents:
            init = folder / parent / "__init__.py"
            if parent.parts and not init.exists():
                init.write_text("")
        (path / "__init__.py").write_text(f"__version__ = {reported[name]!r}\n")


def _host_run(tmp_path, reported: dict):
    smoke_dir, fakes = tmp_path / "smoke", tmp_path / "fakes"
    rendered = expected("25.12")
    stage_expectations(smoke_dir / "expect", json.dumps(rendered).encode())  # with the rule beside it, as staged
    _fake_modules(fakes, reported, rendered["stack"]["modules"])
    checks = tmp_path / "checks"
    checks.mkdir()
    for name in ("conftest.py", "gpu_facts.py", "processes.py", "test_stack.py"):
        shutil.copy(CHECKS_DIR / name, checks / name)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", "-m", "not image",
         "-k", "test_component_reports_the_manifest_version", str(checks)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={"NGCBUILD_SMOKE_DIR": str(smoke_dir), "PYTHONPATH": str(fakes), "PATH": "/usr/bin:/bin",
             "PYTHONDONTWRITEBYTECODE": "1"})


def test_host_mode_holds_25_12_modules_reporting_the_real_strings_to_the_manifest(tmp_path):
    done = _host_run(tmp_path, REPORTED["25.12"])
    assert done.returncode == 0 and f"{len(REPORTED['25.12'])} passed" in done.stdout, done.stdout + done.stderr


def test_host_mode_fails_a_module_of_another_build_naming_what_the_manifest_accepts(tmp_path):
    done = _host_run(tmp_path, {**REPORTED["25.12"], "transformer_engine": "2.9.0+70f5366"})
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr
    assert ("transformer_engine.__version__ is 2.9.0+70f5366, the manifest says 2.10.0 (which accepts 2.10.0 or "
            "2.10.0.N (post-releases too), with any local part): release 2.9.0 is not 2.10.0") in done.stdout
