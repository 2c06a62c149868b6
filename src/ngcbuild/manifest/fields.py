"""Validated string types for manifest values.

Every value that can reach a Dockerfile or a shell line is checked here against a strict pattern, so
a manifest can never inject shell, quotes or newlines. Each check fails with a sentence that says
what was expected; the manifest loader puts the file and key path in front of it.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from ngcbuild.core.redact import mask
from ngcbuild.core.references import CREDENTIALS_HELP, ImageRef, ReferenceProblem

# Every pattern of this module, by type name: tests/unit/test_linear_patterns.py feeds each long
# hostile strings with a time bound. No pattern may nest quantifiers over characters that overlap
# (`(a?b+)*`): a failed match would backtrack exponentially.
PATTERNS: dict[str, re.Pattern] = {}


def _pattern_type(name: str, pattern: str, expected: str, longest: int = 1000):
    """A string type: `pattern` and at most `longest` characters (a label value, a line of release
    notes; a longer one is a mistake or an attack on what renders it)."""
    compiled = re.compile(pattern)
    PATTERNS[name] = compiled

    def check(value: str) -> str:
        # the pattern first (linear in time, see above): a long value of the wrong form is named as such
        if not compiled.fullmatch(value):
            raise PydanticCustomError("ngcbuild_pattern", "{value} is not {expected}",
                                      {"value": _shown(value), "expected": expected})
        if len(value) > longest:
            raise PydanticCustomError("ngcbuild_pattern", "{value} is longer than {longest} characters",
                                      {"value": _shown(value), "longest": longest})
        return value

    check.__name__ = f"check_{name}"
    return Annotated[str, AfterValidator(check)]


def _shown(value: str, limit: int = 80) -> str:
    """The offending value for a message: repr (so newlines and quotes show), never huge, its credentials
    masked (core/redact.mask: an index URL with a password in it is refused without showing it)."""
    text = repr(mask(value) if isinstance(value, str) else value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(value)} characters)"


# A version as vendors write them: an optional Debian epoch, numeric release segments, then an optional
# PEP 440 / Debian style tail (2.10.0a0+b4e4ee81d3, 3.11.2-1+b1, 1:2.25.1-1ubuntu3, 1.15.0+nv20.11).
# No shell metacharacters possible. Written as "a digit, then characters each with at most one
# separator before it", which is the same set as digits-and-dots then (separator? alphanumerics)*,
# but matches in linear time.
_VERSION_RE = r"(?:[0-9]+:)?[0-9](?:[.+~_-]?[A-Za-z0-9])*"
Version = _pattern_type("version", _VERSION_RE, "a version (digits and dots, then letters, digits and . + ~ _ -)")


def release_parts(version: str) -> int:
    """How many numeric dot-separated parts a version starts with ('2.28.9-1' -> 3)."""
    match = re.match(r"[0-9]+(\.[0-9]+)*", version)
    return match.group(0).count(".") + 1 if match else 0


MajorMinor = _pattern_type("major_minor", r"[0-9]+\.[0-9]+", "a MAJOR.MINOR version such as 3.11")
# Debian's names may hold + (g++-12); no shell metacharacter is possible.
PackageName = _pattern_type("package", r"[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9+])?",
                            "a package name (letters, digits, . _ + -)")
ComponentName = _pattern_type("component", r"[a-z][a-z0-9_]*", "a component name (lower-case, digits, _)")
# What a component needs from the rest of the image or provides to it (mpi, lapack, cuda-compiler), or a
# component's own name (every installed component provides itself).
Capability = _pattern_type("capability", r"[a-z][a-z0-9_-]*", "a capability name such as mpi or cuda-compiler")
EnvName = _pattern_type("env", r"[A-Z_][A-Z0-9_]*", "an environment variable name (A-Z, 0-9, _)")
LabelKey = _pattern_type("label", r"[a-z0-9]+([._-][a-z0-9]+)*", "a label key in reverse-DNS form")
# Values that end up inside ENV/LABEL lines and shell words: no quotes, $, backslash, backtick,
# semicolons, pipes or control characters.
SafeValue = _pattern_type("value", r"[A-Za-z0-9 ._+:/=,@%()^-]*",
                          "a plain value (letters, digits, spaces and . _ + : / = , @ % ( ) ^ -)", longest=500)
# Prose that only reaches documentation and labels: anything printable on one line except the
# characters that would end a quoted Dockerfile word or start an expansion.
Text = _pattern_type("text", r"[^\x00-\x1f\x7f\"$`\\]*",
                     "one line of text without quotes, $, backticks or backslashes", longest=2000)
AbsPath = _pattern_type("path", r"(/[A-Za-z0-9._+-]+)+/?", "an absolute path (letters, digits, . _ + -)")
Url = _pattern_type("url", r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%+-]*)*/?",
                    "an http(s) URL without query, quotes or spaces")


def _check_image(value: str) -> str:
    try:
        ImageRef.parse(value, need_tag=True)
    except ReferenceProblem as exc:
        if str(exc) == CREDENTIALS_HELP:  # the value holds a password: say so, never show it
            raise PydanticCustomError("ngcbuild_credentials", "{help}", {"help": CREDENTIALS_HELP}) from None
        raise PydanticCustomError("ngcbuild_pattern", "{value} is not {expected}",
                                  {"value": _shown(value), "expected": "an image reference with a tag "
                                   "(registry/name:tag)"}) from None
    return value


TaggedImage = Annotated[str, AfterValidator(_check_image)]  # a manifest's image: checked by ImageRef
RepoPath = _pattern_type("repository", r"[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*",
                         "a repository path such as nvidia/pytorch")
TagWord = _pattern_type("tag", r"[A-Za-z0-9_][A-Za-z0-9._-]{0,60}", "a tag word (letters, digits, . _ -)")
Digest = _pattern_type("digest", r"sha256:[0-9a-f]{64}", "a digest sha256:<64 hex digits>")
Fingerprint = _pattern_type("fingerprint", r"[0-9A-F]{40}", "an OpenPGP v4 key fingerprint (40 upper-case hex digits)")
GitRef = _pattern_type("git_ref", r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}", "a git commit, tag or branch name")
BuildNumber = _pattern_type("build_number", r"[0-9]+(\.[0-9]+)?", "a build number (digits)")
ComputeCapability = _pattern_type("compute_capability", r"[0-9]+\.[0-9]+", "a compute capability such as 7.5")
ArchList = _pattern_type("arch_list", r"[0-9]+\.[0-9]+(\+PTX)?( [0-9]+\.[0-9]+(\+PTX)?)*",
                         "a TORCH_CUDA_ARCH_LIST such as '7.5 8.0 9.0+PTX'")
# A build option handed to a component's build (setup.py --cpp_ext, --enable-mpi-cxx).
BuildOption = _pattern_type("option", r"--[A-Za-z][A-Za-z0-9_-]*(=[A-Za-z0-9._,;+/-]*)?",
                            "an option such as --cpp_ext or --with-cuda=/usr/local/cuda")
# Prose for release notes only (never reaches a Dockerfile or a shell): one line, any printable text.
Prose = _pattern_type("prose", r"[^\x00-\x1f\x7f]*", "one line of printable text", longest=4000)

# Words a policy gives for itself (why an advisory is allowed, a pin held, a tolerated library, the
# evidence for what the base carries): a reason that is blank or a placeholder explains nothing.
_PLACEHOLDERS = {"todo", "tbd", "fixme", "xxx", "n/a", "na", "none", "reason", "why", "because", "-", "?", "..."}


def _check_reason(value: str) -> str:
    words = value.strip()
    if len(words) < 3 or not any(c.isalpha() for c in words) or words.casefold().strip(".!") in _PLACEHOLDERS:
        raise PydanticCustomError("ngcbuild_reason", "{value} says nothing; expected words saying why",
                                  {"value": _shown(value)})
    return value


Reason = Annotated[Prose, AfterValidator(_check_reason)]
# An advisory's id as PyPI's advisory data and OSV name them (PYSEC-2017-94, GHSA-cq27-v7xp-c356,
# CVE-2013-7459): an upper-case prefix, then dash-separated words. Never option-like (--x).
AdvisoryId = _pattern_type("advisory", r"[A-Z][A-Z0-9]*(-[A-Za-z0-9]+)+",
                           "an advisory id such as PYSEC-2017-94, GHSA-cq27-v7xp-c356 or CVE-2013-7459",
                           longest=100)
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _check_day(value):
    """A calendar day: YAML's unquoted 2026-12-31 (a date) or the same quoted; never a time of day."""
    if isinstance(value, datetime):
        raise PydanticCustomError("ngcbuild_date", "{value} is a time; expected a day YYYY-MM-DD",
                                  {"value": _shown(value.isoformat())})
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _DATE_RE.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise PydanticCustomError("ngcbuild_date", "{value} is not a date; expected a day YYYY-MM-DD such as 2026-12-31",
                              {"value": _shown(value)})


Day = Annotated[date, BeforeValidator(_check_day)]
# A PEP 440 version specifier set as a policy writes it ('<2.15', '>=13,<14', '!=2.4.1'): no space,
# quote or shell character; `packaging` parses it where it is used.
VersionSpecifier = _pattern_type("specifier", r"(?:[<>=!~]=?=?[0-9A-Za-z.*+!]+)(?:,[<>=!~]=?=?[0-9A-Za-z.*+!]+)*",
                                 "a version specifier such as '<2.15' or '>=13,<14'", longest=200)
# A requirement pip is asked for, with extras and a specifier but no markers: cuda-toolkit[nvcc,crt]>=13.
Requirement = _pattern_type(
    "requirement", r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*\])?"
                   r"(?:[<>=!~]=?=?[0-9A-Za-z.*+!]+(?:,[<>=!~]=?=?[0-9A-Za-z.*+!]+)*)?",
    "a requirement such as cuda-toolkit[nvcc,crt] or numpy<3 (a name, extras, a specifier; no markers)", longest=300)
