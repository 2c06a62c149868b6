"""A distribution's apt indexes as `invoke verify` reads them: which versions of a package each suite
holds, and Debian's order of versions (so that a pin older than the archive's update is found)."""

from __future__ import annotations

import lzma
import re
import zlib
from collections import defaultdict
from functools import cmp_to_key

# --- Debian version order (Debian Policy 5.6.12): epoch, then upstream and revision compared part by
# part, letters before non-letters, "~" before everything, even the end.


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    while a or b:
        text_a = re.match(r"[^0-9]*", a).group(0)
        text_b = re.match(r"[^0-9]*", b).group(0)
        for i in range(max(len(text_a), len(text_b))):
            ca = _order(text_a[i]) if i < len(text_a) else 0
            cb = _order(text_b[i]) if i < len(text_b) else 0
            if ca != cb:
                return -1 if ca < cb else 1
        a, b = a[len(text_a):], b[len(text_b):]
        num_a = re.match(r"[0-9]*", a).group(0)
        num_b = re.match(r"[0-9]*", b).group(0)
        if int(num_a or 0) != int(num_b or 0):
            return -1 if int(num_a or 0) < int(num_b or 0) else 1
        a, b = a[len(num_a):], b[len(num_b):]
    return 0


def _split(version: str) -> tuple[int, str, str]:
    epoch, _, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
    return int(epoch), upstream, revision


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` sorts before, with or after `b` in Debian's order."""
    ea, ua, ra = _split(a)
    eb, ub, rb = _split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)


def newest(versions) -> str:
    return max(versions, key=cmp_to_key(compare_versions))


# --- Packages indexes


def parse_packages(text: str) -> dict[str, set[str]]:
    """A Packages index: package name -> its versions."""
    versions: dict[str, set[str]] = defaultdict(set)
    name = None
    for line in text.splitlines():
        if line.startswith("Package: "):
            name = line[9:].strip()
        elif line.startswith("Version: ") and name:
            versions[name].add(line[9:].strip())
    return versions


MAX_INDEX_TEXT = 512 << 20  # an archive's Packages index, uncompressed (Ubuntu's universe: tens of MB)


def decompress(data: bytes, url: str) -> str:
    """A Packages index, uncompressed to at most MAX_INDEX_TEXT (a larger one is refused: ValueError)."""
    if url.endswith(".xz"):
        decompressor = lzma.LZMADecompressor()
    else:
        decompressor = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)  # gzip
    try:
        text = decompressor.decompress(data, MAX_INDEX_TEXT + 1)
    except (lzma.LZMAError, zlib.error) as exc:
        raise ValueError(f"{url}: not a compressed index ({exc})") from None
    if len(text) > MAX_INDEX_TEXT:
        raise ValueError(f"{url}: over {MAX_INDEX_TEXT} bytes uncompressed")
    return text.decode("utf-8", "replace")


def index_urls(url: str, suite: str, component: str, arch: str) -> list[str]:
    """Where a suite's Packages index lies, compressed both ways archives use (xz first: a quarter smaller)."""
    base = f"{url.rstrip('/')}/dists/{suite}/{component}/binary-{arch}/Packages"
    return [base + ".xz", base + ".gz"]
