"""Notes, matrix, diff and site on a scratch project with releases written for the test."""

import json
import re

import pytest

from ngcbuild.core.project import Project
from ngcbuild.docs.diff import diff_releases, drafted_features, render_diff
from ngcbuild.docs.markdown import md
from ngcbuild.docs.matrix import matrix_json, render_matrix
from ngcbuild.docs.notes import render_notes, write_notes
from ngcbuild.docs.site import build_site, to_html
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.series import Series, order_key
from ngcbuild.manifest.versions import compare

from .. import seedtext as st

OLD = """\
status: archived
summary: an old release
os: {name: Ubuntu, version: '18.04', provenance: nvidia}
python: {version: '3.6', install: conda, site_packages: /opt/conda/lib/python3.6/site-packages}
gpu: {min_compute_capability: '6.0'}
components:
  cuda: {version: 11.0.3, provenance: nvidia}
  cublas: {version: 11.2.0, provenance: nvidia}
  cudnn: {version: 8.0.4, provenance: nvidia}
  pytorch: {version: 1.7.0a0+8deb4fe, provenance: nvidia}
notes:
  driver: {minimum: '450', datacenter_branches: [418.xx, '440.30']}
  gpu_requirements: {families: [Pascal, Volta, Turing]}
"""
NEW = """\
status: archived
summary: a newer release
os: {name: Ubuntu, version: '20.04', provenance: nvidia}
python: {version: '3.8', install: conda, site_packages: /opt/conda/lib/python3.8/site-packages}
gpu: {min_compute_capability: '6.0'}
components:
  cuda: {version: 11.1.1, provenance: nvidia}
  cublas: {version: 11.3.0, provenance: nvidia}
  cudnn: {version: 8.0.5, provenance: nvidia}
  nccl: {version: 2.8.3, provenance: secondary, source: a start-up banner}
  pytorch: {version: 1.7.0a0+1606899, provenance: nvidia}
notes:
  pytorch_location: /opt/conda/lib/python3.6/site-packages/torch/
  driver: {minimum: 455 or later, datacenter_branches: [418.xx, '440.30', 450.xx]}
  gpu_requirements: {families: [Pascal, Volta, Turing, NVIDIA Ampere]}
  announcements: [Transformer has been removed.]
  known_issues:
    - {text: 'A <b>bold</b> claim with *stars* and a | pipe', provenance: chosen}
  tensor_core_examples:
    - {name: BERT, description: A language model.}
  also_includes: [APEX]
"""


@pytest.fixture
def project(scratch):
    scratch.copy_release("dev")
    scratch.manifest("20.09", OLD)
    scratch.manifest("20.12", NEW)
    return Project.at(scratch.root)


@pytest.fixture
def series(project):
    return Series.load(project)


def test_versions_compare_with_packaging_and_fall_back():
    assert compare("8.0.4", "8.0.5") == "upgraded"
    assert compare("2.9.1", "2.10.0a0+b4e4ee81d3") == "upgraded"  # an alpha of 2.10 is after 2.9.1
    assert compare("2.10.0", "2.10.0a0+b4e4ee81d3") == "downgraded"
    assert compare("2.10.0a0+b4e4ee81d3", "2.10.0a0+a5b4d78") == "rebuilt"  # other commit, same version
    assert compare("1.0", "1.0.0") == "same"
    assert compare("r20.11", "r20.12") == "upgraded"  # not PEP 440: part by part
    assert compare("r20.12", "r20.9") == "downgraded"  # numbers as numbers, not as text
    assert compare("2.28.9-1", "2.28.9-2") == "upgraded"


def test_releases_are_ordered_by_date_then_by_name():
    names = ["dev", "20.12", "19.08", "20.02", "alpha"]
    assert sorted(names, key=order_key) == ["19.08", "20.02", "20.12", "alpha", "dev"]


def test_series_predecessors(series):
    assert series.names == ["20.09", "20.12", "dev"]
    assert series.predecessor("20.09") is None
    assert series.predecessor("20.12").release.release == "20.09"


