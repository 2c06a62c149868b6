"""Where the known advisories of a Python distribution come from: PyPI's advisory data, asked two ways.

1. pip-audit's PyPI service (the per-version JSON, https://pypi.org/pypi/NAME/VERSION/json): the
   advisories PyPI knows for exactly that version. On an ordinary machine it answers for every
   version PyPI has; where it answers 404 (a version PyPI does not have, a local build such as
   2.13.0+cpu, or a proxy that hides the per-version API) pip-audit skips the distribution.
2. For a skipped distribution, the project JSON (https://pypi.org/pypi/NAME/json), whose
   `vulnerabilities` are PyPI's advisories for its LATEST version only: used when the pinned version
   (its public part) is that latest version, so PyPI's data is about our version. Otherwise the
   distribution is "not checked", with why: an older version's advisories are not in that answer.

Every request goes through the registry client's retrying session (connect errors, 429 and 5xx retried
with backoff), with a per-request timeout and one deadline for the whole audit. PyPI's answers are
hostile input: each is read to at most MAX_ANSWER bytes, and one that cannot be parsed or has the
wrong shape makes its distribution "not checked" with the reason, never clean.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.core.http import TIMEOUT_S, new_session

PYPI = "https://pypi.org/pypi"
MAX_ANSWER = 32 * 1024 * 1024  # numpy's project JSON is about 4 MB
DEADLINE_S = 600  # the whole audit; a distribution not asked by then is "not checked"
WORKERS = 8
SUMMARY_CHARS = 300
PIP_AUDIT = "pip-audit (PyPI per-version JSON)"
PROJECT_JSON = "PyPI project JSON (latest version)"
CHECKED, NOT_CHECKED = "checked", "not checked"
UNUSED_CACHE = Path("/nonexistent/ngcbuild-audit-cache")


class AnswerTooLarge(Exception):
    pass


@dataclass(frozen=True)
class Advisory:
    id: str
    aliases: tuple[str, ...]
    fixed_in: tuple[str, ...]
    link: str
    summary: str

    def names(self) -> set[str]:
        return {self.id.casefold(), *(a.casefold() for a in self.aliases)}


@dataclass(frozen=True)
class Finding:
    """What is known of one distribution: checked (by `source`, with its advisories) or not checked (why)."""

    name: str
    version: str
    status: str
    source: str | None = None
    advisories: tuple[Advisory, ...] = ()
    reason: str = ""

    def as_json(self) -> dict:
        data = {"name": self.name, "version": self.version, "status": self.status}
        if self.status == CHECKED:
            data["source"] = self.source
            data["advisories"] = [{"id": a.id, "aliases": list(a.aliases), "fixed_in": list(a.fixed_in),
                                   "link": a.link, "summary": a.summary} for a in self.advisories]
        if self.reason:
            data["reason"] = self.reason
        return data


def link_of(advisory_id: str) -> str:
    """Where an advisory is described (OSV's page serves PYSEC, GHSA and CVE ids alike)."""
    # quoted: an id is PyPI's text, and the link goes unescaped into Markdown (the notes)
    return f"https://osv.dev/vulnerability/{quote(advisory_id, safe='-._')}"


def merged(advisories: list[Advisory]) -> tuple[Advisory, ...]:
    """One advisory per vulnerability: PyPI lists the same one under its PYSEC and its GHSA id, each
    naming the other as an alias. The first keeps its id; the aliases and fixed versions add up."""
    kept: list[Advisory] = []
    for advisory in advisories:
        same = next((i for i, k in enumerate(kept) if k.names() & advisory.names()), None)
        if same is None:
            kept.append(advisory)
            continue
        first = kept[same]
        aliases = sorted((first.names() | advisory.names()) - {first.id.casefold()})
        known = {a.casefold(): a for a in (*first.aliases, *advisory.aliases, advisory.id)}
        kept[same] = Advisory(first.id, tuple(known[a] for a in aliases if a in known),
                              tuple(sorted(set(first.fixed_in) | set(advisory.fixed_in), key=_version_key)),
                              first.link, first.summary or advisory.summary)
    return tuple(sorted(kept, key=lambda a: a.id))


def from_pypi_entries(entries) -> tuple[Advisory, ...]:
    """PyPI's `vulnerabilities` list (the project JSON's) as advisories; withdrawn ones left out.
    Raises ValueError when the list does not have PyPI's shape."""
    if not isinstance(entries, list):
        raise ValueError(f"`vulnerabilities` is {type(entries).__name__}, not a list")
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError("an entry of `vulnerabilities` has no id")
        if entry.get("withdrawn"):
            continue
        aliases, fixed = entry.get("aliases") or [], entry.get("fixed_in") or []
        if not (isinstance(aliases, list) and all(isinstance(a, str) for a in aliases)
                and isinstance(fixed, list) and all(isinstance(f, str) for f in fixed)):
            raise ValueError(f"{entry['id'][:60]!r}: aliases and fixed_in must be lists of strings")
        summary = entry.get("summary") or entry.get("details") or ""
        found.append(Advisory(_word(entry["id"]), tuple(_word(a) for a in aliases),
                              tuple(_word(f) for f in fixed), link_of(_word(entry["id"])),
                              _line(summary if isinstance(summary, str) else "")))
    return merged(found)


def from_pip_audit(results) -> tuple[Advisory, ...]:
    """pip-audit's VulnerabilityResults as advisories."""
    return merged([Advisory(_word(r.id), tuple(sorted(_word(a) for a in r.aliases)),
                            tuple(str(v) for v in r.fix_versions), link_of(_word(r.id)), _line(r.description or ""))
                   for r in results])


@dataclass
class PypiAdvisories:
    """Asks PyPI for each distribution, through pip-audit first (see the module's docstring)."""

    base: str = PYPI
    deadline_s: float = DEADLINE_S
    timeout_s: float = TIMEOUT_S
    session: object = None

    def __post_init__(self):
        if self.session is None:
            self.session = bounded_session(MAX_ANSWER)

    def check_all(self, distributions: list[tuple[str, str]]) -> list[Finding]:
        """A Finding for each (name, version), in the order given."""
        ends = time.monotonic() + self.deadline_s
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(lambda d: self.check(d[0], d[1], ends), distributions))

    def check(self, name: str, version: str, ends: float | None = None) -> Finding:
        if ends is not None and time.monotonic() > ends:
            return Finding(name, version, NOT_CHECKED, reason=f"the audit's deadline ({self.deadline_s:.0f} s) "
                                                                "passed before PyPI was asked")
        first = self.per_version(name, version)
        return first if first is not None else self.latest(name, version)

    def per_version(self, name: str, version: str) -> Finding | None:
        """pip-audit's answer; None when it skipped the distribution (PyPI answered 404), or a not-checked
        Finding when PyPI could not be asked or answered something unusable."""
        import requests
        from pip_audit._service import PyPIService, ResolvedDependency, ServiceError

        try:
            parsed = Version(version)
        except InvalidVersion:
            return Finding(name, version, NOT_CHECKED, reason=f"{version[:60]!r} is not a PEP 440 version, "
                                                              "which PyPI's advisory data is keyed by")
        # A cache folder named so that pip-audit neither asks pip for its own nor makes one: its caching
        # session (which would write there) is replaced by ours (retries with backoff, answers bounded).
        service = PyPIService(cache_dir=UNUSED_CACHE, timeout=self.timeout_s)
        service.session = self.session
        try:
            spec, results = service.query(ResolvedDependency(name=name, version=parsed))
        except AnswerTooLarge as exc:
            return Finding(name, version, NOT_CHECKED, reason=f"PyPI's per-version answer {exc}")
        except ServiceError as exc:
            if isinstance(exc.__cause__, requests.HTTPError):  # pip-audit wraps a non-404 error status
                status = getattr(exc.__cause__.response, "status_code", "?")
                return Finding(name, version, NOT_CHECKED, reason=f"PyPI could not be asked (HTTP {status})")
            return Finding(name, version, NOT_CHECKED,
                           reason=f"PyPI's per-version answer could not be read ({_short(exc) or 'ServiceError'})")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            # before RequestException: requests' JSONDecodeError is both
            return Finding(name, version, NOT_CHECKED,
                           reason=f"PyPI's per-version answer could not be read ({_short(exc) or type(exc).__name__})")
        except requests.RequestException as exc:
            return Finding(name, version, NOT_CHECKED, reason=f"PyPI could not be asked ({_short(exc)})")
        if spec.is_skipped():
            return None
        return Finding(name, version, CHECKED, PIP_AUDIT, from_pip_audit(results))

    def latest(self, name: str, version: str) -> Finding:
        """From the project JSON, when `version` is PyPI's latest version of `name`."""
        import requests

        why_first = "PyPI's per-version JSON answered 404 (pip-audit skipped it)"
        url = f"{self.base}/{canonicalize_name(name)}/json"
        try:
            response = self.session.get(url, timeout=self.timeout_s, headers={"Accept": "application/json"})
        except AnswerTooLarge as exc:
            return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON {exc}")
        except requests.RequestException as exc:
            return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON could not be "
                                                              f"fetched ({_short(exc)})")
        if response.status_code == 404:
            return Finding(name, version, NOT_CHECKED, reason="not on PyPI (a distribution of another index "
                                                              "or a local one): no advisory data")
        if response.status_code != 200:
            return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON answered HTTP "
                                                              f"{response.status_code}")
        return from_project_json(name, version, response.content, why_first)


