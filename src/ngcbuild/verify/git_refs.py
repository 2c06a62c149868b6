"""Each git ref of a release: a full commit, dated before the release where its host answers."""

from __future__ import annotations

import re
from datetime import date, datetime

from ngcbuild.core.http import HttpFailure
from ngcbuild.core.jsonload import load_json
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import HttpStatus, Web

FULL_COMMIT = re.compile(r"[0-9a-f]{40}")


# A commit NVIDIA gives in short (b4e4ee81d3): resolved where GitHub answers, else left "not verified".
SHORT_COMMIT = re.compile(r"[0-9a-f]{7,39}")


def release_cutoff(name: str) -> date | None:
    """The first day after a YY.MM release's month: its git refs must be older. None for named releases."""
    match = re.fullmatch(r"([0-9]{2})\.([0-9]{2})", name)
    if not match:
        return None
    year, month = 2000 + int(match[1]), int(match[2])
    return date(year + month // 12, month % 12 + 1, 1)


def git_rows(release, web: Web) -> list[Row]:
    cutoff = release_cutoff(release.release)
    rows = []
    for name, component in release.components.items():
        if not component.ref or component.install == "none":
            continue
        where = f"components.{name}.ref"
        if SHORT_COMMIT.fullmatch(component.ref):
            rows.append(_short_commit_row(where, component, web))
            continue
        if not FULL_COMMIT.fullmatch(component.ref):
            rows.append(Row("git", where, component.ref, "", FAILED,
                            f"not a full commit: a tag, branch or short hash can move or become ambiguous; give the "
                            f"40-hex commit of {component.repo}"))
            continue
        rows.append(_commit_date_row(where, component, cutoff, web))
    return rows


def resolve_command(repo: str, ref: str) -> str:
    """The one command that gives a short commit's full hash and date on a host that reaches the repository."""
    return (f"git clone --bare --filter=blob:none {repo} /tmp/resolve.git && "
            f"git -C /tmp/resolve.git log -1 --format='%H %cI' {ref}")


def _short_commit_row(where: str, component, web: Web) -> Row:
    """A short hash is never verified: resolved, it fails naming the full commit to write; unresolved (no
    GitHub from here), it is "not verified" with the command that resolves it elsewhere."""
    command = resolve_command(component.repo, component.ref)
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", component.repo or "")
    api = f"https://api.github.com/repos/{match[1]}/{match[2]}/commits/{component.ref}" if match else None
    why = web.unreachable(api) if api else f"{component.repo} is not on GitHub"
    if not why:
        try:
            sha, when = _commit(web.get(api, accept="application/vnd.github+json"))
        except HttpStatus as exc:
            if exc.code in (404, 422):
                return Row("git", where, component.ref, "", FAILED,
                           f"GitHub answered HTTP {exc.code}: no single commit starts with {component.ref}")
            why = f"GitHub answered HTTP {exc.code}"
        except (HttpFailure, ValueError) as exc:
            why = str(exc)
        else:
            return Row("git", where, component.ref, "", FAILED,
                       f"an abbreviated commit: it is {sha}, committed {when}; write the full commit")
    return Row("git", where, component.ref, "", NOT_VERIFIED,
               f"an abbreviated commit ({len(component.ref)} hex digits) not resolved here ({why}); the Dockerfile "
               f"checks that the commit it checks out starts with it. To resolve it on a host with GitHub access: "
               f"{command}")


def _commit_date_row(where: str, component, cutoff: date | None, web: Web) -> Row:
    if cutoff is None:
        return Row("git", where, component.ref, "", VERIFIED, "a full commit (the release has no date to compare)")
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", component.repo or "")
    if not match:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; the date of {component.repo} "
                   "commits is not checked (not on GitHub)")
    api = f"https://api.github.com/repos/{match[1]}/{match[2]}/commits/{component.ref}"
    why = web.unreachable(api)
    if why:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; its date is not checked: {why}")
    try:
        _sha, when = _commit(web.get(api, accept="application/vnd.github+json"))
    except HttpStatus as exc:
        status = FAILED if exc.code in (404, 422) else NOT_VERIFIED
        return Row("git", where, component.ref, "", status, f"GitHub answered HTTP {exc.code} for this commit")
    except (HttpFailure, ValueError) as exc:
        return Row("git", where, component.ref, "", NOT_VERIFIED, f"a full commit; its date is not checked: {exc}")
    if when >= cutoff:
        return Row("git", where, component.ref, "", FAILED, f"committed {when}, after the release (before {cutoff})")
    return Row("git", where, component.ref, "", VERIFIED, f"committed {when}, before {cutoff}")


def _commit(body: bytes) -> tuple[str, date]:
    """GitHub's answer for one commit, shape-checked: (its full hash, its committer's date)."""
    try:
        data = load_json(body, "GitHub's answer")
        sha, stamp = data["sha"], data["commit"]["committer"]["date"]
        if not (isinstance(sha, str) and FULL_COMMIT.fullmatch(sha) and isinstance(stamp, str)):
            raise TypeError
        return sha, datetime.fromisoformat(stamp.replace("Z", "+00:00")).date()
    except (ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise ValueError("GitHub's answer is not a commit (no full sha and committer date)") from None
