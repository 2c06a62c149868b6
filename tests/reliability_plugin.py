"""The reliability figures as a by-product of the test run, written under build/ only.

The tests marked `reliability` (the corpus of broken and hostile inputs, the generated examples, the
fault tests, the secrets scans) record their measurements through the `figures` fixture
(tests/conftest.py) into build/reliability/figures.jsonl while the suite runs. When the run held every
one of them (the whole suite, or `-m reliability` over all of tests/: nothing of theirs deselected,
none skipped outside CI, each with a result), the session ends by writing the figures to
build/reliability/RELIABILITY.md, and fails if a figure is not as it must be. Any other run writes
nothing and says why. A test run never writes a project file (`git status` stays clean): the
project's RELIABILITY.md is refreshed by one explicit command, `invoke reliability` (`--from-run`
copies what this plugin wrote), and tests/unit/test_reliability_current.py fails when it is out of
date with what the tests hold.

The counting and the Markdown are dev.reliability's `summarize` and `render`. A caller
that sets NGCBUILD_FIGURES itself (`invoke reliability`) reads the records and writes the report
itself: the plugin then only leaves the records where it was told.

A whole run may be split over several pytest processes (`invoke test`, dev/test_run.py: the engine's
tests beside the rest): each is started with NGCBUILD_FIGURES_PART naming a file, where its session
leaves what it saw (`Part`: the paths it collected, its reliability tests and their outcomes, what it
deselected, the records) instead of judging; the caller merges the parts and judges them as one
session (`judge_parts`), with the same rules and the same report.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

MARKER = "reliability"
FIGURES = "NGCBUILD_FIGURES"
PART = "NGCBUILD_FIGURES_PART"
REPORT = "RELIABILITY.md"
WRITTEN_BY = ("Written by `invoke reliability`", "Written by the whole test run (`invoke test`)")


class ReliabilityFigures:
    """A pytest plugin (registered by tests/conftest.py) for one session."""

    def __init__(self, config: pytest.Config, root: Path, in_ci: bool):
        self.config, self.root, self.in_ci = config, root, in_ci
        self.tests = root / "tests"
        part = os.environ.get(PART)
        self.part = Path(part) if part else None  # one part of a whole run: leave what we saw there
        given = None if self.part else os.environ.get(FIGURES)
        self.owned = not given  # ours to start afresh, read and turn into the figures report (or part)
        self.records = (Path(given) if given else self.part.with_suffix(".jsonl") if self.part
                        else root / "build" / "reliability" / "figures.jsonl")
        self.marked: set[str] = set()  # node ids of the selected reliability tests
        self.deselected = 0  # reliability tests left out by -k, -m, --deselect, --lf...
        self.outcomes: dict[str, str] = {}
        self.duration = 0.0
        self.verdict: tuple[str, bool] | None = None  # (line for the terminal, figures ok)
        # What this session's own tests recorded (the `figures` fixture hands each record here too):
        # the report is made from these, so a file replaced or emptied during the run (seen once in CI,
        # cause not found) cannot drop figures.
        self.recorded: list[dict] = []

    # --- while the session runs ----------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.owned:
            self.records.parent.mkdir(parents=True, exist_ok=True)
            self.records.unlink(missing_ok=True)  # figures of this run only
            os.environ[FIGURES] = str(self.records)
        if self.part:
            self.part.unlink(missing_ok=True)
            # this session's alone: a pytest a test starts sees NGCBUILD_FIGURES and only adds records
            os.environ.pop(PART, None)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.owned:
            os.environ.pop(FIGURES, None)

    def pytest_deselected(self, items) -> None:
        self.deselected += sum(1 for item in items if item.get_closest_marker(MARKER))

    @pytest.hookimpl(trylast=True)  # after -k and -m have deselected
    def pytest_collection_modifyitems(self, items) -> None:
        self.marked = {item.nodeid for item in items if item.get_closest_marker(MARKER)}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid not in self.marked:
            return
        self.duration += report.duration
        before = self.outcomes.get(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and before != "failed":
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and before is None:
            self.outcomes[report.nodeid] = "passed"

    # --- at the end ----------------------------------------------------------------------------

    def seen(self) -> "Part":
        start = self.config.invocation_params.dir
        return Part(paths=[str((start / arg.split("::")[0]).resolve()) for arg in self.config.args],
                    marked=sorted(self.marked), deselected=self.deselected, outcomes=self.outcomes,
                    duration=self.duration, records=self.recorded or read_records(self.records))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        if self.part:  # the caller judges the parts together
            write_part(self.part, self.seen())
            return
        if not self.owned:
            return
        self.verdict = judge(self.root, self.seen(), self.in_ci)
        if self.verdict and not self.verdict[1] and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.verdict:
            line, ok = self.verdict
            terminalreporter.write_sep("-", "reliability figures")
            terminalreporter.write_line(line, red=not ok, bold=not ok)


def read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- one session's view, and the judging of one or several ------------------------------------

@dataclass
class Part:
    """What one session saw: the paths it collected, its reliability tests (node ids) and their
    outcomes, how many it deselected, the sum of their durations, the records they made."""
    paths: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)
    deselected: int = 0
    outcomes: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0
    records: list[dict] = field(default_factory=list)


def write_part(path: Path, part: Part) -> None:
    from ngcbuild.core.outputs import write_file

    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, json.dumps(asdict(part)), within=path.parent)


def read_part(path: Path) -> Part | None:
    """A session's part, or None where the session left none (it did not get to its end)."""
    if not path.is_file():
        return None
    return Part(**json.loads(path.read_text(encoding="utf-8")))