def test_notes_sections_requirements_and_marks(series, project):
    notes = render_notes(series, "20.12", project)
    headings = st.notes_headings(notes)
    assert headings == ["Contents of the PyTorch container", "Driver Requirements", "GPU Requirements",
                        "Key Features and Enhancements", "Announcements", "NVIDIA PyTorch Container Versions",
                        "Automatic Mixed Precision (AMP)", "Tensor Core Examples", "Known Issues"]
    items = st.notes_also_includes(notes)
    assert "Ubuntu 20.04 including Python 3.8 environment" in items
    assert "NVIDIA CUDA 11.1.1 including cuBLAS 11.3.0" in items  # cuBLAS inside CUDA's line
    assert not any(i.startswith("NVIDIA cuBLAS") for i in items)
    assert "APEX" in items
    # the same sentence parsers that read NVIDIA's pages read ours
    assert st.notes_requirements(notes) == st.Requirements(
        "11.1.1", "455 or later", ("418.xx", "440.30", "450.xx"), "6.0", ("Pascal", "Volta", "Turing", "NVIDIA Ampere"))
    # a secondary value and a chosen statement are marked, and the marks explained
    assert "NVIDIA NCCL 2.8.3[^secondary]" in notes
    assert re.search(r"^- .*pipe\[\^chosen\]$", notes, flags=re.MULTILINE)
    assert "[^chosen]: Chosen by the ngcbuild maintainers: not a statement by NVIDIA." in notes
    assert "[^secondary]: From secondary evidence" in notes
    assert "[^drafted]: Drafted by ngcbuild" in notes  # no key features in the manifest: drafted
    # Markdown in a manifest's text stays text
    assert r"A \<b\>bold\</b\> claim with \*stars\* and a \| pipe" in notes
    # the table: every release up to 20.12, newest first, not dev
    table = st.notes_table(notes)
    assert list(table) == ["20.12", "20.09"]
    assert table["20.09"] == st.TableRow("20.09", "18.04", "NVIDIA CUDA 11.0.3", "1.7.0a0+8deb4fe", "—")


def test_key_features_drafted_from_the_diff_with_the_predecessor(series, project):
    features = st.notes_list_items(st.notes_sections(render_notes(series, "20.12", project))["Key Features and Enhancements"])
    assert features == [
        "PyTorch container image version 20.12 is based on 1.7.0a0+1606899",
        "The latest version of NVIDIA CUDA 11.1.1 including cuBLAS 11.3.0",
        "The latest version of NVIDIA cuDNN 8.0.5",
    ]  # NCCL is not recorded in 20.09 (archived): not "new", so not drafted


def test_manifest_key_features_are_used_as_written(scratch, project):
    scratch.manifest("20.12", NEW.replace("  announcements:", "  key_features: [The latest version of NVIDIA cuDNN 8.0.5]\n  announcements:"))
    notes = render_notes(Series.load(project), "20.12", project)
    features = st.notes_list_items(st.notes_sections(notes)["Key Features and Enhancements"])
    assert features == ["The latest version of NVIDIA cuDNN 8.0.5"]
    assert "[^drafted]" not in notes


def test_cpu_only_release_says_so(series, project, scratch):
    path = write_notes(project, "dev")
    assert path == scratch.root / "build" / "dev" / "release-notes.md"
    sections = st.notes_sections(path.read_text())
    assert "needs no NVIDIA driver" in sections["Driver Requirements"]
    assert "torch 2.13.0+cpu" in sections["Contents of the PyTorch container"]  # the pinned environment
    assert "/etc/pip/constraint.txt" in sections["Contents of the PyTorch container"]
    assert "Tensor Core Examples" not in sections


def test_diff_kinds_packages_and_settings(series, project):
    catalog = Catalog.load(project)
    diff = diff_releases(series.get("20.09"), series.get("20.12"), catalog)
    kinds = {c.name: c.kind for c in diff.components}
    assert kinds == {"pytorch": "rebuilt", "cuda": "upgraded", "cublas": "upgraded", "cudnn": "upgraded",
                     "nccl": "not recorded"}
    assert diff.packages is None  # archived releases have no constraints
    settings = {s.setting: (s.old, s.new, s.kind) for s in diff.settings}
    assert settings["Python"] == ("3.6", "3.8", "changed")
    assert settings["operating system"] == ("Ubuntu 18.04", "Ubuntu 20.04", "changed")
    assert "Tensor Core examples in the image" not in settings  # none recorded for 20.09: not compared
    assert [item.head.text for item in drafted_features(diff, series.get("20.12").release, catalog)] == [
        "NVIDIA CUDA 11.1.1", "NVIDIA cuDNN 8.0.5"]


def test_diff_between_buildable_releases_compares_packages_and_switches(scratch, project):
    scratch.copy_release("dev", "next")
    manifest = scratch.root / "manifests" / "next.yaml"
    manifest.write_text(manifest.read_text().replace("constraint_file: true", "constraint_file: false"))
    constraints = scratch.root / "constraints" / "next.txt"
    constraints.write_text(constraints.read_text().replace("numpy==2.4.6", "numpy==2.3.4")
                           .replace("tqdm==4.70.1\n", "") + "rich==14.0.0\n")
    series = Series.load(project)
    diff = diff_releases(series.get("dev"), series.get("next"), Catalog.load(project))
    assert diff.components == ()
    packages = {c.name: (c.kind, c.old, c.new) for c in diff.packages}
    assert packages == {"numpy": ("downgraded", "2.4.6", "2.3.4"), "rich": ("added", None, "14.0.0"),
                        "tqdm": ("removed", "4.70.1", None)}
    switch = [s for s in diff.settings if s.setting.startswith("pip constraint file")]
    assert [(s.old, s.new, s.kind) for s in switch] == [(True, False, "switched off")]
    text = render_diff(project, series, "dev", "next")
    assert "- pip constraint file /etc/pip/constraint.txt: switched off" in text
    assert "| numpy | downgraded | 2.4.6 | 2.3.4 |" in text


