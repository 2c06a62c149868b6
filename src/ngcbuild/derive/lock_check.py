"""The one check of a derived release's lock before anything renders or builds it: present, readable,
fresh (its header binds the digest of the resolve's inputs). Render and build call `check_lock` and
nothing else; what the lock's body must satisfy is decided here."""

from __future__ import annotations

from ngcbuild.core.errors import UserError, shown_path
from ngcbuild.core.project import Project
from ngcbuild.manifest.derived import RESOLVE_HINT
from ngcbuild.manifest.loader import LoadedRelease


def check_lock(project: Project, loaded: LoadedRelease) -> None:
    """Refuse (UserError, one line naming `ngcbuild resolve`) a lock that is missing, damaged or stale."""
    derived = loaded.derived
    command = RESOLVE_HINT.format(name=loaded.release.release)
    state = derived.lock_state
    if state == "missing":
        raise UserError(f"{shown_path(derived.lock_path)}: no lock for derived release {loaded.release.release}; "
                        f"run `{command}` first (it resolves the requirements against {derived.base})")
    if state == "damaged":
        raise UserError(f"{derived.lock_problem}; run `{command}`")
    if state == "stale":
        raise UserError(f"{shown_path(derived.lock_path)} is stale: the manifest, the requirements or {derived.base}'s "
                        f"pins changed since it was resolved; run `{command}` and review the lock's diff")
