"""Every pattern and parser that reads a user's string takes linear time on hostile input.

A pattern that nests quantifiers over overlapping characters (`([.-]?[a-z0-9]+)*`) backtracks
exponentially when the match fails at the end: the 42-character version `1aaaa...a!` hung render.
Each check gets strings of 50 to 5000 characters built from pieces that it accepts, ended by a
character that makes the match fail, and must answer each within a bound far below what a
backtracking pattern needs (exponential ones never answer; quadratic ones take seconds at 5000).
"""

from __future__ import annotations

import itertools
import time

import pytest

from ngcbuild.core import references
from ngcbuild.core.errors import UserError
from ngcbuild.core.names import check_release_name
from ngcbuild.manifest import fields
from ngcbuild.manifest.constraints import parse_pin

LENGTHS = (50, 500, 5000)
BOUND_S = 0.05  # per string; a linear check answers 5000 characters in well under a millisecond
PIECES = ("1", "a", "1a", "a1", "1.", ".1", "a-", "-a", "a.", "a_", "_a", "a+", "+a", "~a", "a/", "/a", "a:",
          ":1", "1 ", " 1", "a,", "=a", "@a", "(a", "^a", "+PTX", "1.1 ", "--a", "__", "%a", "a=")
ENDINGS = ("!", "\n", "$", " ", "\x00", ";", '"', "A", ":", "")


def hostile_strings():
    for piece, length, ending in itertools.product(PIECES, LENGTHS, ENDINGS):
        yield (piece * (length // len(piece) + 1))[:length] + ending
        yield "1" + (piece * (length // len(piece) + 1))[:length] + ending
        yield "a" + (piece * (length // len(piece) + 1))[:length] + ending


STRINGS = list(dict.fromkeys(hostile_strings()))


def _pattern(compiled):
    return lambda text: compiled.fullmatch(text)


def _swallow(function, *errors):
    def run(text):
        try:
            function(text)
        except errors:
            pass
    return run


CHECKS = {f"fields.{name}": _pattern(compiled) for name, compiled in fields.PATTERNS.items()}
CHECKS.update({
    "fields.release_parts": fields.release_parts,
    "constraints.parse_pin": lambda text: parse_pin(text, 1) or parse_pin("numpy==" + text, 1),
    "references.parse_host": _swallow(references.parse_host, references.ReferenceProblem),
    "references.ImageRef": _swallow(references.ImageRef.parse, references.ReferenceProblem),
    "references.ImageRef tag": _swallow(lambda t: references.ImageRef.parse("a/b:" + t), references.ReferenceProblem),
    "names.check_release_name": _swallow(check_release_name, UserError),
})


def test_every_pattern_of_types_is_checked():
    assert len(fields.PATTERNS) >= 19  # the release name rule is checked apart (names.check_release_name)
    assert "version" in fields.PATTERNS


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_check_is_linear_on_hostile_strings(name):
    check = CHECKS[name]
    slowest, worst = 0.0, ""
    for text in STRINGS:
        took = _time(check, text)
        if took > BOUND_S:  # a busy machine can pause any run: the best of a few is the check's own time
            took = min(_time(check, text) for _ in range(5))
        if took > slowest:
            slowest, worst = took, text
    assert slowest < BOUND_S, f"{name}: {slowest:.3f}s on {worst[:60]!r}... ({len(worst)} characters)"


def _time(check, text: str) -> float:
    started = time.perf_counter()
    check(text)
    return time.perf_counter() - started


def test_the_version_of_the_issue_is_refused_at_once():
    started = time.perf_counter()
    assert not fields.PATTERNS["version"].fullmatch("1" + "a" * 40 + "!")
    assert time.perf_counter() - started < BOUND_S


@pytest.mark.parametrize("version", ["2.13.0+cpu", "3.11.2-1+b1", "1:2.25.1-1ubuntu3", "2.10.0a0+b4e4ee81d3",
                                     "1.15.0+nv20.11", "9.19.0.56", "12.8.93", "2.28.9-1+cuda13.0", "1.0~rc1"])
def test_the_linear_version_pattern_accepts_what_vendors_write(version):
    assert fields.PATTERNS["version"].fullmatch(version)


@pytest.mark.parametrize("version", ["", "a1", "1..2", "1.", "1.0-", "1;2", "1 2", "1.0+", ".1", "1::2", "1:a"])
def test_the_linear_version_pattern_refuses_what_the_old_one_refused(version):
    assert not fields.PATTERNS["version"].fullmatch(version)
