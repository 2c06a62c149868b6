"""Which releases a change touches, for the release workflow's `invoke changed`.

A release is affected when an input of its stamp changed (stamp.py holds the one definition): its
manifest or any manifest in its `extends` chain, its constraints file, or a shared input, which
affects every release: any image template or any module of ngcbuild's code (the stamp counts the
code as an input of the image). A change to the component catalogue affects the releases that name a
component whose image fields changed; a change to its document fields alone (how the notes list a
component) and a change under templates/docs/ change documents only and build no image. Archived
releases are never built, so they are never selected; each release is loaded once.

A derived release (manifests/derived/R.yaml) is selected when its own inputs change (its requirements,
its lock, its manifest), its base's manifest or constraints (in its stamp's inputs too), or when its
base is selected: a base built again is a new image to build FROM. Its base is then selected with it
(its job makes the record the derived job builds FROM; an unchanged base's image is reused by its
context hash), and it comes after every release of ours. `ci_jobs` turns the selection into the rows
of a GitHub Actions job matrix: one per release and platform, with the runner labels (and a derived
release's base, whose job it follows: release.yml's `derived` job).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ngcbuild.core.errors import NgcbuildError, OperationError, UserError, excerpt, shown_path
from ngcbuild.core.files import read_text
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import LoadedRelease, derived_release_names, load_release, release_names
from ngcbuild.render.stamp import MAX_CATALOG_BYTES, catalog_image_fields, is_shared_input, release_inputs

# Runner labels per platform; declared for actionlint in .github/actionlint.yaml.
RUNNERS = {
    "linux/amd64": ["self-hosted", "linux", "x64", "gpu"],
    "linux/arm64": ["self-hosted", "linux", "arm64", "gpu"],
}


def _git(project: Project, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(project.root), *args], capture_output=True, text=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OperationError(f"cannot run git to find changed files: {exc}") from None


def commit_of(project: Project, ref: str, flag: str = "--since") -> str:
    """The commit `ref` names, verified. A ref is never handed to git where it could be read as an
    option (`--output=FILE`), and only a commit is accepted (not a range, not a tree)."""
    if not isinstance(ref, str) or not ref or ref.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise UserError(f"{flag} {excerpt(ref)}: expected a commit, tag or branch name")
    result = _git(project, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if result.returncode != 0 or not result.stdout.strip():
        raise UserError(f"{flag} {excerpt(ref)}: no such commit, tag or branch in {shown_path(project.root) or '.'}")
    return result.stdout.strip()


def changed_files(project: Project, base: str, head: str = "HEAD") -> list[str]:
    """Paths (relative to the project) changed between the merge base of `base` and `head`."""
    base_commit, head_commit = commit_of(project, base), commit_of(project, head, "head")
    result = _git(project, "diff", "--name-only", "--no-renames", f"{base_commit}...{head_commit}", "--")
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["no message"])[0]
        raise OperationError(f"--since {excerpt(base)}: git diff failed: {excerpt(message, 200)}")
    top = _git(project, "rev-parse", "--show-toplevel").stdout.strip()
    prefix = project.root.resolve().relative_to(Path(top).resolve())
    files = []
    for line in result.stdout.splitlines():
        path = Path(line)
        if prefix == Path(".") or prefix in path.parents:
            files.append(path.relative_to(prefix).as_posix())
    return files


def buildable(project: Project) -> list[LoadedRelease]:
    """Every buildable release, each loaded once (archived releases are never built): ours, then the
    derived ones (each after its base)."""
    loaded = [load_release(project, name) for name in release_names(project)]
    ours = [release for release in loaded if release.release.status == "buildable"]
    return ours + [load_release(project, name) for name in derived_release_names(project)]


def affected_releases(project: Project, files: list[str], releases: list[LoadedRelease],
                      catalog_before: str | None = None) -> list[LoadedRelease]:
    """The releases among `releases` whose stamp inputs (stamp.py) include one of `files`: its own
    (manifest chain, constraints), or a shared one (an image template, ngcbuild's code), which
    selects every release. Where the catalogue is among `files`, `catalog_before` is its text before
    the change (None: it did not exist): a release that names a component whose image fields changed
    is affected."""
    root = project.root.resolve()
    paths = {(root / rel).resolve() for rel in files}
    if any(is_shared_input(project, path) for path in paths):
        return list(releases)
    touched = _catalog_changes(project, catalog_before) if project.catalog.resolve() in paths else set()
    if touched is None:  # a catalogue that cannot be read either way: every release may differ
        return list(releases)
    selected = {loaded.release.release for loaded in releases
                if {path.resolve() for path in release_inputs(project, loaded)} & paths
                or touched & set(loaded.release.components)}
    return with_bases(releases, selected)


def with_bases(releases: list[LoadedRelease], names: set[str]) -> list[LoadedRelease]:
    """The releases named, with every derived release whose base is among them and each derived
    release's base, in the order of `releases` (ours first)."""
    base_of = {loaded.release.release: loaded.derived.base_release for loaded in releases if loaded.derived}
    names = names | {name for name, base in base_of.items() if base in names}
    names = names | {base_of[name] for name in names if base_of.get(name)}
    return [loaded for loaded in releases if loaded.release.release in names]


def _catalog_changes(project: Project, before: str | None) -> set[str] | None:
    """The components whose image fields (stamp.catalog_image_fields) differ between `before` and the
    catalogue now; None when either is no catalogue."""
    try:
        now = read_text(project.catalog, MAX_CATALOG_BYTES, "the component catalog", "", within=project.root)
    except NgcbuildError:
        now = None
    old_fields = catalog_image_fields(before) if before is not None else {}
    new_fields = catalog_image_fields(now) if now is not None else {}
    if old_fields is None or new_fields is None:
        return None
    return {name for name in old_fields.keys() | new_fields.keys() if old_fields.get(name) != new_fields.get(name)}


def catalog_at(project: Project, base: str) -> str | None:
    """The catalogue's text where the changes since `base` start (the merge base with HEAD, as
    changed_files compares), or None where it did not exist then."""
    start = _git(project, "merge-base", commit_of(project, base), commit_of(project, "HEAD", "head"))
    if start.returncode != 0:
        return None
    rel = project.catalog.relative_to(project.root).as_posix()
    prefix = _git(project, "rev-parse", "--show-prefix").stdout.strip()
    name = f"{start.stdout.strip()}:{prefix}{rel}"
    size = _git(project, "cat-file", "-s", name)
    if size.returncode != 0:
        return None
    if not size.stdout.strip().isdigit() or int(size.stdout) > MAX_CATALOG_BYTES:
        raise OperationError(f"{rel} at the merge base with {excerpt(base)} is larger than {MAX_CATALOG_BYTES} "
                             "bytes; expected a component catalogue")
    try:
        shown = subprocess.run(["git", "-C", str(project.root), "cat-file", "blob", name], capture_output=True,
                               timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OperationError(f"cannot run git to read {rel} at the merge base: {exc}") from None
    if shown.returncode != 0:
        raise OperationError(f"cannot read {rel} at the merge base with {excerpt(base)}: "
                             f"{excerpt(shown.stderr.decode(errors='replace').strip(), 200)}")
    return shown.stdout.decode("utf-8", errors="replace")


def ci_jobs(releases: list[LoadedRelease]) -> list[dict]:
    """One job per release and platform: {"release", "platform", "arch", "runner"}, and for a derived
    release "base": the release whose job of that platform it follows."""
    jobs = []
    for loaded in releases:
        release = loaded.release
        base = {"base": loaded.derived.base_release} if loaded.derived is not None else {}
        for platform in release.build.published_platforms:
            jobs.append({"release": release.release, "platform": platform, "arch": platform.split("/")[1],
                         "runner": RUNNERS[platform], **base})
    return jobs


def selection(project: Project, base: str | None) -> dict:
    """What the plan job needs: the releases to build and their jobs. With a `base`, only the releases
    the changes since `base` touch; without one (a manual dispatch), every buildable release."""
    files = changed_files(project, base) if base else None
    releases = buildable(project)
    if files is not None:
        before = catalog_at(project, base) if project.catalog.relative_to(project.root).as_posix() in files else None
        releases = affected_releases(project, files, releases, before)
    jobs = ci_jobs(releases)
    return {"releases": [loaded.release.release for loaded in releases],
            "jobs": [job for job in jobs if "base" not in job],
            "derived_jobs": [job for job in jobs if "base" in job], "changed_files": files}
