"""Whether the index a resolve reads "as of a day" can be read so: uv's --exclude-newer keeps a file only
when the index says when it was uploaded (PEP 700), and some mirrors say it of none (devpi's mirror of
PyPI, a plain folder of wheels behind a web server). Read as of any day, such an index offers nothing,
and the resolver reports every requirement as "no version of ...": a conflict that is not one. So
before a resolve that names a day, the first index (the one that stands for PyPI, where most files
come from) is asked for a project page of the team's first requirements, and one that lists files
without a single upload time is refused in one line (exit 1) that says what to do instead.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ngcbuild.core.errors import OperationError
from ngcbuild.core.references import shown_url
from ngcbuild.resolver.resolution import Problem
from ngcbuild.verify.index import Pages
from ngcbuild.verify.web import Web

PROBES = 3  # project pages asked at most: the first the index knows decides


class NoUploadTimes(OperationError):
    pass


def check_dates_served(problem: Problem, setting_name: str, web: Web | None = None) -> None:
    """NoUploadTimes when `problem` reads its first index as of a day and that index gives no upload time
    for the files of the first of the team's projects it lists. `setting_name` is what set the day
    (the manifest's derive.index_as_of, fit's --index-as-of), for the message."""
    if not problem.index_as_of or not problem.indexes:
        return
    index = problem.indexes[0]
    pages = Pages(web or Web())
    for name in _names(problem.requirements)[:PROBES]:
        try:
            files = pages.files(index, name)
        except OperationError:
            return  # the resolve asks the index again and says what it answered
        if not files:
            continue
        if any(f.upload_time for f in files):
            return
        raise NoUploadTimes(
            f"{setting_name} reads the index as it was on a day, but {shown_url(index)} gives no upload time for "
            f"any of {name}'s {len(files)} files (PEP 700; devpi's mirror of PyPI gives none): as of that day it "
            f"would offer nothing. Resolve against an index that gives upload times (PyPI does), or without "
            f"{setting_name}")


def _names(requirements: tuple[str, ...]) -> list[str]:
    names = []
    for text in requirements:
        try:
            name = canonicalize_name(Requirement(text).name)
        except InvalidRequirement:
            continue
        if name not in names:
            names.append(name)
    return names
