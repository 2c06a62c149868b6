"""What one verify run reads about Python distributions, read once and shared by every platform and
check: the release's indexes (which this machine reaches), each project's files on them, and each
chosen file's metadata (a wheel's without downloading it, a source archive's built, never installed).
The indexes are given by the caller: the one list of a release's indexes is core/indexes.py's,
which bump's resolver reads too (resolver/whole_set.py describes what uv chose with this reader)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.core.references import shown_url
from ngcbuild.verify.finder import best_file, is_wheel
from ngcbuild.verify.index import IndexFile, Pages
from ngcbuild.verify.metadata import Metadata, MetadataError, wheel_metadata
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.sdist import SdistReader
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web


@dataclass(frozen=True)
class Listing:
    """A project's files on every reachable index, and what could not be read."""

    files: list[IndexFile]
    failures: list[str]  # "INDEX (why)" for each index that did not answer for this project


class Sources:
    def __init__(self, indexes: list[str], web: Web, work: Work, scratch: Path, index_as_of: str | None = None):
        """`index_as_of` (YYYY-MM-DDTHH:MM:SSZ): the indexes as they were then (a derived release's
        derive.index_as_of, as the resolver reads them): a file uploaded later is not listed."""
        self.web, self.work = web, work
        self.indexes = indexes
        self.index_as_of = index_as_of
        self.unreachable = {index: why for index in indexes if (why := web.unreachable(index))}
        self.reachable = [index for index in indexes if index not in self.unreachable]
        self.pages = Pages(web)
        self.sdists = SdistReader(web, work, scratch, self.reachable) if self.reachable else None
        self._metadata: dict[str, Metadata | MetadataError] = {}
        self._lock = threading.Lock()

    def listing(self, name: str) -> Listing:
        files, failures = [], []
        for index in self.reachable:
            try:
                files += [f for f in self.pages.files(index, name)
                          if not (self.index_as_of and f.upload_time and f.upload_time > self.index_as_of)]
            except OperationError as exc:  # it answered 500 or garbage: said, never taken for "no files"
                failures.append(f"{shown_url(index)} ({exc})")
        return Listing(files, failures)

    def read_listings(self, names: list[str]) -> None:
        """Every project page of `names` on every reachable index, read at once (on worker threads)."""
        self.work.each(self.listing, sorted(set(names)))

    def choose(self, name: str, specifier: str, target: Target) -> IndexFile | None:
        return best_file(self.listing(name).files, name, specifier, target)

    def metadata(self, file: IndexFile) -> Metadata:
        """The file's metadata, read once per run; MetadataError when it cannot be had (or was refused)."""
        with self._lock:
            known = self._metadata.get(file.url)
        if known is None:
            try:
                if is_wheel(file):
                    known = wheel_metadata(file, self.web)
                elif self.sdists is None:
                    known = MetadataError("no index is reachable to build its metadata with")
                else:
                    known = self.sdists.metadata(file)
            except MetadataError as exc:
                known = exc
            except OperationError as exc:  # a build step that timed out
                known = MetadataError(str(exc))
            with self._lock:
                self._metadata.setdefault(file.url, known)
        if isinstance(known, MetadataError):
            raise known
        return known

    def read_metadata(self, files: list[IndexFile]) -> None:
        """The metadata of every file, read at once (on worker threads)."""
        unique = {file.url: file for file in files}

        def read(file: IndexFile) -> None:
            try:
                self.metadata(file)
            except MetadataError:
                pass  # kept, and said by whoever asks for it

        self.work.each(read, list(unique.values()))
