"""The "Known Vulnerabilities" section of the release notes, from build/R/audit.json (`invoke audit`).

The report is our own output, but a file on disk all the same: read through the one reader (size
bounded, no FIFO, no link out of the project), and every value the notes show is checked for its
type here; a report that is not what `invoke audit` writes is "damaged" (exit 1), never half shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import ManifestError, OutputDamaged, excerpt
from ngcbuild.core.files import exists, nesting, parse_json, read_text
from ngcbuild.workspace.release_dir import AUDIT

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 16
VERDICTS = ("passed", "failed", "not checked")
# what `invoke audit` writes (supply/advisories.link_of): the notes put it into Markdown unescaped
LINK = re.compile(r"https://osv\.dev/vulnerability/[A-Za-z0-9%._-]{1,300}")


@dataclass(frozen=True)
class Advisory:
    distribution: str
    id: str
    aliases: tuple[str, ...]
    fixed_in: tuple[str, ...]
    link: str
    policy: str


@dataclass(frozen=True)
class Vulnerabilities:
    audited_at: str
    verdict: str
    python_distributions: int
    checked: int
    checked_by: tuple[tuple[str, int], ...]
    advisories: tuple[Advisory, ...]
    not_checked: tuple[tuple[str, str], ...]  # (name version, why)
    other_not_checked: tuple[tuple[str, int], ...]  # (kind, how many)


def read_report(directory: Path, within: Path) -> Vulnerabilities | None:
    """The audit of build/R/ for the notes; None when there is none."""
    path = directory / AUDIT
    if not exists(path):
        return None
    hint = f"run `invoke audit --release {directory.name}` to rewrite it"
    try:
        text = read_text(path, MAX_BYTES, "a vulnerability report (JSON)", "no report", within=within)
    except ManifestError as exc:
        raise OutputDamaged(path, "", f"{exc.expected}; {hint}") from None
    data = parse_json(path, text, OutputDamaged, hint)
    if not isinstance(data, dict) or nesting(data, MAX_DEPTH) > MAX_DEPTH:
        raise OutputDamaged(path, "", f"expected the JSON object `invoke audit` writes; {hint}")

    def need(value, kind, key: str, what: str):
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise OutputDamaged(path, key, f"expected {what}, got {excerpt(value)}; {hint}")
        return value

    counts = need(data.get("counts"), dict, "counts", "an object")
    verdict = need(data.get("verdict"), str, "verdict", "passed, failed or not checked")
    if verdict not in VERDICTS:
        raise OutputDamaged(path, "verdict", f"expected passed, failed or not checked, got {excerpt(verdict)}; {hint}")
    checked_by = need(counts.get("checked_by"), dict, "counts.checked_by", "an object")
    others = need(counts.get("other_components_not_checked", {}), dict, "counts.other_components_not_checked",
                  "an object")
    advisories, not_checked = [], []
    for i, d in enumerate(need(data.get("distributions"), list, "distributions", "a list")):
        key = f"distributions.{i}"
        need(d, dict, key, "an object")
        name = " ".join((need(d.get("name"), str, key + ".name", "a name"),
                         need(d.get("version"), str, key + ".version", "a version")))
        if need(d.get("status"), str, key + ".status", "checked or not checked") != "checked":
            not_checked.append((name, need(d.get("reason", ""), str, key + ".reason", "a sentence")))
            continue
        for j, a in enumerate(need(d.get("advisories"), list, key + ".advisories", "a list")):
            where = f"{key}.advisories.{j}"
            need(a, dict, where, "an object")
            aliases = need(a.get("aliases"), list, where + ".aliases", "a list")
            fixed = need(a.get("fixed_in"), list, where + ".fixed_in", "a list")
            advisories.append(Advisory(name, need(a.get("id"), str, where + ".id", "an advisory id"),
                                       tuple(need(x, str, where + ".aliases", "strings") for x in aliases),
                                       tuple(need(x, str, where + ".fixed_in", "strings") for x in fixed),
                                       _link(need(a.get("link"), str, where + ".link", "a URL"), path,
                                             where + ".link", hint),
                                       need(a.get("policy"), str, where + ".policy", "the policy's word")))
    return Vulnerabilities(
        audited_at=need(data.get("audited_at"), str, "audited_at", "a timestamp"),
        verdict=verdict,
        python_distributions=need(counts.get("python_distributions"), int, "counts.python_distributions", "a count"),
        checked=need(counts.get("checked"), int, "counts.checked", "a count"),
        checked_by=tuple((str(k), need(v, int, "counts.checked_by", "counts")) for k, v in checked_by.items()),
        advisories=tuple(advisories),
        not_checked=tuple(not_checked),
        other_not_checked=tuple((str(k), need(v, int, "counts.other_components_not_checked", "counts"))
                                for k, v in others.items()),
    )


def _link(value: str, path: Path, key: str, hint: str) -> str:
    if not LINK.fullmatch(value):
        raise OutputDamaged(path, key, f"expected an advisory's page (https://osv.dev/vulnerability/ID), got "
                                       f"{excerpt(value)}; {hint}")
    return value