def merged(parts: list[Part]) -> Part:
    whole = Part()
    for part in parts:
        whole.paths += part.paths
        whole.marked += part.marked
        whole.deselected += part.deselected
        whole.outcomes.update(part.outcomes)
        whole.duration += part.duration
        whole.records += part.records
    return whole


def covers(paths: list[str], tests: Path) -> bool:
    """Whether the collected paths hold all of tests/: tests/ itself (or above it), or each of its
    folders that hold tests where it holds no test file of its own."""
    held = [Path(p) for p in paths]
    if any(p == tests or p in tests.parents for p in held):
        return True
    if any(tests.glob("test_*.py")):
        return False
    needed = [d for d in tests.iterdir() if d.is_dir() and any(d.rglob("test_*.py"))]
    return all(any(p == d or p in d.parents for p in held) for d in needed)


def why_not(seen: Part, tests: Path, in_ci: bool) -> str | None:
    """Why a run cannot stand for the figures, or None when it held every reliability test."""
    if not seen.marked:
        return "no reliability test was selected"
    if not covers(seen.paths, tests):
        return "only part of tests/ was collected"
    if seen.deselected:
        return f"{seen.deselected} reliability test(s) were deselected"
    unrun = len(seen.marked) - len(seen.outcomes)
    if unrun:
        return f"{unrun} reliability test(s) did not run"
    skipped = sum(outcome == "skipped" for outcome in seen.outcomes.values())
    if skipped and not in_ci:
        return f"{skipped} reliability test(s) were skipped (no engine?); with CI=true they fail instead"
    return None


def judge(root: Path, seen: Part, in_ci: bool) -> tuple[str, bool] | None:
    """Writes build/reliability/RELIABILITY.md from a run that held every reliability test: (the line
    for the terminal, whether every figure is as it must be); a partial run writes nothing and says why
    (None: no reliability test was selected at all)."""
    report = root / "build" / "reliability" / REPORT
    shown = report.relative_to(root) if report.is_relative_to(root) else report
    why = why_not(seen, root / "tests", in_ci)
    if why:
        return (f"{shown} not written: {why}", True) if seen.marked else None
    from dev.reliability import render, summarize

    from ngcbuild.core.outputs import write_file

    counts = {name: sum(o == name for o in seen.outcomes.values()) for name in ("passed", "failed", "skipped")}
    summary = summarize(seen.records, counts, seen.duration)
    text = render(summary, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    assert WRITTEN_BY[0] in text, "dev.reliability.render no longer says who wrote the report"
    text = text.replace(*WRITTEN_BY, 1)
    report.parent.mkdir(parents=True, exist_ok=True)
    write_file(report, text, within=root)
    said = (f"wrote {shown}: {len(summary.corpus.inputs)} broken inputs ({summary.corpus.tried} runs), "
            f"{summary.hostile_total.cases} hostile inputs, {summary.faults.tried} faults, "
            f"{summary.secrets.tried} secret scans")
    if summary.ok:
        return (f"{said}; every figure is as it must be (`invoke reliability --from-run` puts them in {REPORT})",
                True)
    return f"{said}; SOME FIGURES ARE NOT AS THEY MUST BE (see {shown})", False


def judge_parts(root: Path, part_files: list[Path], in_ci: bool) -> tuple[str, bool] | None:
    """The parts of a whole run split over processes, judged as one session; a part missing (its
    session did not end) is a run that cannot stand for the figures."""
    parts = [read_part(path) for path in part_files]
    missing = [path.name for path, part in zip(part_files, parts, strict=True) if part is None]
    if missing:
        return f"build/reliability/{REPORT} not written: no figures from {', '.join(missing)}", False
    return judge(root, merged(parts), in_ci)
