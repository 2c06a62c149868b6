"""build/R/audit.json, read: the one typed reader of the vulnerability report supply/audit.py writes, for
every step that reads it (the notes' "Known Vulnerabilities" section, attest).

The report is our own output, but a file on disk all the same, maybe another job's artifact: read
through core/files (size bounded, no FIFO, no link out of the project), and every value checked for
its type here (a link must be an advisory's page: the notes put it into Markdown as it stands); a report
that is not what `invoke audit` writes is "damaged" (exit 1), never half shown. With the record, the
report must be the one the record names for its SBOM, or it is refused (exit 2).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import ManifestError, OutputDamaged, UserError, excerpt
from ngcbuild.core.files import exists, nesting, parse_json, read_text
from ngcbuild.workspace.record import Record
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
class AuditReport:
    data: bytes
    audited_at: str
    verdict: str
    python_distributions: int
    checked: int
    checked_by: tuple[tuple[str, int], ...]
    advisories: tuple[Advisory, ...]
    not_checked: tuple[tuple[str, str], ...]  # (name version, why)
    other_not_checked: tuple[tuple[str, int], ...]  # (kind, how many)


def read_audit(directory: Path, within: Path, record: Record | None = None) -> AuditReport | None:
    """The audit of build/R/; None when there is none. With `record`: refused unless it is the report
    the record names, of the SBOM the record names."""
    path = directory / AUDIT
    if not exists(path):
        return None
    hint = f"run `invoke audit --release {directory.name}` to rewrite it"
    try:
        text = read_text(path, MAX_BYTES, "a vulnerability report (JSON)", "no report", within=within)
    except ManifestError as exc:
        raise OutputDamaged(path, "", f"{exc.expected}; {hint}") from None
    if record is not None:
        audit, sbom_sha256 = record.audit, record.sbom.sha256 if record.sbom is not None else None
        if audit is None or audit.sha256 != hashlib.sha256(text.encode("utf-8")).hexdigest() \
                or audit.sbom_sha256 != sbom_sha256:
            raise UserError(f"{path}: not the audit report `invoke audit` recorded in record.json for its image's "
                            f"SBOM; run `invoke audit --release {directory.name}` again")
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
    return AuditReport(
        data=text.encode("utf-8"),
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
