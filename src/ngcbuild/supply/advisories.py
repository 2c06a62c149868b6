"""Where the known advisories of a Python distribution come from: PyPI's advisory data, asked of PyPI's
JSON API (or of a mirror of it), and where a distribution PyPI does not know comes from (the release's
own indexes).

For each distribution, in turn, until one answers:
1. The per-version JSON (`BASE/NAME/VERSION/json`): the advisories PyPI knows for exactly that
   version. For a local build (2.13.0+cpu) whose own version PyPI cannot have, the per-version JSON
   of its public version (2.13.0): the build is made from that version's source.
2. Where those answer 404 (a version PyPI does not have, or a proxy that hides the per-version API),
   the project JSON (`BASE/NAME/json`), whose `vulnerabilities` are PyPI's advisories for its LATEST
   version only: used when the pinned version (its public part) is that latest version. Otherwise the
   distribution is "not checked", with why.
3. A distribution the project JSON does not know (404) is looked for in the release's own indexes
   (`pip.extra_index_urls`, PEP 691 JSON), so that "not checked" says where it comes from and that
   the index publishes no advisory data.

BASE is PyPI's (https://pypi.org/pypi), or a mirror's (`--pypi-mirror URL`, NGCBUILD_PYPI_MIRROR, else
the JSON API beside the index setting's index, core/indexes.py: `mirror_setting`),
checked by core/references.parse_index_url: HTTPS, or plain HTTP on the loopback; credentials in it are
sent to that host alone (never across a redirect to another) and never shown.

Every request is one core/http.fetch: an overall deadline and a size cap each, and one deadline for
the whole audit; the workers are daemon threads (core/workers.py) that a Ctrl-C leaves at once. Each
answer is read by one shape-checked reader (`read_answer`, `index_versions`); one that cannot be
read makes its distribution "not checked" with the reason, never clean. Duplicate advisories (PyPI
lists one under its PYSEC and its GHSA id, each the other's alias; or a hostile answer listing one
thousands of times) are merged in time linear in the answer.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from urllib.parse import quote

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ngcbuild.core.http import TIMEOUT_S, AnswerTooLarge, HttpFailure, fetch, new_session
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.references import ReferenceProblem, parse_index_url, shown_url
from ngcbuild.core.text import safe
from ngcbuild.core.workers import Workers

# PyPI's JSON API (advisory data); its simple index, where pins are read, is core/indexes.PYPI_SIMPLE
PYPI_JSON_API = "https://pypi.org/pypi"
MIRROR_ENV = "NGCBUILD_PYPI_MIRROR"
MAX_ANSWER = 32 * 1024 * 1024  # numpy's project JSON is about 4 MB
MAX_INDEX_PAGE = 16 * 1024 * 1024  # a project's file list on an index (torch's: a few MB)
MAX_ADVISORIES = 10_000  # entries of one answer's `vulnerabilities` read
REQUEST_DEADLINE_S = 120  # one answer, retries and backoff included
DEADLINE_S = 600  # the whole audit; a distribution not asked by then is "not checked"
WORKERS = 8
SUMMARY_CHARS = 300
PER_VERSION = "PyPI per-version JSON"
PROJECT_JSON = "PyPI project JSON (latest version)"
CHECKED, NOT_CHECKED = "checked", "not checked"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


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
    naming the other as an alias. The first keeps its id; the aliases and fixed versions add up.
    Advisories sharing a name are joined with a union-find over their positions, so the work is
    linear in the names however the answer repeats or chains them."""
    parent = list(range(len(advisories)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for index, advisory in enumerate(advisories):
        for name in advisory.names():
            if name in first_with:
                a, b = root(first_with[name]), root(index)
                if a != b:
                    parent[max(a, b)] = min(a, b)  # the earliest advisory stays the group's root
            else:
                first_with[name] = index
    groups: dict[int, list[Advisory]] = {}
    for index, advisory in enumerate(advisories):
        groups.setdefault(root(index), []).append(advisory)
    kept = []
    for members in groups.values():
        first = members[0]
        spelled: dict[str, str] = {}
        fixed: set[str] = set()
        for member in members:
            for name in (*member.aliases, member.id):
                spelled.setdefault(name.casefold(), name)
            fixed.update(member.fixed_in)
        aliases = sorted(set(spelled) - {first.id.casefold()})
        summary = next((m.summary for m in members if m.summary), "")
        kept.append(Advisory(first.id, tuple(spelled[a] for a in aliases), tuple(sorted(fixed, key=_version_key)),
                             first.link, summary))
    return tuple(sorted(kept, key=lambda a: a.id))


def from_pypi_entries(entries) -> tuple[Advisory, ...]:
    """PyPI's `vulnerabilities` list (the per-version or project JSON's) as advisories; withdrawn ones
    left out. Raises ValueError when the list does not have PyPI's shape."""
    if not isinstance(entries, list):
        raise ValueError(f"`vulnerabilities` is {type(entries).__name__}, not a list")
    if len(entries) > MAX_ADVISORIES:
        raise ValueError(f"`vulnerabilities` lists {len(entries)} entries, more than the {MAX_ADVISORIES} read")
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError("an entry of `vulnerabilities` has no id")
        if entry.get("withdrawn"):
            continue
        aliases, fixed = entry.get("aliases") or [], entry.get("fixed_in") or []
        if not (isinstance(aliases, list) and all(isinstance(a, str) for a in aliases)
                and isinstance(fixed, list) and all(isinstance(f, str) for f in fixed)):
            raise ValueError(f"{_word(entry['id'])!r}: aliases and fixed_in must be lists of strings")
        summary = entry.get("summary") or entry.get("details") or ""
        found.append(Advisory(_word(entry["id"]), tuple(dict.fromkeys(_word(a) for a in aliases[:100])),
                              tuple(dict.fromkeys(_word(f) for f in fixed[:100])), link_of(_word(entry["id"])),
                              _line(summary if isinstance(summary, str) else "")))
    return merged(found)


@dataclass(frozen=True)
class Answer:
    """An answer of PyPI's JSON API: the version it describes (`info.version`) and its advisories."""

    version: str
    advisories: tuple[Advisory, ...]


def read_answer(body: bytes) -> Answer:
    """The one reader of a per-version or project JSON answer; ValueError saying what is wrong."""
    try:
        data = load_json(body)
    except JsonRefused as exc:
        raise ValueError(exc.problem) from None
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        raise ValueError("no `info` object")
    version = data["info"].get("version")
    if not isinstance(version, str):
        raise ValueError("info.version is not a string")
    return Answer(version, from_pypi_entries(data.get("vulnerabilities") or []))


def from_project_json(name: str, version: str, body: bytes, why_first: str) -> Finding:
    """The Finding for `version` from PyPI's project JSON `body` (checked only when it is the latest)."""
    try:
        answer = read_answer(body)
    except ValueError as exc:
        return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON could not be read "
                                                          f"({_short(exc) or type(exc).__name__})")
    if not same_version(version, answer.version):
        return Finding(name, version, NOT_CHECKED,
                       reason=f"{why_first}; the project JSON describes only the latest version, "
                              f"{_word(answer.version)}, not {version}")
    return Finding(name, version, CHECKED, PROJECT_JSON, answer.advisories)


def same_version(pinned: str, latest: str) -> bool:
    """Whether the pinned version is PyPI's latest: equal, or a local build of it (2.13.0+cpu is
    built from 2.13.0's source, so 2.13.0's advisories are its advisories)."""
    try:
        ours, theirs = Version(pinned), Version(latest)
    except InvalidVersion:
        return pinned == latest
    return ours == theirs or (ours.local is not None and Version(ours.public) == theirs)


def index_versions(body: bytes, name: str) -> set[str]:
    """The versions of `name` a PEP 691 project page lists (from its files' names); ValueError when the
    answer is not one."""
    try:
        data = load_json(body)
    except ValueError:
        raise ValueError("not a PEP 691 project page (JSON)") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise ValueError("not a PEP 691 project page (no list of files)")
    found = set()
    for entry in files:
        filename = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(filename, str):
            continue
        try:
            if filename.endswith(".whl"):
                project, parsed = parse_wheel_filename(filename)[:2]
            else:
                project, parsed = parse_sdist_filename(filename)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if canonicalize_name(project) == canonicalize_name(name):
            found.add(str(parsed))
    return found


def mirror_setting(option: str | None, environ=os.environ, setting=None) -> tuple[str, str | None]:
    """The JSON API the audit asks, and a line saying why when the index setting chose it or could not:
    --pypi-mirror, else NGCBUILD_PYPI_MIRROR, else beside the index setting's index (core/indexes.py)
    where that is a mirror whose URL ends in /simple (PyPI's, Nexus's and devpi's JSON API is its
    sibling /pypi), else PyPI's."""
    from ngcbuild.core.errors import UserError
    from ngcbuild.core.indexes import PYPI_SIMPLE

    for value, where in ((option, "--pypi-mirror"), (environ.get(MIRROR_ENV), MIRROR_ENV)):
        if value is None or (where == MIRROR_ENV and value == ""):
            continue
        try:
            return parse_index_url(value), None
        except ReferenceProblem as exc:
            raise UserError(f"{where}: {exc}") from None
    if setting is None or setting.index_url == PYPI_SIMPLE:
        return PYPI_JSON_API, None
    index = setting.index_url
    if index.endswith("/simple"):
        base = index[: -len("simple")] + "pypi"
        return base, (f"advisories: asked of {shown_url(base)}, the JSON API beside the index "
                      f"{setting.described()}; where it answers nothing a distribution is not checked "
                      "(--pypi-mirror names another)")
    return PYPI_JSON_API, (f"advisories: the index {setting.described()} serves no JSON API known to ngcbuild "
                           f"(its URL does not end in /simple), so they are asked of PyPI ({PYPI_JSON_API}); "
                           "--pypi-mirror or $NGCBUILD_PYPI_MIRROR names the mirror's")


@dataclass
class PypiAdvisories:
    """Asks PyPI's JSON API (or a mirror's) for each distribution (see the module's docstring)."""

    base: str = PYPI_JSON_API
    indexes: tuple[str, ...] = ()  # the release's own indexes (PEP 691), where PyPI does not know one
    deadline_s: float = DEADLINE_S
    request_deadline_s: float = REQUEST_DEADLINE_S
    fetch: object = None  # (method, url, limit, deadline_s, headers) -> core.http.Answer; tests give their own
    asked: list = field(default_factory=list)
    # when the whole audit's deadline falls (check_all): every request is given at most what is left of it, so
    # that a mirror trickling its answers ends the audit there, not a request's 120 s later per worker and index
    ends: float | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.fetch is None:
            session = new_session()
            self.fetch = lambda method, url, limit, deadline_s, headers: fetch(
                session, method, url, limit=limit, deadline_s=deadline_s, headers=headers)

    def check_all(self, distributions: list[tuple[str, str]]) -> list[Finding]:
        """A Finding for each (name, version), in the order given; a Ctrl-C stops the lot at once."""
        ends = self.ends = time.monotonic() + self.deadline_s
        return Workers(distributions, lambda d: self.check(d[0], d[1], ends), WORKERS, "audit").results()

    def check(self, name: str, version: str, ends: float | None = None) -> Finding:
        try:
            parsed = Version(version)
        except InvalidVersion:
            return Finding(name, version, NOT_CHECKED, reason=f"{safe(version, 60)!r} is not a PEP 440 version, "
                                                              "which PyPI's advisory data is keyed by")
        versions = [version] + ([parsed.public] if parsed.local is not None else [])
        for asked in versions:
            if self._late(ends):
                return self._too_late(name, version)
            status, body, why = self._get(f"{self.base}/{canonicalize_name(name)}/{asked}/json", MAX_ANSWER)
            if status == 404:
                continue
            if why or status != 200:
                return Finding(name, version, NOT_CHECKED,
                               reason=f"the per-version JSON could not be asked ({why or f'HTTP {status}'})")
            try:
                answer = read_answer(body)
            except ValueError as exc:
                return Finding(name, version, NOT_CHECKED,
                               reason=f"the per-version JSON could not be read ({_short(exc)})")
            source = PER_VERSION if asked == version else f"{PER_VERSION} (public version {asked} of a local build)"
            return Finding(name, version, CHECKED, source, answer.advisories)
        if self._late(ends):
            return self._too_late(name, version)
        return self.latest(name, version)

    def latest(self, name: str, version: str) -> Finding:
        """From the project JSON, when `version` is the latest version of `name`."""
        why_first = "the per-version JSON answered 404"
        status, body, why = self._get(f"{self.base}/{canonicalize_name(name)}/json", MAX_ANSWER)
        if why:
            return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON could not be "
                                                              f"fetched ({why})")
        if status == 404:
            return self.not_on_pypi(name, version)
        if status != 200:
            return Finding(name, version, NOT_CHECKED, reason=f"{why_first}; the project JSON answered HTTP "
                                                              f"{status}")
        return from_project_json(name, version, body, why_first)

    def not_on_pypi(self, name: str, version: str) -> Finding:
        """A distribution PyPI does not know: which of the release's indexes serves it, if any."""
        where = "PyPI's mirror" if self.base != PYPI_JSON_API else "PyPI"
        serving, unread = [], []
        for index in self.indexes:
            status, body, why = self._get(f"{index.rstrip('/')}/{canonicalize_name(name)}/", MAX_INDEX_PAGE,
                                          accept=SIMPLE_JSON)
            if why or status not in (200, 404):
                unread.append(f"{shown_url(index)} ({why or f'HTTP {status}'})")
                continue
            try:
                versions = index_versions(body, name) if status == 200 else set()
            except ValueError as exc:
                unread.append(f"{shown_url(index)} ({_short(exc)})")
                continue
            if version in versions or any(same_version(version, v) for v in versions):
                serving.append(shown_url(index))
        if serving:
            reason = (f"not on {where}; served by the release's index {', '.join(serving)} "
                      "(pip.extra_index_urls), which publishes no advisory data")
        else:
            reason = f"not on {where} (a distribution of another index or a local one): no advisory data"
            if unread:
                reason += f"; the release's indexes could not be read: {'; '.join(unread)}"
        return Finding(name, version, NOT_CHECKED, reason=reason)

    def _get(self, url: str, limit: int, accept: str = "application/json") -> tuple[int, bytes, str]:
        """(status, body, why it could not be asked: '' when it was)."""
        seconds = self.request_deadline_s
        if self.ends is not None:
            seconds = min(seconds, self.ends - time.monotonic())
            if seconds <= 0:
                return 0, b"", f"the audit's deadline ({self.deadline_s:.0f} s) passed before it was asked"
        self.asked.append(url)
        try:
            answer = self.fetch("GET", url, limit, seconds, {"Accept": accept})
        except AnswerTooLarge:
            return 0, b"", f"the answer is over the {limit} bytes read"
        except HttpFailure as exc:
            return 0, b"", _short(_after_url(str(exc)))
        return answer.status, answer.body, ""

    def _late(self, ends: float | None) -> bool:
        return ends is not None and time.monotonic() > ends

    def _too_late(self, name: str, version: str) -> Finding:
        return Finding(name, version, NOT_CHECKED, reason=f"the audit's deadline ({self.deadline_s:.0f} s) "
                                                          "passed before PyPI was asked")


def _after_url(message: str) -> str:
    """core/http's message without the URL it starts with (the reason names the answer's kind)."""
    _, sep, rest = message.partition(": ")
    return rest if sep else message


def _word(text) -> str:
    """An id, alias or version from PyPI for our report and table: one line, short, escaped."""
    return safe(str(text), 100)


def _line(text: str) -> str:
    text = safe(" ".join(str(text).split()), SUMMARY_CHARS * 2)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 3] + "..."


def _short(exc) -> str:
    return _line(str(exc))[:200]


def _version_key(text: str):
    try:
        return (0, Version(text), "")
    except InvalidVersion:
        return (1, Version("0"), text)


__all__ = ["PYPI_JSON_API", "PER_VERSION", "PROJECT_JSON", "CHECKED", "NOT_CHECKED", "Advisory", "Finding",
           "PypiAdvisories", "TIMEOUT_S"]
