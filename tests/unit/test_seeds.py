"""The generated release notes reproduce NVIDIA's pages (tests/data/seeds), item by item.

These read the project's real manifests. A release whose manifest is missing fails (never skips),
like everything else. The seed parsers themselves are checked
against what a reader of the pages sees, so a broken parser cannot make the comparison vacuous.
"""

import re

import pytest

from ngcbuild.core.project import Project
from ngcbuild.docs.notes import render_notes
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.series import Series

from .. import seedtext as st
from ..conftest import REPO

PROJECT = Project.at(REPO)
TABLE_RELEASES = ["20.12", "20.11", "20.10", "20.09", "20.08", "20.07", "20.06", "20.03", "20.02", "20.01",
                  "19.12", "19.11", "19.10", "19.09", "19.08"]


def needs(*releases):
    """The checked releases are part of the project: a missing manifest is a failure, never a skip."""
    missing = [r for r in releases if not (PROJECT.manifests / f"{r}.yaml").is_file()]
    if missing:
        pytest.fail(f"manifests/{', '.join(missing)}.yaml is missing: the seed comparison needs it", pytrace=False)


_series = None


def notes_of(release: str) -> str:
    global _series
    needs(release)
    if _series is None:
        _series = Series.load(PROJECT)
    return render_notes(_series, release, PROJECT)


# --- the parsers read the seeds as a person does ----------------------------------------------------

def test_seed_parser_reads_the_20_12_list_and_table():
    text = st.seed("20.12")
    items = st.also_includes(text)
    assert items[0].text == "Ubuntu 20.04 including Python 3.8 environment"
    assert st.SeedItem("NVIDIA NCCL 2.8.3", None) in items  # "(optimized for NVLink™ )" dropped
    assert [i.text for i in items if i.group == "Tensor Core optimized examples"][-1] == "GNMT v2"
    assert len([i for i in items if i.group == "Jupyter and JupyterLab"]) == 6
    assert len(items) == 32
    rows = st.seed_table(text)
    assert [r.release for r in rows] == TABLE_RELEASES
    by = {r.release: r for r in rows}
    # merged cells: 18.04 spans 20.11 down to 19.08; 20.01's PyTorch cell spans 19.12
    assert by["20.11"].ubuntu == by["19.08"].ubuntu == "18.04" and by["20.12"].ubuntu == "20.04"
    assert by["19.12"] == st.TableRow("19.12", "18.04", "NVIDIA CUDA 10.2.89", "1.4.0a0+a5b4d78", "TensorRT 7.0.0")
    assert by["20.06"].pytorch == "1.6.0a0+9907a3e" and by["20.06"].tensorrt == "TensorRT 7.1.2"
    assert by["19.09"] == st.TableRow("19.09", "18.04", "NVIDIA CUDA 10.1.243", "1.2.0", "TensorRT 6.0.1")


def test_seed_parser_reads_the_requirements():
    assert st.seed_requirements(st.seed("20.12")) == st.Requirements(
        "11.1.1", "455 or later", ("418.xx", "440.30", "450.xx"), "6.0", ("Pascal", "Volta", "Turing", "NVIDIA Ampere"))
    assert st.seed_requirements(st.seed("20.02")) == st.Requirements(
        "10.2.89", "440.33.01", ("396", "384.111+", "410", "418.xx", "440.30"), "6.0", ("Pascal", "Volta", "Turing"))
    assert st.seed_requirements(st.seed("25.12")).cuda == "13.1.0"


# --- the comparison ---------------------------------------------------------------------------------

@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_sections_are_nvidias_in_their_order(release):
    headings = st.notes_headings(notes_of(release))
    ships_examples = bool(load_release(PROJECT, release).release.notes.tensor_core_examples)
    expected = [h for h in st.SEED_HEADINGS if h != "Tensor Core Examples" or ships_examples]
    assert headings[:len(expected)] == expected


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_where_pytorch_lives(release):
    pattern = r"installed in (the default Python environment|Conda default environment) \(\s*(\S+?)\s*\)"
    seed = re.search(pattern, st.normalize(st.seed_sections(st.seed(release))["Contents of the PyTorch container"]))
    ours = re.search(pattern, st.normalize(st.plain(st.notes_sections(notes_of(release))["Contents of the PyTorch container"])))
    assert ours is not None, "the notes do not say where PyTorch is installed"
    assert (ours[1], ours[2].rstrip("/")) == (seed[1], seed[2].rstrip("/"))


EXAMPLES = "Tensor Core optimized examples"


def test_20_12_also_includes_every_item_with_its_version():
    """Every item of NVIDIA's list, but the Tensor Core examples, which the image built here does not have:
    they are listed among what it does not include (and quoted in their own section)."""
    ours = st.notes_also_includes(notes_of("20.12"))
    missing = [item.text for item in st.also_includes(st.seed("20.12"))
               if item.group != EXAMPLES and not st.contains_item(ours, item.text)]
    assert not missing, f"seed items not in the notes' list (name and version): {missing}\nours: {ours}"


