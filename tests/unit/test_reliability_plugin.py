"""The figures written at the end of a run that held every reliability test (tests/reliability_plugin.py),
proven on a small project of its own run by a real pytest: the report is written from what the tests
recorded, under build/ only (the project's RELIABILITY.md is never touched by a test run), the run
fails when a figure is wrong, and a partial run writes nothing. Then `invoke reliability --from-run`
(dev/reliability.py), the one command that refreshes RELIABILITY.md: the last run's figures and the
planted defects' tables of build/R/mutants.md, the sections of others kept."""

import os
import subprocess
import sys

import pytest
from dev.reliability import run_reliability, with_sections

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.project import Project

from ..conftest import REPO

CONFTEST = """
import json, os
from pathlib import Path

import pytest
from reliability_plugin import ReliabilityFigures


def pytest_configure(config):
    config.pluginmanager.register(ReliabilityFigures(config, Path(__file__).parent, in_ci=False), "figures-plugin")


@pytest.fixture
def figures(request):
    def record(**fields):
        with open(os.environ["NGCBUILD_FIGURES"], "a") as handle:
            handle.write(json.dumps({"test": request.node.nodeid, **fields}) + "\\n")
    return record
"""

TESTS = """
import pytest

GOOD = [
    *({"suite": "corpus", "case": f"c{i} (build)", "input": f"c{i}", "clean": True} for i in range(40)),
    *({"suite": "hostile", "case": f"h{i}", "klass": f"class {i % 6}", "clean": True} for i in range(42)),
    *({"suite": "fuzz", "case": f"property {i}", "examples": 10, "accepted": 5, "clean_errors": 5} for i in range(3)),
    {"suite": "secrets", "case": "the image", "found": 0},
]


@pytest.mark.reliability
def test_a_fault(figures):
    figures(suite="fault", case="a fault", clean=CLEAN, leftovers=0)


@pytest.mark.reliability
def test_the_rest(figures):
    for record in GOOD:
        figures(**record)


def test_not_a_figure():
    pass
"""

OTHERS = "<!-- mutants:dev:begin -->\n## Mutants\n\n| kept | 1 |\n<!-- mutants:dev:end -->"


def _project(tmp_path, clean: bool):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    reliability: a figure\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_figures.py").write_text(TESTS.replace("CLEAN", str(clean)))
    (tmp_path / "RELIABILITY.md").write_text(f"# old figures\n\n{OTHERS}\n\nold text\n")
    return tmp_path


def _pytest(project, *args, env=None) -> subprocess.CompletedProcess:
    # ours, not theirs (a whole run's part file too, if the run was told of one)
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("NGCBUILD_FIGURES")},
           **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests"), str(REPO), env.get("PYTHONPATH", "")])  # dev.reliability
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


LAST_RUN = "build/reliability/RELIABILITY.md"


def test_a_whole_run_writes_the_figures_under_build_and_no_project_file(tmp_path):
    project = _project(tmp_path, clean=True)
    before = (project / "RELIABILITY.md").read_text()
    result = _pytest(project, "tests")
    report = (project / LAST_RUN).read_text()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"wrote {LAST_RUN}: 40 broken inputs (40 runs), 42 hostile inputs, 1 faults" in result.stdout
    assert "All figures are as they must be" in report and "| a fault | yes | 0 |" in report
    assert "Written by the whole test run (`invoke test`)" in report
    assert "| tests passed / failed / skipped | 2 / 0 / 0 |" in report  # the reliability tests only
    assert (project / "RELIABILITY.md").read_text() == before  # a test run writes no project file
    assert (project / "build" / "reliability" / "figures.jsonl").read_text().count("\n") == 1 + 40 + 42 + 3 + 1

    # the one command that refreshes RELIABILITY.md: the run's figures, the sections of others kept
    run_reliability(Project.at(project), out=open(os.devnull, "w"), from_run=True)
    refreshed = (project / "RELIABILITY.md").read_text()
    assert refreshed.startswith(report.rstrip("\n")) and OTHERS in refreshed and "old text" not in refreshed
    assert not list(project.glob(".RELIABILITY.md-*")), "no temporary file left"


def test_a_figure_not_as_it_must_be_fails_the_run_that_passed(tmp_path):
    project = _project(tmp_path, clean=False)
    before = (project / "RELIABILITY.md").read_text()
    result = _pytest(project, "tests")
    report = (project / LAST_RUN).read_text()
    assert "3 passed" in result.stdout
    assert result.returncode == 1, result.stdout + result.stderr
    assert "SOME FIGURES ARE NOT AS THEY MUST BE" in result.stdout
    assert "SOME FIGURES ARE WRONG" in report and "| a fault | **no** | 0 |" in report
    with pytest.raises(OperationError, match="not all as they must be"):  # never copied into RELIABILITY.md
        run_reliability(Project.at(project), out=open(os.devnull, "w"), from_run=True)
    assert (project / "RELIABILITY.md").read_text() == before and OTHERS in before


