"""The one-screen summary at the end of a smoke run, read back from the JUnit report: each check,
its result, its headline figure (the `figure` property a check records) or why it was skipped or
failed. The same table for container and host runs, and what CI's JUnit viewer shows."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Row:
    check: str
    result: str  # passed, failed, error, skipped
    detail: str  # the figure, or the reason for a skip/failure


def rows_from_junit(path: Path) -> list[Row]:
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        # test_gpu_numerics.test_sdpa_backend[flash] -> gpu_numerics::sdpa_backend[flash]: the
        # test_ prefixes say nothing in a table of checks, and the width goes to the parameters.
        module = _unprefixed(case.get("classname", "").rsplit(".", 1)[-1])
        name = _unprefixed(case.get("name", "?"))
        check = f"{module}::{name}" if module else name
        figure = next((p.get("value", "") for p in case.iter("property") if p.get("name") == "figure"), "")
        result, detail = "passed", figure
        for tag, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            node = case.find(tag)
            if node is not None:
                result = name
                detail = _first_line(node.get("message") or node.text or "")
                if figure and name != "skipped":
                    detail = f"{figure}; {detail}"
                break
        rows.append(Row(check, result, detail))
    return rows


def collapse_passes(rows: list[Row]) -> list[Row]:
    """One row for a run of passed checks of one file that record no figure ("entrypoint::* (5)"),
    so that what needs reading (figures, skips, failures) fits on one screen."""
    collapsed: list[Row] = []
    run: list[Row] = []

    def flush():
        if len(run) > 1:
            collapsed.append(Row(f"{run[0].check.split('::')[0]}::* ({len(run)} checks)", "passed", ""))
        else:
            collapsed.extend(run)
        run.clear()

    for row in rows:
        plain = row.result == "passed" and not row.detail
        if not plain or (run and row.check.split("::")[0] != run[0].check.split("::")[0]):
            flush()
        if plain:
            run.append(row)
        else:
            collapsed.append(row)
    flush()
    return collapsed


def render_table(rows: list[Row], width: int | None = None) -> str:
    """A fixed-width table that fits the terminal (long checks and reasons are cut with '…');
    the counts at the bottom are of every check, before passes are collapsed."""
    width = width or max(80, min(shutil.get_terminal_size((120, 40)).columns, 160))
    shown = collapse_passes(rows)
    check_w = min(max((len(r.check) for r in shown), default=5), width // 2)
    result_w = 7
    detail_w = max(10, width - check_w - result_w - 4)
    lines = [f"{'check':<{check_w}}  {'result':<{result_w}}  figure / reason", "-" * min(width, 160)]
    for row in shown:
        lines.append(f"{_cut(row.check, check_w):<{check_w}}  {row.result:<{result_w}}  {_cut(row.detail, detail_w)}")
    counts = {k: sum(r.result == k for r in rows) for k in ("passed", "failed", "error", "skipped")}
    lines.append("-" * min(width, 160))
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines) + "\n"


def _unprefixed(name: str) -> str:
    return name[len("test_"):] if name.startswith("test_") else name


def _first_line(text: str) -> str:
    """The message itself: pytest wraps setup errors as 'failed on setup with "Failed: ..."'."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    wrapped = re.fullmatch(r'failed on (?:setup|teardown) with "(.*)"?', line)
    if wrapped:
        line = wrapped.group(1).rstrip('"')
    return line[len("Failed: "):] if line.startswith("Failed: ") else line


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