def from_project_json(name: str, version: str, body: bytes, why_first: str) -> Finding:
    """The Finding for `version` from PyPI's project JSON `body` (checked only when it is the latest)."""
    try:
        data = json.loads(body)
        latest = data["info"]["version"]
        if not isinstance(latest, str):
            raise TypeError("info.version is not a string")
        advisories = from_pypi_entries(data.get("vulnerabilities") or [])
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON could not be read "
                                                          f"({_short(exc) or type(exc).__name__})")
    if not same_version(version, latest):
        return Finding(name, version, NOT_CHECKED,
                       reason=f"{why_first}; the project JSON describes only the latest version, "
                              f"{_word(latest)}, not {version}")
    return Finding(name, version, CHECKED, PROJECT_JSON, advisories)


def same_version(pinned: str, latest: str) -> bool:
    """Whether the pinned version is PyPI's latest: equal, or a local build of it (2.13.0+cpu is
    built from 2.13.0's source, so 2.13.0's advisories are its advisories)."""
    try:
        ours, theirs = Version(pinned), Version(latest)
    except InvalidVersion:
        return pinned == latest
    return ours == theirs or (ours.local is not None and Version(ours.public) == theirs)


def bounded_session(limit: int):
    """The registry client's retrying session, whose every answer is read to at most `limit` bytes
    (a response hook runs before requests reads the body): a larger one raises AnswerTooLarge."""
    session = new_session()

    def bound(response, *args, **kwargs):
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise AnswerTooLarge(f"is {declared} bytes, over the {limit} we read")
        body = response.raw.read(limit + 1, decode_content=True)
        if len(body) > limit:
            response.close()
            raise AnswerTooLarge(f"is over the {limit} bytes we read")
        response._content, response._content_consumed = body, True  # requests' own cache of the body
        return response

    session.hooks["response"].append(bound)
    return session


def _word(text: str) -> str:
    """An id, alias or version from PyPI for our report and table: one line, short."""
    return "".join(c for c in str(text) if c.isprintable())[:100]


def _line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 3] + "..."


def _short(exc: BaseException) -> str:
    return _line(str(exc))[:200]


def _version_key(text: str):
    try:
        return (0, Version(text), "")
    except InvalidVersion:
        return (1, Version("0"), text)
