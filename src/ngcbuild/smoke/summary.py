"""The one-screen summary at the end of a smoke run, of the rows the JUnit report's one reader
(smoke/junit.py) made: each check, its result, its headline figure (the `figure` property a check
records) or why it was skipped or failed. The same table for container and host runs, and what CI's
JUnit viewer shows."""

from __future__ import annotations

import shutil

from ngcbuild.smoke.junit import Row, counts


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
    total = counts(rows)
    lines.append("-" * min(width, 160))
    lines.append(f"{total.passed} passed, {total.failed} failed, {total.errors} error, {total.skipped} skipped")
    return "\n".join(lines) + "\n"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
