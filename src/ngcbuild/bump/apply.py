"""`ngcbuild bump`: propose, prove, then write both files or neither.

Before anything is resolved, the names are checked: --as is a release name that is not R itself, and
manifests/NAME.yaml and constraints/NAME.txt are either absent or files bump proposed from R before
(a link, a FIFO, a folder, another release's file: refused, exit 2, nothing read from the indexes).
The proposal is then loaded, rendered in memory and verified in a scratch copy of the project's
manifests, constraints and templates (under /tmp): a proposal that does not validate or does not
resolve leaves nothing behind in manifests/ or constraints/. Only then are the two files written,
constraints first (a manifest never names constraints that are not there; if the manifest cannot be
written, the constraints file is put back as it was), and build/NAME/bump.md after them.

Written the same day from the same indexes, a proposal is the same bytes; against files bump wrote on
an earlier day, the proposal is compared under that day, so an unchanged proposal rewrites nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from ngcbuild.bump.components import component_changes
from ngcbuild.bump.proposal_files import CouldNotCheck, NewerAvailable, existing_proposal, scratch_project, write_both
from ngcbuild.bump.propose import Proposal, propose
from ngcbuild.bump.reads import IndexReads
from ngcbuild.bump.report import bump_markdown
from ngcbuild.bump.texts import constraints_text, manifest_text
from ngcbuild.core.errors import ManifestError, OperationError, UserError, excerpt, shown_path
from ngcbuild.core.indexes import IndexSetting, release_indexes
from ngcbuild.core.names import RELEASE_NAME_RE
from ngcbuild.core.outputs import printer, write_file
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import LoadedRelease, load_release
from ngcbuild.workspace.release_dir import BUMP, ReleaseDir


class VerifyFailedProposal(OperationError):
    pass


def check_as(name) -> str:
    if not isinstance(name, str) or not RELEASE_NAME_RE.fullmatch(name):
        raise UserError(f"--as {excerpt(name)}: expected a release name for the proposal (a lower-case word such as "
                        "cuda-dev-2612, or YY.MM such as 26.01): it becomes manifests/NAME.yaml and build/NAME/")
    return name


def _not_a_derived_release(project: Project, name: str) -> None:
    """A proposal is manifests/NAME.yaml: beside manifests/derived/NAME.yaml it would make two manifests of
    one release (refused by the loader ever after), so the name is refused before anything is read."""
    from ngcbuild.core.errors import shown_path
    from ngcbuild.manifest.derived import derived_manifest

    path = derived_manifest(project.manifests, name)
    if os.path.lexists(path):  # a link or anything else there too: the name is taken
        raise UserError(f"--as {name}: {shown_path(path)} is a derived release of that name; name the proposal "
                        "otherwise (a release has one manifest)")


def bump_release(project: Project, release: str, as_name: str | None, setting: IndexSetting, check: bool = False,
                 base_release: str | None = None, out=sys.stdout):
    """`bump --check`: exit 0 current, 1 a newer set (NewerAvailable), 3 could not check (CouldNotCheck)."""
    from ngcbuild.core.names import check_release_name

    say = printer(out)
    check_release_name(release)
    if check and as_name is not None:
        raise UserError("--check compares --release with its indexes and writes nothing: leave out --as")
    parent = load_release(project, release)
    if parent.derived is not None:
        from ngcbuild.bump.team import bump_team

        if as_name is not None:
            raise UserError(f"--as: {release} is a derived release; bump says what its lock would become on its "
                            f"base's newest pins and writes nothing (`ngcbuild resolve --release {release}` writes "
                            "the lock)")
        return _checked(lambda: bump_team(project, parent, setting, base_release, check=check, out=out), check)
    if base_release is not None:
        raise UserError(f"--base-release belongs to a derived release (manifests/derived/R.yaml); {release} is one "
                        "of ours, bumped from its own indexes")
    if not check:
        if as_name is None:
            raise UserError("bump: missing --as (the name of the proposed release, e.g. --as cuda-dev-2612)")
        check_as(as_name)
        if as_name == release:
            raise UserError(f"--as {as_name}: that is the release being bumped; name the proposal (e.g. "
                            f"{release}-next): {release} stays as it is")
        _not_a_derived_release(project, as_name)
    if parent.release.status != "buildable":
        raise UserError(f"{release} is archived (documentation only): nothing of it is built, so nothing to bump")
    if parent.release.origin == "nvidia":
        from ngcbuild.bump.nvidia import draft_nvidia

        return _checked(lambda: draft_nvidia(project, parent, as_name, setting, check=check, out=out), check)
    if parent.release.bump is None:
        raise ManifestError(parent.path, "bump", "no policy for ngcbuild bump; expected e.g. bump: {leader: torch, "
                                                 "cuda: {major: '13', carried_by: cuda-toolkit}} (see "
                                                 "manifest/bump_policy.py)")
    existing = None if check else existing_proposal(project, release, as_name)

    def run() -> dict:
        with IndexReads(parent.release, setting) as reads:
            day = time.strftime("%Y-%m-%d", time.gmtime())
            proposal = propose(parent, as_name or f"{release}-next", reads.whole, reads.unreachable, day, say)
            if check:
                return _check(proposal, say)
            return _write_proposal(project, proposal, existing, as_name, reads.web, setting, say)
    return _checked(run, check)


def _write_proposal(project: Project, proposal: Proposal, existing, as_name: str, web, setting: IndexSetting,
                    say) -> dict:
    release = proposal.release.release
    if not proposal.changed:
        say(f"bump: {release} is current: {proposal.leader.name} {proposal.leader.version} and every pin are the "
            "newest its policy and the whole set admit; nothing written")
        return {"changed": False}
    changes = component_changes(proposal, web)
    texts = {"manifest": manifest_text(proposal, changes), "constraints": constraints_text(proposal)}
    if existing is not None:  # the files bump wrote before, compared under their own day
        day_before = existing["day"]
        again = {"manifest": manifest_text(proposal, changes, day_before),
                 "constraints": constraints_text(proposal, day_before)}
        if again == existing["texts"]:
            texts = again
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bump-") as scratch:
        shadow = scratch_project(project, Path(scratch))
        write_file(shadow.constraints / f"{as_name}.txt", texts["constraints"], within=shadow.root)
        write_file(shadow.manifests / f"{as_name}.yaml", texts["manifest"], within=shadow.root)
        new = _load_proposal(shadow, as_name)
        say(f"bump: verifying {as_name} ({len(proposal.pins)} pins) with its closure")
        from ngcbuild.verify.run import verify_release

        rows = verify_release(new, web, release_indexes(new.release, setting))
        report = bump_markdown(shadow, proposal, changes, new, rows)
    unchanged = existing is not None and texts == existing["texts"]
    if unchanged:
        say(f"bump: manifests/{as_name}.yaml and constraints/{as_name}.txt already hold this proposal (read "
            f"{existing['day']}); nothing rewritten")
    else:
        write_both(project, as_name, texts)
    path = ReleaseDir.at(project.root, as_name).write(BUMP, report)
    failed = sum(r.status == "failed" for r in rows)
    say(f"bump: {release} -> {as_name}: {proposal.leader.name} {proposal.old_pins().get(proposal.leader.key, 'none')} "
        f"-> {proposal.leader.version}; {_counts(proposal)}; wrote {shown_path(path)}")
    if failed:
        raise VerifyFailedProposal(f"bump: verify found {failed} failure(s) in {as_name}; see {shown_path(path)}")
    return {"changed": True, "unchanged_files": unchanged, "report": str(path)}


def _counts(proposal: Proposal) -> str:
    old, new = proposal.old_pins(), proposal.new_pins()
    changed = sum(1 for k in old if k in new and old[k] != new[k])
    return f"{changed} pins changed, {len(set(new) - set(old))} added, {len(set(old) - set(new))} removed"


def _check(proposal: Proposal, say) -> dict:
    release = proposal.release.release
    if proposal.changed:
        raise NewerAvailable(f"{release}: a newer set its policy admits exists: {proposal.leader.name} "
                             f"{proposal.old_pins().get(proposal.leader.key, 'none')} -> {proposal.leader.version}; "
                             f"{_counts(proposal)} (ngcbuild bump --release {release} --as NAME writes it)")
    say(f"bump: {release} is current: {proposal.leader.name} {proposal.leader.version} and every pin are the newest "
        "its policy and the whole set admit")
    return {"changed": False}


def _load_proposal(shadow: Project, name: str) -> LoadedRelease:
    from ngcbuild.render.plan import plan_image

    try:
        loaded = load_release(shadow, name)
        plan_image(loaded, loaded.catalog)  # renders in memory: pip.layers, pins and components agree
    except ManifestError as exc:
        raise OperationError(f"the proposal for {name} does not validate (nothing was written): {exc}") from None
    return loaded


def _checked(step, check: bool):
    """`step()`; with --check, a failure to read or resolve is "could not check" (exit 3), never
    taken for "a newer set" (exit 1) or "current" (exit 0)."""
    try:
        return step()
    except (NewerAvailable, UserError):
        raise
    except OperationError as exc:
        if not check:
            raise
        raise CouldNotCheck(f"bump --check could not check: {exc}") from None
