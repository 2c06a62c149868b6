"""A team's requirements file (derive.requirements): requirements-file syntax, read like every user
file (core/files.read_text: inside the project, bounded, never a FIFO or device, UTF-8).

What pip would take and a derived release must not: options (`-r`, `-c`, `-e`, `--index-url`...: the
indexes are the base release's, the file is the whole set), local paths, a URL without a pinned hash,
a VCS reference that is not a full commit, credentials in a URL and `${NAME}`, which the resolver would
expand from its environment (each refused, never shown). Each refusal names the file, the line and
what was expected (exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ngcbuild.core.errors import ManifestError, excerpt
from ngcbuild.core.files import read_text

MAX_BYTES = 100_000
MAX_REQUIREMENTS = 300
MAX_LINE = 2000
_FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
_HASH_FRAGMENT = re.compile(r"(?:^|&)sha256=[0-9a-f]{64}(?:&|$)")
_VCS = ("git+https://", "git+http://", "hg+https://", "svn+https://", "bzr+https://")
# What pip's options do, for the message that refuses each.
_OPTIONS = {
    ("-r", "--requirement"): "includes another requirements file; list every requirement in this one",
    ("-c", "--constraint"): "adds constraints; the base release's pins are the constraints",
    ("-e", "--editable"): "installs from a folder or checkout; an image installs released distributions",
    ("-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--trusted-host"):
        "names an index; the indexes are the base release's (its pip.extra_index_urls)",
}


@dataclass(frozen=True)
class TeamRequirement:
    text: str  # as packaging writes it back (normalised)
    name: str  # canonical
    line: int
    url: str | None = None

    @property
    def requirement(self) -> Requirement:
        return Requirement(self.text)


def load_requirements(path: Path, *, within: Path | None, named_by: str) -> tuple[TeamRequirement, ...]:
    """`named_by` says who named the file, for the message when it is missing; `within`: the folder it must
    lie in (a derived release's file: the project), None for a file named on the command line."""
    text = read_text(path, MAX_BYTES, "a requirements file",
                     f"requirements file not found (named by {named_by}); expected lines such as einops==0.8.1",
                     within=within)
    return parse_requirements(path, text)


def parse_requirements(path: Path, text: str) -> tuple[TeamRequirement, ...]:
    found: dict[str, TeamRequirement] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        body = _without_comment(raw).strip()
        if not body:
            continue
        where = f"line {number}"
        if len(body) > MAX_LINE:
            raise ManifestError(path, where, f"is {len(body)} characters long; expected one requirement "
                                             f"(at most {MAX_LINE} characters)")
        if body.endswith("\\"):
            raise ManifestError(path, where, "continues on the next line; expected one requirement per line")
        if "${" in body:  # the resolver would expand it from its environment: a secret could reach a URL
            raise ManifestError(path, where, "holds ${...}, which the resolver would expand from its environment; "
                                             "expected the requirement itself (the line is not shown)")
        if body.startswith("-"):
            raise ManifestError(path, where, _option_problem(body))
        if body.startswith((".", "/", "~")) or body.endswith((".whl", ".tar.gz", ".zip")) and "@" not in body:
            raise ManifestError(path, where, f"{excerpt(body)} is a local file or folder; expected a requirement "
                                             "of a distribution on the base release's indexes (e.g. einops==0.8.1)")
        requirement = _parsed(path, where, body)
        url = _checked_url(path, where, requirement)
        name = canonicalize_name(requirement.name)
        if name in found:
            raise ManifestError(path, where, f"{name} is required again (line {found[name].line}); expected each "
                                             "distribution once (join the specifiers: name>=1,<2)")
        found[name] = TeamRequirement(str(requirement), name, number, url)
        if len(found) > MAX_REQUIREMENTS:
            raise ManifestError(path, where, f"more than {MAX_REQUIREMENTS} requirements; a team's set is "
                                             "expected to be smaller")
    if not found:
        raise ManifestError(path, "", "no requirements; expected lines such as einops==0.8.1")
    return tuple(found.values())


def _without_comment(line: str) -> str:
    """pip's rule: # starts a comment at the line's start or after whitespace (a URL's #sha256= stays)."""
    match = re.search(r"(^|\s)#", line)
    return line[:match.start()] if match else line


def _option_problem(body: str) -> str:
    flag = re.split(r"[\s=]", body, maxsplit=1)[0]
    for names, why in _OPTIONS.items():
        if flag in names or any(flag.startswith(n) and len(n) == 2 for n in names):
            return f"{excerpt(flag)} {why}; expected requirements only"
    return f"{excerpt(flag, 40)} is an option; expected requirements only (e.g. einops==0.8.1)"


def _parsed(path: Path, where: str, body: str) -> Requirement:
    if "://" in body and "@" in body.split("://", 1)[1].split("/", 1)[0]:
        raise ManifestError(path, where, "credentials do not belong in a requirements file (the line is not "
                                         "shown); expected a URL an index serves without them")
    try:
        return Requirement(body)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0] if str(exc) else "not a requirement"
        raise ManifestError(path, where, f"{excerpt(body)} is not a requirement ({excerpt(first, 120)}); "
                                         "expected NAME[extras] SPECIFIERS ; MARKERS, e.g. einops>=0.8") from None


def _checked_url(path: Path, where: str, requirement: Requirement) -> str | None:
    """A direct reference is taken only when it names exactly one thing: a VCS checkout at a full
    commit, or an archive with its sha256."""
    url = requirement.url
    if url is None:
        return None
    name = requirement.name
    if url.startswith(_VCS):
        ref = url.split("#", 1)[0].rsplit("@", 1)
        if len(ref) != 2 or "/" in ref[1] or not _FULL_COMMIT.fullmatch(ref[1]):
            raise ManifestError(path, where, f"{name} @ a VCS URL without a full commit; expected "
                                             "@<40 hex digits> at the end of the URL (a branch or tag moves)")
        return url
    if url.startswith("https://"):
        fragment = url.split("#", 1)[1] if "#" in url else ""
        if not _HASH_FRAGMENT.search(fragment):
            raise ManifestError(path, where, f"{name} @ a URL without its hash; expected #sha256=<64 hex digits> "
                                             "at the end of the URL")
        return url
    raise ManifestError(path, where, f"{name} @ {excerpt(url.split(':', 1)[0] + ':', 20)} URL; expected an https:// "
                                     "archive pinned by #sha256= or a git+https:// URL at a full commit")
