"""The one reader of JSON that ngcbuild did not write in this run: a registry's documents and errors,
an index's project pages, PyPI's advisory data, a token service's answer, a signed statement, the
engine's answers, and records and reports read back from build/.

`load_json` bounds what the standard library does not: the size (checked before parsing) and the depth
of nesting (Python's parser recurses once per level, and a few thousand `[` end in a RecursionError,
refused here; what parses is walked, without recursion, to `max_depth` levels, so that no reader that
walks it recursively meets a structure deeper than that). Every refusal is a
`JsonRefused`, a ValueError (so a reader that already caught the parser's ValueError keeps its one
message) whose text says what was wrong in words safe to print.
"""

from __future__ import annotations

import json

MAX_DEPTH = 64  # levels of [ and {: every document we read nests under 12 (an SBOM's, an in-toto statement's)
MAX_BYTES = 64 << 20  # an index's project page (pydantic-core's lists 7 MB of files) with room to spare


class JsonRefused(ValueError):
    """JSON that is not valid, too large or nested too deeply: the message is "WHAT: PROBLEM", and
    `problem` the words without WHAT (for a reader whose own message names the place)."""

    def __init__(self, what: str, problem: str):
        super().__init__(f"{what}: {problem}")
        self.problem = problem


def load_json(data: str | bytes, what: str = "the answer", *, max_depth: int = MAX_DEPTH,
              max_bytes: int = MAX_BYTES):
    """`data` parsed as JSON, or JsonRefused("WHAT: why") when it is over `max_bytes`, nested deeper than
    `max_depth` levels, not UTF-8 text (bytes) or not valid JSON. (A str is measured in characters.)"""
    size = len(data)
    if size > max_bytes:
        raise JsonRefused(what, f"{size} bytes of JSON, over the {max_bytes} read")
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode(json.detect_encoding(data))
        except (UnicodeDecodeError, LookupError):
            raise JsonRefused(what, "not JSON (not UTF-8 text)") from None
    else:
        text = data
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonRefused(what, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JsonRefused(what, f"JSON nested deeper than {max_depth} levels") from None
    if text.count("[") + text.count("{") > max_depth and deeper_than(value, max_depth):
        raise JsonRefused(what, f"JSON nested deeper than {max_depth} levels")
    return value


def deeper_than(value, limit: int) -> bool:
    """Whether a parsed JSON value nests more than `limit` levels of lists and objects (walked with a
    stack of its own, never recursively)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                if level + 1 > limit:
                    return True
                stack.append((child, level + 1))
    return False
