"""A project's files on a package index (PEP 691 JSON), read once per index and project in a run,
each answer shape-checked: the files' names, addresses, hashes, Requires-Python, yanked state and
whether the index serves each wheel's metadata as a file of its own (PEP 658/714 `core-metadata`)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from ngcbuild.core.errors import OperationError, excerpt
from ngcbuild.core.http import HttpFailure
from ngcbuild.core.references import shown_url
from ngcbuild.verify.web import HttpStatus, Web

ACCEPT = "application/vnd.pypi.simple.v1+json"
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


class NotAProjectPage(OperationError):
    """An index answered with something that is not a PEP 691 project page."""


def parse_page(body: bytes, index: str, page_url: str, name: str) -> list[IndexFile]:
    """The files of one PEP 691 project page (the JSON's shape checked, every file a dict with a name
    and an address; a duplicate file name counted once)."""
    where = f"{shown_url(index)}: {name}"
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NotAProjectPage(f"{where}: the answer is not JSON ({excerpt(str(exc), 120)})") from None
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
            metadata_sha256=_hex(served.get("sha256")) if isinstance(served, dict) else None)
    return list(found.values())


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
            return parse_page(self.web.get(url, accept=ACCEPT), index, url, name)
        except HttpStatus as exc:
            if exc.code == 404:
                return []
            return OperationError(f"{shown_url(index)}: {name}: HTTP {exc.code}")
        except HttpFailure as exc:
            return OperationError(f"{shown_url(index)}: {name}: {excerpt(str(exc), 300)}")
        except OperationError as exc:
            return exc
