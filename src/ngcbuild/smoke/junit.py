"""The one reader of a smoke run's JUnit report, and its one counting rule: what the summary table
shows, what the record's `smoke` section counts and what host mode and `mutate` report all come from
`read_junit`.

The report is written by the image's own code (or a host's Python), so it is read as hostile input:
its bytes through smoke/suite_output.py (a link out, a FIFO, an oversized file refused unread), its XML
by expat with handlers of ours, never a tree: a document type (and with it every entity declaration, so
no entity expansion and no external entity) is refused, as is nesting deeper than a JUnit report ever
goes; a text kept is at most a few KB, whatever the file holds.

Counting rule: one row per <testcase>, its result the first of failure, error, skipped it holds (xfail
is pytest's skipped of type pytest.xfail; a strict xpass its failure), else passed. A suite's own
tests/failures/errors/skipped attributes are never read: nested suites would be counted twice, and a
report could claim counts its cases do not hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from xml.parsers import expat

from ngcbuild.core.errors import SmokeFailed
from ngcbuild.core.text import safe
from ngcbuild.smoke.suite_output import JUNIT_LIMIT

MAX_DEPTH = 16  # testsuites/testsuite/testcase/properties/property is 5; a few levels of nested suites
MAX_TEXT = 4096  # of an element's text: only its first line is shown
SHOWN = 500  # a check's name or reason, escaped: the table cuts it to the terminal anyway

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
_OUTCOMES = {"failure": FAILED, "error": ERROR, "skipped": SKIPPED}
_ORDER = ("failure", "error", "skipped")  # which outcome a case holding several reports

# pytest's words for a check parametrised over an empty set: the id "[NOTSET]" and "got empty parameter
# set for (name)" (older pytest: "got empty parameter set ['name'], function f at path:line"). The checks
# give such a set a reason of their own (checks/conftest.each); one that does not is still shown in ours.
_NOTSET = "[NOTSET]"
_NONE_DECLARED = "[none declared]"  # checks/conftest.NONE_DECLARED
_EMPTY_SET = re.compile(r"got empty parameter set (?:for )?[(\[]([^)\]]*)[)\]].*")


@dataclass(frozen=True)
class Row:
    check: str
    result: str  # passed, failed, error, skipped
    detail: str  # the figure, or the reason for a skip/failure


@dataclass(frozen=True)
class Counts:
    passed: int
    failed: int
    errors: int
    skipped: int

    def line(self) -> str:
        """`N passed, N failed, N errors, N skipped`, for a message."""
        return f"{self.passed} passed, {self.failed} failed, {self.errors} errors, {self.skipped} skipped"


class _Refused(Exception):
    pass


def read_junit(data: bytes, what: str = "the smoke suite's JUnit report") -> list[Row]:
    """The rows of a JUnit report's bytes, in its order; SmokeFailed naming `what` and why where the bytes
    are not a JUnit report or are one we do not read (too large, a document type, nested too deep)."""
    if len(data) > JUNIT_LIMIT:
        raise SmokeFailed(f"{what}: {len(data)} bytes, over the {JUNIT_LIMIT} read")
    reader = _Reader()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = reader.doctype
    parser.EntityDeclHandler = reader.doctype
    parser.ExternalEntityRefHandler = reader.doctype
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise SmokeFailed(f"{what} was refused: {exc}") from None
    except expat.ExpatError as exc:
        raise SmokeFailed(f"{what} is not valid XML ({expat.errors.messages[exc.code]} at line {exc.lineno} "
                          f"column {exc.offset})") from None
    if reader.root not in ("testsuites", "testsuite"):
        raise SmokeFailed(f"{what} is not a JUnit report (its root is {safe(reader.root or 'missing', 40)!r})")
    return reader.rows


def counts(rows: list[Row]) -> Counts:
    """The one count of a run: its rows by result."""
    return Counts(passed=sum(r.result == PASSED for r in rows), failed=sum(r.result == FAILED for r in rows),
                  errors=sum(r.result == ERROR for r in rows), skipped=sum(r.result == SKIPPED for r in rows))


class _Reader:
    """expat's handlers: the rows of every <testcase>, wherever it stands under the root."""

    def __init__(self):
        self.root: str | None = None
        self.depth = 0
        self.rows: list[Row] = []
        self.case: dict | None = None  # the open testcase: its name, figure and reports
        self.report: str | None = None  # the open failure/error/skipped element whose text is kept

    def doctype(self, *_):
        raise _Refused("it declares a document type (a JUnit report has none: no entity is expanded)")

    def start(self, tag: str, attrs: dict):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} elements")
        if self.root is None:
            self.root = tag
        if tag == "testcase":
            self.case = {"classname": attrs.get("classname", ""), "name": attrs.get("name", "?"), "figure": "",
                         "reports": {}, "depth": self.depth}
        elif self.case is not None:
            if tag == "property" and attrs.get("name") == "figure" and not self.case["figure"]:
                self.case["figure"] = attrs.get("value", "")
            elif tag in _OUTCOMES and tag not in self.case["reports"]:
                self.case["reports"][tag] = [attrs.get("message") or "", []]
                self.report = tag

    def text(self, data: str):
        if self.report is not None:
            kept = self.case["reports"][self.report][1]
            if sum(map(len, kept)) < MAX_TEXT:
                kept.append(data[:MAX_TEXT])

    def end(self, tag: str):
        if self.case is not None:
            if tag == self.report:
                self.report = None
            elif tag == "testcase" and self.depth == self.case["depth"]:
                self.rows.append(_row(self.case))
                self.case = None
        self.depth -= 1


def _row(case: dict) -> Row:
    # test_gpu_numerics.test_sdpa_backend[flash] -> gpu_numerics::sdpa_backend[flash]: the test_
    # prefixes say nothing in a table of checks, and the width goes to the parameters.
    module = _unprefixed(case["classname"].rsplit(".", 1)[-1])
    name = _unprefixed(case["name"])
    figure = safe(case["figure"], SHOWN)
    result, detail = PASSED, figure
    for tag in _ORDER:
        if tag in case["reports"]:
            message, text = case["reports"][tag]
            result = _OUTCOMES[tag]
            detail = safe(_first_line(message or "".join(text)), SHOWN)
            if figure and result != SKIPPED:
                detail = f"{figure}; {detail}"
            break
    if name.endswith(_NOTSET):
        name = name[: -len(_NOTSET)] + _NONE_DECLARED
    empty = _EMPTY_SET.fullmatch(detail) if result == SKIPPED else None
    if empty:
        names = ", ".join(part.strip(" '\"") for part in empty.group(1).split(","))
        detail = f"nothing to check: none declared for {names}"
    check = f"{module}::{name}" if module else name
    return Row(safe(check, SHOWN), result, detail)


def _unprefixed(name: str) -> str:
    return name[len("test_"):] if name.startswith("test_") else name


def _first_line(text: str) -> str:
    """The message itself: pytest wraps setup errors as 'failed on setup with "Failed: ..."'."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    wrapped = re.fullmatch(r'failed on (?:setup|teardown) with "(.*)"?', line)
    if wrapped:
        line = wrapped.group(1).rstrip('"')
    return line[len("Failed: "):] if line.startswith("Failed: ") else line
