"""What making the release image (engine/release_image.py, through layer_tar.py) removes from the layers a build
wrote: files whose content is noise by nature, each with the reason. Data, in this one place: a new
source of noise that a `repro` report names is one more entry here, never an `if` in the rewriter.

A pattern is matched (fnmatch, `*` crosses `/`) against an entry's path in the layer, without a
leading `/`. Removing an entry from a build layer leaves what a lower layer holds at that path
(the base image's own log, say): the base is an input, so that is the same on every build.
"""

from __future__ import annotations

import fnmatch
import re

VOLATILE: tuple[tuple[str, str], ...] = (
    ("var/log/apt/*", "apt's logs: the time and duration of each install"),
    ("var/log/dpkg.log", "dpkg's log: the time of each package state change"),
    ("var/log/alternatives.log", "update-alternatives' log: the time of each change"),
    ("var/log/bootstrap.log", "debootstrap's log: the times of the bootstrap"),
    ("var/cache/ldconfig/aux-cache", "ldconfig's cache of inodes and change times, rebuilt when missing"),
    ("var/cache/apt/*.bin", "apt's package caches, binary dumps of the index as fetched, rebuilt on demand"),
    ("var/cache/apt/archives/*.deb", "downloaded packages, installed already"),
    ("var/cache/debconf/*-old", "debconf's backups of its databases, written at each change"),
    ("var/lib/dpkg/*-old", "dpkg's backups of its status files, written at each change"),
    ("root/.cache/*", "pip's and other tools' caches (HTTP responses with dates, built wheels)"),
    ("tmp/*", "a step's stray temporary files"),
    ("var/tmp/*", "a step's stray temporary files"),
)

_PATTERNS = tuple(re.compile(fnmatch.translate(pattern)) for pattern, _ in VOLATILE)


def why_volatile(path: str) -> str | None:
    """The reason `path` (a layer entry, no leading `/`) is removed, or None when it stays."""
    path = path.lstrip("/").removeprefix("./")
    for (_, reason), pattern in zip(VOLATILE, _PATTERNS, strict=True):
        if pattern.match(path):
            return reason
    return None
