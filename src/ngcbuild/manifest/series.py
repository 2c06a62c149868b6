"""The series of releases: every manifest loaded, in release order.

NVIDIA names releases YY.MM; they sort by date. A release named by a word (`dev`) is not part of
NVIDIA's series and sorts after every dated one, by name. "Up to R" and "the predecessor of R" follow
this order, for every document (notes, matrix, diff, site).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import LoadedRelease, load_release, release_names

_DATED = re.compile(r"([0-9]{2})\.([0-9]{2})")


def order_key(name: str) -> tuple:
    match = _DATED.fullmatch(name)
    if match:
        return (0, int(match[1]), int(match[2]), "")
    return (1, 0, 0, name)


@dataclass(frozen=True)
class Series:
    """Every release of a project, loaded and validated, oldest first."""

    releases: tuple[LoadedRelease, ...]

    @classmethod
    def load(cls, project: Project) -> Series:
        names = sorted(release_names(project), key=order_key)
        return cls(tuple(load_release(project, name) for name in names))

    @property
    def names(self) -> list[str]:
        return [loaded.release.release for loaded in self.releases]

    def get(self, name: str) -> LoadedRelease:
        for loaded in self.releases:
            if loaded.release.release == name:
                return loaded
        raise UserError(f"no release {name!r}; known releases: {', '.join(self.names) or 'none'}")

    def up_to(self, name: str) -> list[LoadedRelease]:
        """`name` and every release before it, oldest first."""
        index = self.names.index(self.get(name).release.release)
        return list(self.releases[: index + 1])

    def predecessor(self, name: str) -> LoadedRelease | None:
        earlier = self.up_to(name)[:-1]
        return earlier[-1] if earlier else None
