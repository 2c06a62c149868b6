"""The catalogue of planted defects (smoke/mutants.yaml) and the pure parts of `ngcbuild mutate`: facts
derived from expected.json, which mutants apply to dev and cuda-dev, the mutant Dockerfile, changed
expectations, and the section of its table that `invoke reliability` puts in RELIABILITY.md, replacing
only its own lines. The engine run itself is proven in tests/integration/test_mutants.py."""

import json

import pytest

from ngcbuild.core.errors import ManifestError
from ngcbuild.core.project import Project
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.smoke import mutants
from ngcbuild.smoke.mutate import library_distributions, markers, section

from ..conftest import REPO

# What the issue asks the catalogue to cover, by the mutants that cover it.
REQUIRED = {
    "a library of the stack removed": "stack-library-removed",
    "replaced by another version": "stack-library-other-version",
    "hidden from the linker cache": "stack-library-hidden-from-linker-cache",
    "a distribution installed twice": "distribution-installed-twice",
    "a pip check conflict": "pip-check-conflict",
    "the constraint file not matching": "constraint-pin-wrong",
    "torch replaced by another build": "torch-other-build",
    "CUDA_HOME missing": "cuda-home-removed",
    "nvcc missing": "nvcc-removed",
    "nvcc of another CUDA": "nvcc-other-cuda",
    "a run-time contract variable wrong": "contract-env-wrong",
    "the entrypoint broken": "entrypoint-drops-exit-status",
    "the banner broken": "banner-line-wrong",
    "a component promised but not importable": "component-not-importable",
    "torch promised with MPI but built without": "torch-promised-with-mpi",
    "the .nvYY.MM version string wrong": "torch-version-suffix-wrong",
    "TORCH_CUDA_ARCH_LIST missing": "arch-list-forgotten",
    "a file of /workspace missing": "workspace-file-removed",
}


def release_facts(name: str) -> tuple[dict, dict]:
    project = Project.at(REPO)
    loaded = load_release(project, name)
    expected = json.loads(render_files(project, loaded).files["expected.json"])
    distributions = library_distributions(loaded, Catalog.load(project))
    return expected, mutants.facts_of(mutants.Release(expected, distributions))


def test_the_catalogue_has_at_least_25_defects_and_every_one_the_issue_names():
    catalogue = mutants.load_catalogue()
    ids = [m.id for m in catalogue]
    assert len(ids) >= 25 and len(set(ids)) == len(ids)
    missing = {what: mutant for what, mutant in REQUIRED.items() if mutant not in ids}
    assert not missing, missing
    assert all(m.names for m in catalogue), "every mutant says what its killer's message must name"


@pytest.mark.parametrize("release,least", [("dev", 20), ("cuda-dev", 35)])
def test_mutants_apply_by_the_facts_of_the_release(release, least):
    expected, facts = release_facts(release)
    chosen = [m for m in mutants.load_catalogue() if m.applies(facts)]
    assert len(chosen) >= least, [m.id for m in chosen]
    for mutant in chosen:
        text = mutant.dockerfile_text("image:tag", "run-1", facts)
        assert text.splitlines()[:2] == ["FROM image:tag", f'LABEL {mutants.LABEL}="run-1"']
        assert "{{" not in text and "{{" not in " ".join(mutant.killers(facts)), mutant.id
        assert "{{" not in json.dumps(mutants.patched(expected, mutant.expect, facts)), mutant.id


def test_facts_of_cuda_dev_name_the_first_library_and_its_distribution():
    _, facts = release_facts("cuda-dev")
    assert facts["library"] == "libcublas" and facts["library_component"] == "cublas"
    assert facts["library_distribution"] == "nvidia-cublas"
    assert facts["library_distribution_other"] == "12.1.0.3"  # 13.1.0.3, its first number one lower
    assert facts["arch_list"] == "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
    assert facts["workspace_file"] == "README.md" and facts["extra_module"] == "nvidia.dali"
    assert facts["torch_label"] == "com.nvidia.pytorch.version"