def test_a_partial_run_writes_nothing_and_says_why(tmp_path):
    project = _project(tmp_path, clean=False)
    before = (project / "RELIABILITY.md").read_text()
    for args, why in ((["tests", "-k", "a_fault"], "1 reliability test(s) were deselected"),
                      (["tests/test_figures.py"], "only part of tests/ was collected")):
        result = _pytest(project, *args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"{LAST_RUN} not written: {why}" in result.stdout
        assert (project / "RELIABILITY.md").read_text() == before and not (project / LAST_RUN).exists()
    with pytest.raises(UserError, match="no figures of a whole test run"):
        run_reliability(Project.at(project), out=open(os.devnull, "w"), from_run=True)


def test_sections_of_others_are_kept_verbatim_and_in_order():
    old = "# figures\n<!-- a:begin -->\nA\n<!-- a:end -->\ntext\n<!-- b:x:begin -->B <!-- b:x:end -->\n"
    assert with_sections("new\n", old, {}) == ("new\n\n<!-- a:begin -->\nA\n<!-- a:end -->\n\n"
                                               "<!-- b:x:begin -->B <!-- b:x:end -->\n")
    assert with_sections("new\n", "no sections", {}) == "new\n"
    already = "new\n<!-- a:begin -->\nA\n<!-- a:end -->\n"
    assert with_sections(already, old, {}).count("<!-- a:begin -->") == 1


def test_a_table_mutate_left_in_build_replaces_its_section_and_a_new_one_is_added(tmp_path):
    """`ngcbuild mutate` writes build/R/mutants.md only; `invoke reliability` takes it into RELIABILITY.md."""
    from ngcbuild.smoke.mutate import markers

    (tmp_path / "build" / "reliability").mkdir(parents=True)
    (tmp_path / LAST_RUN).write_text("# Reliability and security figures\n\n**All figures are as they must be.**\n")
    old_dev, old_cuda = (f"{markers(n)[0]}\nold {n}\n{markers(n)[1]}" for n in ("dev", "cuda-dev"))
    (tmp_path / "RELIABILITY.md").write_text(f"# old\n\n{old_dev}\n\n{old_cuda}\n")
    for name in ("dev", "next"):
        (tmp_path / "build" / name).mkdir()
        (tmp_path / "build" / name / "mutants.md").write_text(f"{markers(name)[0]}\nnew {name}\n{markers(name)[1]}\n")
    run_reliability(Project.at(tmp_path), out=open(os.devnull, "w"), from_run=True)
    text = (tmp_path / "RELIABILITY.md").read_text()
    assert text.startswith("# Reliability and security figures\n") and "# old" not in text
    assert "new dev" in text and "old dev" not in text and old_cuda in text and "new next" in text
    assert text.index("new dev") < text.index("old cuda-dev") < text.index("new next")


def test_a_whole_run_split_over_two_processes_is_judged_as_one(tmp_path):
    """`invoke test` runs the integration tests beside the rest (dev/test_run.py): each session leaves
    its part, and the parts together are judged as one session's would be; a part that is missing (its
    session did not end) or a folder no part collected writes nothing and says why."""
    from ..reliability_plugin import PART, judge_parts

    project = _project(tmp_path, clean=True)
    (project / "tests" / "test_figures.py").unlink()
    for folder in ("a", "b"):
        (project / "tests" / folder).mkdir()
        (project / "tests" / folder / "test_figures.py").write_text(
            TESTS.replace("CLEAN", "True") + f"\n\ndef test_{folder}_is_here():\n    pass\n")
    parts = [project / "build" / "parts" / "a.json", project / "build" / "parts" / "b.json"]
    for folder, part in zip(("a", "b"), parts, strict=True):
        result = _pytest(project, f"tests/{folder}", env={PART: str(part)})
        assert result.returncode == 0, result.stdout + result.stderr
        assert "reliability figures" not in result.stdout  # a part judges nothing itself
    assert not (project / LAST_RUN).exists()

    line, ok = judge_parts(project, parts, in_ci=False)
    assert ok and line.startswith(f"wrote {LAST_RUN}: 40 broken inputs (80 runs), 84 hostile inputs, 2 faults"), line
    assert "| tests passed / failed / skipped | 4 / 0 / 0 |" in (project / LAST_RUN).read_text()

    (project / LAST_RUN).unlink()
    line, ok = judge_parts(project, parts[:1], in_ci=False)  # folder b collected by no part
    assert (line, ok) == (f"{LAST_RUN} not written: only part of tests/ was collected", True)
    parts[1].unlink()
    line, ok = judge_parts(project, parts, in_ci=False)
    assert not ok and line == f"{LAST_RUN} not written: no figures from b.json", line
    assert not (project / LAST_RUN).exists()
