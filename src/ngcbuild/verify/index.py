"""A project's files on a package index, read once per index and project in a run: PEP 691 JSON where
the index speaks it, else the PEP 503 HTML page (PyTorch's and NVIDIA's indexes), each answer
shape-checked: the files' names, addresses, hashes, Requires-Python, yanked state and whether the index
serves each wheel's metadata as a file of its own (PEP 658/714 `core-metadata`)."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.http import HttpFailure
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.references import shown_url
from ngcbuild.verify.web import PAGE_LIMIT, HttpStatus, Web

ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
JSON = "application/vnd.pypi.simple.v1+json"
MAX_FILES = 200_000  # a project page listing more is no index we can use


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str  # absolute, without its #fragment
    index: str  # the index URL it was listed by
    sha256: str | None
    requires_python: str
    yanked: bool
    # PEP 658: the index serves the wheel's METADATA at url + ".metadata"; its sha256 when the index gives one
    metadata: bool
    metadata_sha256: str | None
    size: int | None = None  # as the index gives it (PEP 700), where it does
    upload_time: str | None = None  # ISO 8601 in UTC, as the index gives it (PEP 700), where it does


class NotAProjectPage(OperationError):
    """An index answered with something that is not a PEP 691 project page."""


def parse_page(body: bytes, index: str, page_url: str, name: str) -> list[IndexFile]:
    """The files of one PEP 691 project page (the JSON's shape checked, every file a dict with a name
    and an address; a duplicate file name counted once)."""
    where = f"{shown_url(index)}: {name}"
    try:
        data = load_json(body, "the page")
    except JsonRefused as exc:
        raise NotAProjectPage(f"{where}: the answer is refused ({excerpt(exc.problem, 120)})") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise NotAProjectPage(f"{where}: the answer is not a PEP 691 project page (no list of files)")
    if len(files) > MAX_FILES:
        raise NotAProjectPage(f"{where}: the page lists {len(files)} files, over {MAX_FILES}")
    found: dict[str, IndexFile] = {}
    for entry in files:
        if not (isinstance(entry, dict) and isinstance(entry.get("filename"), str)
                and isinstance(entry.get("url"), str)):
            raise NotAProjectPage(f"{where}: the answer is not a PEP 691 project page (a file without a name "
                              "or address)")
        if "/" in entry["filename"] or entry["filename"] in found:
            continue
        url = urljoin(page_url, entry["url"]).partition("#")[0]
        if urlsplit(url).scheme not in ("http", "https"):
            continue
        hashes = entry.get("hashes") if isinstance(entry.get("hashes"), dict) else {}
        served = entry.get("core-metadata", entry.get("data-dist-info-metadata", False))
        found[entry["filename"]] = IndexFile(
            filename=entry["filename"], url=url, index=index,
            sha256=_hex(hashes.get("sha256")),
            requires_python=entry["requires-python"] if isinstance(entry.get("requires-python"), str) else "",
            yanked=entry.get("yanked") not in (None, False),
            metadata=served is True or isinstance(served, dict),
            metadata_sha256=_hex(served.get("sha256")) if isinstance(served, dict) else None,
            size=entry["size"] if type(entry.get("size")) is int and entry["size"] >= 0 else None,
            upload_time=_upload_time(entry.get("upload-time")))
    return list(found.values())


def parse_html_page(body: bytes, index: str, page_url: str, name: str) -> list[IndexFile]:
    """The files of one PEP 503 project page: each anchor, its text the file name, its address's
    #sha256= fragment the hash; data-requires-python, data-yanked and data-core-metadata (PEP 714) or
    data-dist-info-metadata (PEP 658) as the JSON form gives them."""
    where = f"{shown_url(index)}: {name}"
    anchors = _Anchors()
    try:
        anchors.feed(body.decode("utf-8"))
        anchors.close()
    except (UnicodeDecodeError, ValueError, AssertionError) as exc:
        raise NotAProjectPage(f"{where}: the answer is not a PEP 503 page ({excerpt(str(exc), 120)})") from None
    if len(anchors.found) > MAX_FILES:
        raise NotAProjectPage(f"{where}: the page lists {len(anchors.found)} files, over {MAX_FILES}")
    entries = []
    for attributes, text in anchors.found:
        href = attributes.get("href") or ""
        fragment = href.partition("#")[2]
        algorithm, _, digest = fragment.partition("=")
        served = attributes.get("data-core-metadata", attributes.get("data-dist-info-metadata"))
        if served is not None:
            kind, _, value = served.partition("=")
            served = {kind: value} if value else served != "false"
        entry = {"filename": text.strip() or href.partition("#")[0].rsplit("/", 1)[-1], "url": href,
                 "hashes": {algorithm: digest} if digest else {},
                 "requires-python": attributes.get("data-requires-python"),
                 "yanked": "data-yanked" in attributes}
        if served is not None:
            entry["core-metadata"] = served
        entries.append(entry)
    return parse_page(json.dumps({"files": entries}).encode(), index, page_url, name)


class _Anchors(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[dict, str]] = []
        self._open: dict | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open, self._text = {k: v or "" for k, v in attrs}, []

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._open is not None:
            if len(self.found) <= MAX_FILES:  # one past the bound is enough to refuse the page
                self.found.append((self._open, "".join(self._text)))
            self._open = None


def _upload_time(value) -> str | None:
    """PEP 700's upload-time (2026-01-01T00:00:00.123456Z), to the second, or None when it is not one."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z",
                                               value):
        return value[:19] + "Z"
    return None


def _hex(value) -> str | None:
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value):
        return value.lower()
    return None


class Pages:
    """Project pages read on demand, once each per run (all platforms share them); safe across threads."""

    def __init__(self, web: Web):
        self.web = web
        self._pages: dict[tuple[str, str], list[IndexFile] | OperationError] = {}
        self._lock = threading.Lock()

    def files(self, index: str, name: str) -> list[IndexFile]:
        """The project's files on `index`, [] when the index does not know the project (404);
        OperationError when it answered otherwise or not at all."""
        key = (index, name)
        with self._lock:
            known = self._pages.get(key)
        if known is None:
            known = self._read(index, name)
            with self._lock:
                self._pages.setdefault(key, known)
        if isinstance(known, OperationError):
            raise known
        return known

    def _read(self, index: str, name: str) -> list[IndexFile] | OperationError:
        url = f"{index.rstrip('/')}/{name}/"
        try:
            answer = self.web.fetch(url, limit=PAGE_LIMIT, headers={"Accept": ACCEPT})
            if answer.status >= 400:
                raise HttpStatus(url, answer.status)
            kind = answer.headers.get("Content-Type", "").split(";")[0].strip().lower()
            parse = parse_page if kind == JSON else parse_html_page
            return parse(answer.body, index, answer.url or url, name)
        except HttpStatus as exc:
            if exc.code == 404:
                return []
            return OperationError(f"{shown_url(index)}: {name}: HTTP {exc.code}")
        except HttpFailure as exc:
            return OperationError(f"{shown_url(index)}: {name}: {excerpt(str(exc), 300)}")
        except OperationError as exc:
            return exc
