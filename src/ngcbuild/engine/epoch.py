"""SOURCE_DATE_EPOCH: the time a build's image says it was made (its config's `created`).

It comes from the release's manifest (`build.source_date_epoch`), else from the environment's
SOURCE_DATE_EPOCH (reproducible-builds.org's variable, which a CI job or a consumer's rebuild sets),
else from the time of the newest commit that touched the release's inputs (its manifest chain, its
constraints, the templates): a commit that touches nothing the release reads (a README, another release)
leaves it as it was, and the same checkout gives the same epoch on any machine, any day. Outside a git
checkout with neither set it is 0 (1970-01-01), and the build says so. The files the build wrote do not
carry it (image/layer_tar.Times): a new epoch changes the config, never a layer. That holds only while the
epoch is not earlier than the base image's time (a time is clamped to the epoch), so an epoch the build
derived (a commit's, or 0) is raised to the base's time (`not_before`): an image is not older than its base.
One the user gave (the manifest's, the environment's) is honoured as it is: it does not move between commits.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import UserError, excerpt
from ngcbuild.core.project import Project

VARIABLE = "SOURCE_DATE_EPOCH"
LATEST = 2**32 - 1  # a .pyc header holds the time in 32 bits
_SECONDS_RE = re.compile(r"[0-9]{1,10}")


@dataclass(frozen=True)
class Epoch:
    seconds: int
    source: str  # where it came from, in words (the record and the build's line say it)
    given: bool = False  # by the manifest or the environment: kept as it is

    def not_before(self, base_time: int) -> Epoch:
        """This epoch, or the base image's time when it is a derived one earlier than that: then every time the
        build wrote says the base's time whatever the commit (were it clamped to a commit's time, a new commit
        would change every layer the build wrote)."""
        if self.given or self.seconds >= base_time:
            return self
        return Epoch(base_time, f"the base image's time, later than {self.source}")


def parse_epoch(text: str, where: str) -> int:
    """Seconds since 1970 as SOURCE_DATE_EPOCH writes them, or a UserError naming `where`."""
    if not _SECONDS_RE.fullmatch(text) or int(text) > LATEST:
        # a URL with a login may stand here (a variable set by mistake): masked before it is cut
        raise UserError(f"{where}: {excerpt(text, 40, reference=True)}: expected a time as seconds since "
                        f"1970-01-01 UTC (digits, at most {LATEST})")
    return int(text)


def source_date_epoch(project: Project, manifest_value: int | None, environ=os.environ,
                      inputs: Sequence[Path] = ()) -> Epoch:
    """The release's epoch; `inputs`: the files and folders the release reads (none: the whole checkout)."""
    if manifest_value is not None:
        return Epoch(manifest_value, "the manifest's build.source_date_epoch", given=True)
    if environ.get(VARIABLE):
        return Epoch(parse_epoch(environ[VARIABLE], VARIABLE), f"{VARIABLE} in the environment", given=True)
    commit = _commit_time(project, inputs)
    if commit is not None:
        return Epoch(*commit)
    return Epoch(0, "no commit and no SOURCE_DATE_EPOCH: 1970-01-01")


def _commit_time(project: Project, inputs: Sequence[Path]) -> tuple[int, str] | None:
    paths = [str(path.relative_to(project.root)) for path in inputs if path.is_relative_to(project.root)]
    try:
        result = subprocess.run(["git", "-C", str(project.root), "log", "-1", "--format=%ct %H", "--", *paths],
                                capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    fields = result.stdout.split()
    if result.returncode != 0 or len(fields) != 2 or not _SECONDS_RE.fullmatch(fields[0]):
        return None
    whose = "the newest commit to touch the release's inputs" if paths else "the checkout's commit"
    return int(fields[0]), f"the time of commit {fields[1][:12]}, {whose}"