def test_dev_lacks_the_cuda_mutants():
    _, facts = release_facts("dev")
    chosen = {m.id for m in mutants.load_catalogue() if m.applies(facts)}
    assert not chosen & {"nvcc-removed", "arch-list-forgotten", "stack-library-removed", "workspace-file-removed"}
    assert facts["package"] == "numpy"


def test_changed_expectations():
    expected = {"env": {"A": "1", "B": "2"}, "stack": {"torch_with": ["lapack"]}}
    changes = [mutants.Change(op="remove", path="env.A"), mutants.Change(op="add", path="stack.torch_with", value="mpi"),
               mutants.Change(op="set", path="components.apex", value="{{x}}")]
    patched = mutants.patched(expected, changes, {"x": "0.1"})
    assert patched == {"env": {"B": "2"}, "stack": {"torch_with": ["lapack", "mpi"]}, "components": {"apex": "0.1"}}
    assert expected["env"] == {"A": "1", "B": "2"}, "the original is left alone"


@pytest.mark.parametrize("text,key,message", [
    ("- {id: ab, description: d, killed_by: k, names: [x]}\n", "0", "expected dockerfile lines or expect"),
    ("- {id: ab, description: d, killed_by: k, dockerfile: [RUN true]}\n"
     "- {id: ab, description: d, killed_by: k, dockerfile: [RUN true]}\n", "1.id", "used twice"),
    ("- {id: ab, description: d, killed_by: k, requires: [nope], dockerfile: [RUN true]}\n", "0.requires",
     "unknown facts ['nope']"),
    ("- {id: ab, description: d, killed_by: k, dockerfile: ['RUN {{nope}}']}\n", "0.requires", "unknown facts"),
    ("- {id: ab, description: d, killed_by: k, colour: red, dockerfile: [RUN true]}\n", "0.colour", "Extra inputs"),
    ("id: ab\n", "", "expected a list of mutants"),
])
def test_a_broken_catalogue_is_one_message_naming_the_key(tmp_path, text, key, message):
    path = tmp_path / "mutants.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as caught:
        mutants.load_catalogue(path)
    assert f": {key}: " in f"{caught.value}" if key else "mutants.yaml: expected" in str(caught.value)
    assert message in str(caught.value)


def result(killed=True):
    return {"at": "2026-11-24 08:00 UTC", "seconds": 61.5, "image": "sha256:" + "a" * 64, "total": 2,
            "killed": 2 if killed else 1, "not_applicable": ["nvcc-removed"],
            "mutants": [{"id": "one", "description": "a | b", "killed": True, "killed_by": "stack::x",
                         "expected_killer": "stack::x", "as_expected": True, "message": "line1\nline2"},
                        {"id": "two", "description": "d", "killed": killed, "killed_by": "stack::y" if killed else None,
                         "expected_killer": "stack::y", "as_expected": killed, "message": "m"}]}


def test_the_section_names_each_mutant_its_killer_and_survivors():
    text = section("dev", result(killed=False))
    begin, end = markers("dev")
    assert text.startswith(begin) and text.rstrip().endswith(end)
    assert "1 of 2 planted defects killed (50%)" in text
    assert "| `one` | a \\| b | `stack::x` | line1 line2 |" in text
    assert "**survived**" in text and "`nvcc-removed`" in text


def test_a_new_section_replaces_only_its_own_lines():
    """How `invoke reliability` takes the table `mutate` left in build/R/mutants.md into RELIABILITY.md
    (dev/reliability.with_sections; mutate itself writes no project file)."""
    from dev.reliability import with_sections

    text = "# Figures\n\nkept above\n"
    for name, made in (("dev", result(killed=False)), ("cuda-dev", result()), ("dev", result())):
        text = with_sections(text.split("<!--")[0], text, {f"mutants:{name}": section(name, made).rstrip("\n")})
    assert text.startswith("# Figures\n\nkept above\n")
    assert text.count(markers("dev")[0]) == 1 and text.count(markers("cuda-dev")[0]) == 1
    assert "survived" not in text and text.index(markers("dev")[0]) < text.index(markers("cuda-dev")[0])
