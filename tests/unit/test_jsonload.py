"""core/jsonload.py: the one reader of JSON from outside, bounded in size and depth."""

from __future__ import annotations

import json

import pytest

from ngcbuild.core.jsonload import MAX_DEPTH, JsonRefused, deeper_than, load_json


@pytest.mark.parametrize("data, problem", [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than"),  # the parser's RecursionError, refused
    ('{"a": ' * 5000 + "1" + "}" * 5000, "nested deeper than"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than"),  # parses, deeper than the bound
    ("[1,", "not valid JSON"),
    (b"\xff\xfe\xff", "not"),
    ("", "not valid JSON"),
])
def test_what_is_refused_says_why(data, problem):
    with pytest.raises(JsonRefused) as refused:
        load_json(data, "the answer of h.example")
    assert problem in str(refused.value) and str(refused.value).startswith("the answer of h.example: ")
    assert problem in refused.value.problem and isinstance(refused.value, ValueError)


def test_size_is_checked_before_parsing():
    with pytest.raises(JsonRefused, match="over the 10 read"):
        load_json(b"[" + b"1," * 100 + b"1]", max_bytes=10)


def test_what_is_within_the_bounds_is_the_standard_parse():
    document = {"files": [{"filename": "a[{", "nested": [[[["x"]]]]}], "n": 1.5, "s": "\u00e9"}
    assert load_json(json.dumps(document)) == document == load_json(json.dumps(document).encode())
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert load_json('"[[[["') == "[[[["  # brackets in a string are no nesting
    assert load_json("5") == 5


def test_the_depth_walk_needs_no_recursion():
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    assert deeper_than(deep, 64) and not deeper_than([[1], {"a": [2]}], 3) and not deeper_than("x", 0)