def test_20_12_lists_no_tensor_core_example_as_included_and_says_the_image_has_only_a_readme():
    notes = notes_of("20.12")
    contents = st.notes_sections(notes)["Contents of the PyTorch container"]
    included, lacking = contents.split("does not include the following", 1)
    examples = [item.text for item in st.also_includes(st.seed("20.12")) if item.group == EXAMPLES]
    assert examples and not [e for e in examples if e in included], "an example is listed as included"
    assert "Tensor Core examples: NVIDIA's model scripts are in" in lacking
    section = st.plain(st.notes_sections(notes)["Tensor Core Examples"])
    assert "That is NVIDIA's text of its image. The image ngcbuild builds includes none of these examples" in section
    # the one-line descriptions are ours, each marked
    assert notes.count("[^chosen]\n") >= len(examples)


@pytest.mark.parametrize("release", ["20.02", "20.12"])
@pytest.mark.parametrize("heading", ["Driver Requirements", "GPU Requirements"])
def test_the_2020_requirements_quote_nvidias_paragraph_of_that_release(release, heading):
    """NVIDIA's 2020 text ("Tesla", "Pascal, Volta, and Turing families"), not the later template's."""
    seed = st.normalize(st.seed_sections(st.seed(release))[heading])
    ours = st.normalize(st.plain(st.notes_sections(notes_of(release))[heading]))
    assert ours == seed


@pytest.mark.parametrize("release", ["20.02", "20.12"])
def test_key_features_are_nvidias_list_and_nothing_more(release):
    ours = st.notes_list_items(st.notes_sections(notes_of(release))["Key Features and Enhancements"])
    seed = _statements(release, "Key Features and Enhancements")
    assert [line.rstrip(".") for line in ours] == [line.rstrip(".") for line in seed]


def test_the_versions_table_claims_only_the_rows_it_has():
    for release in ("20.12", "25.12"):
        section = st.plain(st.notes_sections(notes_of(release))["NVIDIA PyTorch Container Versions"])
        rows = st.notes_table(notes_of(release))
        assert f"are in the {len(rows)} releases up to {release} that ngcbuild has a manifest for" in section
        assert "a release without one is not listed" in section
    assert "21.01" not in st.notes_table(notes_of("25.12"))  # no manifest: no row, and no claim of one


def test_differences_a_user_meets_are_said():
    notes_20_12, notes_25_12 = notes_of("20.12"), notes_of("25.12")
    assert "torchvision 0.8.2 (NGC's image has 0.9.0a0, by secondary reports)" in notes_20_12
    differs = st.plain(st.notes_sections(notes_25_12)["Where this image differs from NVIDIA's"])
    assert "PyTorch's MPI backend: this PyTorch is built without it" in differs and "OpenMPI 4.1.7" in differs
    assert "PATH order: this image puts /opt/tensorrt/bin first" in differs
    lacking = st.notes_sections(notes_25_12)["Contents of the PyTorch container"].split("does not include", 1)[1]
    assert "the build toolchain NGC's PyTorch layer installs from apt (pkg-config, autoconf" in lacking


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_driver_and_gpu_requirements(release):
    assert st.notes_requirements(notes_of(release)) == st.seed_requirements(st.seed(release))


def test_20_12_versions_table_has_every_row_of_the_seed():
    notes = notes_of("20.12")
    needs(*TABLE_RELEASES)
    ours = st.notes_table(notes)
    problems = []
    for seed_row in st.seed_table(st.seed("20.12")):
        row = ours.get(seed_row.release)
        if row is None:
            problems.append(f"{seed_row.release}: no row")
            continue
        for field in ("ubuntu", "cuda", "tensorrt", "pytorch"):
            want, got = getattr(seed_row, field), getattr(row, field)
            if field == "pytorch":  # 19.08's cell is a sentence: "1.2.0a0 including upstream commits ..."
                want = want.split()[0]
                if got == want or got.startswith(want + "+"):
                    continue
            elif got == want:
                continue
            if _documented_conflict(seed_row.release, want):
                continue
            problems.append(f"{seed_row.release} {field}: seed {want!r}, notes {got!r}")
    assert not problems, "\n".join(problems)


def _documented_conflict(release: str, seed_value: str) -> bool:
    """A manifest may differ from NVIDIA's table only where it says so: a conflict naming the table's
    value, which that release's own notes then show."""
    loaded = load_release(PROJECT, release)
    if not any(seed_value in fact.text for fact in loaded.release.notes.conflicts):
        return False
    assert seed_value in st.plain(notes_of(release)), f"{release}: the conflict is not shown in its notes"
    # and the versions table of the later notes shows NVIDIA's value beside the chosen one
    assert f"(NVIDIA states {seed_value})" in notes_of("20.12"), f"{release}: the table hides NVIDIA's {seed_value}"
    return True


