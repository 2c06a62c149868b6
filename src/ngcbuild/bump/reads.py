"""What one bump reads, and within what: the release's indexes with the user's setting (one list,
core/indexes.py), those this machine reaches (the others said, with why), one deadline for the
whole run (resolver/deadline.py) shared by uv and every read of verify's Web, and the resolver's whole
set over them (resolver/whole_set.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ngcbuild.bump.propose import reachable_indexes
from ngcbuild.core.indexes import IndexSetting, release_indexes
from ngcbuild.resolver.deadline import run_deadline
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.whole_set import WholeSet


class IndexReads:
    """A context manager: `web`, `indexes` (reachable), `unreachable`, `whole`."""

    def __init__(self, release, setting: IndexSetting, stand_ins: tuple[StandIn, ...] = (),
                 index_as_of: str | None = None):
        from ngcbuild.verify.web import Web

        self.deadline = run_deadline()
        self.web = Web(run_deadline=self.deadline)
        self.all_indexes = release_indexes(release, setting)
        self.indexes, self.unreachable = reachable_indexes(release, self.all_indexes, self.web)
        self._scratch = tempfile.TemporaryDirectory(prefix="ngcbuild-bump-")
        bundle = Path(self.web.bundle) if self.web.bundle else None
        self.whole = WholeSet(self.indexes, self.web, Path(self._scratch.name), stand_ins=stand_ins,
                              ca_bundle=bundle, index_as_of=index_as_of, deadline=self.deadline)

    def __enter__(self) -> IndexReads:
        self.whole.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.whole.__exit__(*exc)
        finally:
            self._scratch.cleanup()
