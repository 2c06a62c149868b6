"""Which releases a change touches, for the release workflow's `invoke matrix --json --changed`.

A release is affected when a file it is made from changed: its manifest or any manifest in its
`extends` chain, its constraints file, or any image template (templates/image/ is shared by every
release; a change under templates/docs/ changes documents only and builds no image).
Archived releases are never built, so they are never selected. `ci_jobs` turns the selection into
the rows of a GitHub Actions job matrix: one per release and platform, with the runner labels.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError, excerpt, shown_path
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release

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


def commit_of(project: Project, ref: str, flag: str = "--base") -> str:
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
        raise OperationError(f"--base {excerpt(base)}: git diff failed: {excerpt(message, 200)}")
    top = _git(project, "rev-parse", "--show-toplevel").stdout.strip()
    prefix = project.root.resolve().relative_to(Path(top).resolve())
    files = []
    for line in result.stdout.splitlines():
        path = Path(line)
        if prefix == Path(".") or prefix in path.parents:
            files.append(path.relative_to(prefix).as_posix())
    return files


def inputs_of(project: Project, name: str) -> set[str]:
    """The project-relative files release `name` is made from (templates are matched by prefix)."""
    loaded = load_release(project, name)
    files = {p.resolve().relative_to(project.root.resolve()).as_posix() for p in loaded.chain}
    files.add(f"constraints/{name}.txt")
    return files


def affected_releases(project: Project, files: list[str]) -> list[str]:
    """Buildable releases whose inputs include one of `files`."""
    template_changed = any(f.startswith("templates/image/") for f in files)
    changed = set(files)
    return [name for name in buildable_releases(project) if template_changed or inputs_of(project, name) & changed]


def ci_jobs(project: Project, releases: list[str]) -> list[dict]:
    """One job per release and platform: {"release", "platform", "arch", "runner"}."""
    jobs = []
    for name in releases:
        release = load_release(project, name).release
        for platform in release.build.published_platforms:
            jobs.append({"release": name, "platform": platform, "arch": platform.split("/")[1],
                         "runner": RUNNERS[platform]})
    return jobs


def selection(project: Project, base: str | None) -> dict:
    """What the plan job needs: the releases to build and their jobs. With a `base`, only the releases
    the changes since `base` touch; without one (a manual dispatch), every buildable release."""
    if base:
        files = changed_files(project, base)
        releases = affected_releases(project, files)
    else:
        files, releases = None, buildable_releases(project)
    return {"releases": releases, "jobs": ci_jobs(project, releases), "changed_files": files}