def _statements(release: str, heading: str) -> list[str]:
    section = st.seed_sections(st.seed(release)).get(heading, "")
    if release == "20.02" and heading in ("Key Features and Enhancements", "Announcements"):
        # The stored 20.02 page lost its "Announcements" heading: its bullets follow the key features
        # after a gap of blank lines.
        features, announcements = st.seed_sections(st.seed(release))["Key Features and Enhancements"].split("\n\n\n", 1)
        section = features if heading == "Key Features and Enhancements" else announcements
    return st.seed_lines(section)


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
@pytest.mark.parametrize("heading", ["Key Features and Enhancements", "Announcements", "Known Issues"])
def test_features_announcements_and_known_issues(release, heading):
    ours = st.normalize(st.plain(st.notes_sections(notes_of(release))[heading]))
    missing = [line for line in _statements(release, heading) if line not in ours]
    assert not missing, f"{heading} of {release}: not in the notes: {missing}"


def test_statements_parsed_from_the_seeds():
    assert _statements("20.02", "Announcements") == [
        "Deep learning framework containers 19.11 and later include experimental support for Singularity v3.0",
        "Transformer has been removed"]
    assert len(_statements("20.02", "Key Features and Enhancements")) == 8
    assert "The latest version of DALI 0.28" in _statements("20.12", "Key Features and Enhancements")
    assert len(_statements("20.12", "Known Issues")) == 6
    assert "Volta GPU compute architecture support is discontinued starting with the 25.01 release" in \
        _statements("25.12", "Announcements")


def test_20_12_tensor_core_examples():
    notes = notes_of("20.12")
    examples = st.notes_sections(notes)["Tensor Core Examples"]
    for item in st.also_includes(st.seed("20.12")):
        if item.group == "Tensor Core optimized examples":
            assert item.text in st.plain(examples)


def test_a_missing_manifest_fails_the_comparison_instead_of_skipping_it():
    with pytest.raises(pytest.fail.Exception, match=r"manifests/99\.99\.yaml is missing"):
        needs("20.12", "99.99")


def test_a_conflict_shows_nvidias_value_beside_the_chosen_one_in_table_and_matrix():
    from ngcbuild.docs.matrix import matrix_json

    row = next(r for r in st.notes_table(notes_of("20.12")).values() if r.release == "20.08")
    assert "8deb4fe" in row.pytorch
    assert "(NVIDIA states 1.7.0a0+6392713)" in notes_of("20.12")
    cells = next(r for r in matrix_json(PROJECT)["releases"] if r["release"] == "20.08")
    assert "NVIDIA states 1.7.0a0+6392713" in str(cells)


def _amp_sentences(text: str) -> list[str]:
    """The sentences of an AMP section, normalised; the link sentences ("... can be found here.") are left out:
    the stored pages lost their links, so a quote of them would point nowhere."""
    sentences = re.split(r"(?<=[.])\s+(?=[A-Z])", st.normalize(text) + ".")
    return [s.rstrip(" .") for s in sentences if s.strip(" .") and not s.rstrip(" .").endswith("can be found here")]


@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_the_amp_section_is_each_releases_own_text(release):
    """Every sentence of NVIDIA's AMP section of this release is in its notes, and nothing of another
    release's is (the 25.12 notes once quoted 20.12's "as well as a preinstalled release of Apex")."""
    # the section ends with its pointer to the guide (25.12's page runs on into a MemPool example, no heading)
    section = st.seed_sections(st.seed(release))["Automatic Mixed Precision (AMP)"]
    seed = _amp_sentences(section.split("Training With Mixed Precision Guide.", 1)[0] + "Training With Mixed Precision Guide.")
    ours = _amp_sentences(st.plain(st.notes_sections(notes_of(release))["Automatic Mixed Precision (AMP)"]))
    assert len(seed) >= 5, seed  # the parser read the section
    missing = [s for s in seed if s not in ours]
    assert not missing, f"not in the {release} notes: {missing}"
    # beyond NVIDIA's sentences, the notes add only ngcbuild's finding, said to be ours
    added = [s for s in ours if s not in seed]
    assert all(s.startswith(("That is NVIDIA's text", "In the image ngcbuild builds")) or "apex.amp" in s
               or "Apex AMP is not in this image" in s for s in added), added


def test_a_quoted_driver_paragraph_must_name_every_fact_given():
    from pydantic import ValidationError

    from ngcbuild.manifest.model import DriverRequirements
    DriverRequirements(minimum="455 or later", datacenter_branches=["418.xx"],
                       text="requires NVIDIA Driver release 455 or later. ... release 418.xx.")
    with pytest.raises(ValidationError, match="text does not name 450.xx"):
        DriverRequirements(minimum="455 or later", datacenter_branches=["450.xx"],
                           text="requires NVIDIA Driver release 455 or later.")


def test_25_12_driver_paragraph_is_nvidias_up_to_the_list_the_stored_copy_lost():
    seed = st.normalize(st.seed_sections(st.seed("25.12"))["Driver Requirements"])
    ours = st.normalize(st.plain(st.notes_sections(notes_of("25.12"))["Driver Requirements"]))
    assert seed.endswith("please refer to the following documentation:") and ours.startswith(seed), (seed, ours)


def test_25_12_key_features_quote_nvidias_whole_paragraphs():
    ours = st.notes_list_items(st.notes_sections(notes_of("25.12"))["Key Features and Enhancements"])
    assert any(line.endswith("have not been fully tested in the container") for line in ours)  # normalised
