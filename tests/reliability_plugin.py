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
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

MARKER = "reliability"
FIGURES = "NGCBUILD_FIGURES"
REPORT = "RELIABILITY.md"
WRITTEN_BY = ("Written by `invoke reliability`", "Written by the whole test run (`invoke test`)")


class ReliabilityFigures:
    """A pytest plugin (registered by tests/conftest.py) for one session."""

    def __init__(self, config: pytest.Config, root: Path, in_ci: bool):
        self.config, self.root, self.in_ci = config, root, in_ci
        self.tests = root / "tests"
        given = os.environ.get(FIGURES)
        self.owned = not given  # ours to start afresh, read and turn into the figures report
        self.records = Path(given) if given else root / "build" / "reliability" / "figures.jsonl"
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

    def missing(self, session: pytest.Session) -> str | None:
        """Why this run cannot stand for the figures, or None when it held every reliability test."""
        if not self.owned:
            return f"{FIGURES} was set by the caller, who writes the report"
        if not self.marked:
            return "no reliability test was selected"
        start = self.config.invocation_params.dir
        paths = [(start / arg.split("::")[0]).resolve() for arg in self.config.args]
        if not any(path == self.tests or path in self.tests.parents for path in paths):
            return "only part of tests/ was collected"
        if self.deselected:
            return f"{self.deselected} reliability test(s) were deselected"
        unrun = len(self.marked) - len(self.outcomes)
        if unrun:
            return f"{unrun} reliability test(s) did not run"
        skipped = sum(outcome == "skipped" for outcome in self.outcomes.values())
        if skipped and not self.in_ci:
            return f"{skipped} reliability test(s) were skipped (no engine?); with CI=true they fail instead"
        return None

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        why_not = self.missing(session)
        report = self.records.parent / REPORT
        shown = report.relative_to(self.root) if report.is_relative_to(self.root) else report
        if why_not:
            if self.marked and self.owned:
                self.verdict = (f"{shown} not written: {why_not}", True)
            return
        from dev.reliability import render, summarize

        from ngcbuild.core.outputs import write_file

        records = self.recorded or read_records(self.records)
        counts = {name: sum(o == name for o in self.outcomes.values()) for name in ("passed", "failed", "skipped")}
        summary = summarize(records, counts, self.duration)
        text = render(summary, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        assert WRITTEN_BY[0] in text, "dev.reliability.render no longer says who wrote the report"
        text = text.replace(*WRITTEN_BY, 1)
        write_file(report, text, within=self.root)
        said = (f"wrote {shown}: {len(summary.corpus.inputs)} broken inputs ({summary.corpus.tried} runs), "
                f"{summary.hostile_total.cases} hostile inputs, {summary.faults.tried} faults, "
                f"{summary.secrets.tried} secret scans")
        self.verdict = (f"{said}; every figure is as it must be (`invoke reliability --from-run` puts them in "
                        f"{REPORT})" if summary.ok
                        else f"{said}; SOME FIGURES ARE NOT AS THEY MUST BE (see {shown})", summary.ok)
        if not summary.ok and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.verdict:
            line, ok = self.verdict
            terminalreporter.write_sep("-", "reliability figures")
            terminalreporter.write_line(line, red=not ok, bold=not ok)


def read_records(path: Path) -> list[dict]:
    import json

    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
