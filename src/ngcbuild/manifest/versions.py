"""Comparing two versions of one component or package.

PEP 440 versions compare with `packaging`. Two builds of one public version that differ only in the
local part (`2.10.0a0+b4e4ee81d3` and `2.10.0a0+a5b4d78`, different commits) are neither newer nor
older: they are "rebuilt". Versions that are not PEP 440 (`r20.12`) compare part by part, numbers as
numbers.
"""

from __future__ import annotations

import re
from typing import Literal

from packaging.version import InvalidVersion, Version

Change = Literal["same", "upgraded", "downgraded", "rebuilt"]


def compare(old: str, new: str) -> Change:
    if old == new:
        return "same"
    try:
        before, after = Version(old), Version(new)
    except (InvalidVersion, ValueError):  # ValueError: a number too long for int()
        before_key, after_key = fallback_key(old), fallback_key(new)
        if before_key == after_key:
            return "rebuilt"
        return "upgraded" if after_key > before_key else "downgraded"
    if before.public == after.public and before.local != after.local:
        return "rebuilt"
    if after == before:
        return "same"  # spelt differently, equal by PEP 440 (1.0 and 1.0.0)
    return "upgraded" if after > before else "downgraded"


def fallback_key(version: str) -> tuple:
    """Numbers compare as numbers, words as words, a number sorts after a word at the same place.
    A number is compared by its length without leading zeros, then its digits: as int() would,
    without int()'s limit on very long numbers."""
    parts = re.findall(r"[0-9]+|[A-Za-z]+", version)
    return tuple((1, len(p.lstrip("0")), p.lstrip("0")) if p.isdigit() else (0, 0, p.lower()) for p in parts)