def test_matrix_markdown_and_json(series, project):
    text = render_matrix(project, series)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[0].split("|")[1:-1] == [f" {h} " for h in (
        "Release", "Status", "Ubuntu", "Python", "CUDA", "cuDNN", "NCCL", "PyTorch", "TensorRT", "DALI",
        "Minimum driver", "Minimum compute capability")]
    assert [line.split("|")[1].strip() for line in lines[1:]] == ["dev", "20.12", "20.09"]
    assert "| 20.12 | archived | 20.04 | 3.8 | 11.1.1 | 8.0.5 | 2.8.3[^secondary] | 1.7.0a0+1606899 | — | — | 455 or later | 6.0 |" in text
    data = matrix_json(project, series)
    json.dumps(data)
    row = next(r for r in data["releases"] if r["release"] == "20.12")
    assert row["nccl"] == "2.8.3" and row["provenance"]["nccl"] == "secondary"
    assert row["tensorrt"] is None and "tensorrt" not in row["provenance"]
    assert row["os"] == {"name": "Ubuntu", "version": "20.04"}
    dev = next(r for r in data["releases"] if r["release"] == "dev")
    assert dev["ubuntu"] == "Debian 12" and dev["cuda"] is None and dev["status"] == "buildable"
    assert dev["origin"] == "public-wheels" and row["origin"] == "nvidia"
    assert "| dev | buildable, public wheels (not an NVIDIA release) |" in text


def test_markdown_escape():
    assert md("MAGMA<=2.5.1") == r"MAGMA\<=2.5.1"
    assert md("NCCL_ALGO=NVLS") == "NCCL_ALGO=NVLS"
    assert md("_private *x* [a](b) `c` d|e") == r"\_private \*x\* \[a\](b) \`c\` d\|e"


def test_html_never_passes_manifest_markup_through():
    html = to_html("A <script>alert(1)</script> and <b>b</b>\n\n<div>block</div>")
    assert "<script>" not in html and "<div>" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html


def test_site_pages_are_static_offline_and_phone_ready(project):
    site = build_site(project)
    names = sorted(p.relative_to(site.directory).as_posix() for p in site.pages)
    assert names == ["diffs/20.12.html", "diffs/dev.html", "index.html",
                     "releases/20.09.html", "releases/20.12.html", "releases/dev.html"]
    assert (site.directory / "style.css").is_file()
    for page in site.pages:
        html = page.read_text()
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
        assert "<script" not in html
        # everything it loads is local: no src/href to another host
        assert not re.findall(r'(?:src|href)="(?:https?:)?//', html), page
    index = site.index.read_text()
    assert '<a href="releases/20.12.html">20.12</a>' in index
    assert "@media (max-width:" in (site.directory / "style.css").read_text()


def test_tasks_are_wired_and_bad_input_is_exit_2(scratch, project):
    ok = scratch.invoke("matrix", "--json")
    assert ok.returncode == 0, ok.stderr
    assert [r["release"] for r in json.loads(ok.stdout)["releases"]] == ["dev", "20.12", "20.09"]
    diff = scratch.invoke("diff", "20.09", "20.12")
    assert diff.returncode == 0 and "| NVIDIA cuDNN | upgraded | 8.0.4 | 8.0.5 |" in diff.stdout
    notes = scratch.invoke("notes", "--release", "20.12")
    assert notes.returncode == 0 and (scratch.root / "build" / "20.12" / "release-notes.md").is_file()
    bad = scratch.invoke("diff", "20.09", "21.01")
    assert bad.returncode == 2 and "no release '21.01'" in bad.stderr and "Traceback" not in bad.stderr
    bad = scratch.invoke("notes", "--release", "nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_public_wheels_release_says_it_is_not_nvidias_and_lists_what_it_lacks():
    from ..conftest import REPO

    repo = Project.at(REPO)
    path = write_notes(repo, "cuda-dev")
    text = path.read_text()
    sections = st.notes_sections(text)
    contents = sections["Contents of the PyTorch container"]
    assert "This is not an NVIDIA release" in text
    included, _, lacking = contents.partition("does not include the following")
    # TensorRT, Transformer Engine and APEX are left out: never listed as included, each with its reason
    for name in ("TensorRT 10.16.1.11", "Transformer Engine 2.20.2", "APEX 0.1"):
        assert name not in included and f"- {name}: " in lacking
    assert "NVIDIA cuDNN 9.19.0.56" in included and "torchvision 0.26.0" in included
    row = next(r for r in matrix_json(repo)["releases"] if r["release"] == "cuda-dev")
    assert row["origin"] == "public-wheels" and row["tensorrt"] == "not included" and row["cuda"] == "13.0.2"
