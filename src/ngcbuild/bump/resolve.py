"""One resolution of a proposed set for one target: pip's resolver (`bump/pip.run_pip`, a dry run with
its --report) asked for requirements under constraints, every distribution with its metadata.

That runner ignores Requires-Python (pip would test it against the interpreter running pip, not
the target's); here a distribution whose Requires-Python excludes the target's Python is excluded by
a constraint and the set resolved again, so that the proposal never pins what the image cannot install.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.bump.pip import conflict_reason, run_pip, unmatched_requirement
from ngcbuild.core.errors import OperationError
from ngcbuild.verify.pins import supports_python
from ngcbuild.verify.target import Target

# Each exclusion for Requires-Python costs one more resolution; a set needing more is not converging.
MAX_PYTHON_EXCLUSIONS = 12


@dataclass(frozen=True)
class Dist:
    """One distribution pip resolved: its name as published, version, Requires-Dist, Requires-Python
    and the file pip chose (for the target the resolution was made for)."""

    name: str
    version: str
    requires: tuple[str, ...]
    requires_python: str = ""
    url: str = ""

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


class Unresolvable(OperationError):
    """pip found no set that meets the requirements: `reason` is pip's, in a line or two."""

    def __init__(self, reason: str, output: str = ""):
        super().__init__(reason)
        self.reason, self.output = reason, output


@dataclass(frozen=True)
class Resolution:
    dists: dict[str, Dist]  # canonical name -> what pip resolved
    python_excluded: tuple[tuple[str, str, str], ...]  # (name, version, Requires-Python) left out


def report_dists(report: dict) -> dict[str, Dist]:
    dists = {}
    for item in report.get("install", []):
        metadata = item["metadata"]
        dist = Dist(metadata["name"], metadata["version"], tuple(metadata.get("requires_dist") or ()),
                    metadata.get("requires_python") or "", (item.get("download_info") or {}).get("url", ""))
        dists[dist.key] = dist
    return dists


def pip_once(arguments: list[str], constraints: list[str], indexes: list[str], target: Target, web,
             options: tuple[str, ...] = ()) -> dict[str, Dist]:
    """pip's dry run of `arguments` with `constraints` (lines of a constraints file) and pip `options`
    (--find-links DIR); Unresolvable with pip's reason when it finds no set."""
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bump-") as scratch:
        folder = Path(scratch)
        path = folder / "constraints.txt"
        path.write_text("".join(f"{line}\n" for line in constraints))
        result = run_pip([*options, "--constraint", str(path), *arguments], indexes, target, web, folder, quiet=False)
        if result.returncode != 0:
            output = result.stdout + "\n" + result.stderr
            raise Unresolvable(_shown_reason(conflict_reason(output)), output)
        try:
            report = json.loads((folder / "report.json").read_text())
        except (OSError, ValueError) as exc:
            raise OperationError(f"pip left no report of its dry run ({exc})") from None
    return report_dists(report)


def resolve(requirements: list[str], constraints: list[str], indexes: list[str], target: Target, web,
            options: tuple[str, ...] = ()) -> Resolution:
    """The newest set pip finds for `requirements` under `constraints` whose every distribution
    supports the target's Python."""
    constraints = list(constraints)
    excluded: list[tuple[str, str, str]] = []
    for _ in range(MAX_PYTHON_EXCLUSIONS + 1):
        dists = pip_once(requirements, constraints, indexes, target, web, options)
        wrong = [d for d in dists.values() if not supports_python(d.requires_python, target.python)]
        if not wrong:
            return Resolution(dists, tuple(excluded))
        for dist in wrong:
            excluded.append((dist.name, dist.version, dist.requires_python))
            constraints.append(f"{dist.key}!={dist.version}")
    names = ", ".join(f"{n} {v} (Requires-Python {p})" for n, v, p in excluded[-3:])
    raise Unresolvable(f"more than {MAX_PYTHON_EXCLUSIONS} distributions had to be left out for Requires-Python "
                       f"{target.python}, the last: {names}")


def metadata_of(pins: list[str], indexes: list[str], target: Target, web, options: tuple[str, ...] = ()
                ) -> dict[str, Dist]:
    """The metadata of these pins (NAME==VERSION), no dependencies resolved. A pin with no file for
    the target (one only another platform installs) is left out: pip stops at the first such pin,
    which is set aside and the rest asked again."""
    remaining = list(pins)
    while remaining:
        try:
            return pip_once(["--no-deps", *remaining], [], indexes, target, web, options)
        except Unresolvable as exc:
            missing = unmatched_requirement(exc.output)
            keys = [canonicalize_name(p.partition("==")[0]) for p in remaining]
            if missing is None or missing not in keys:
                raise
            remaining = [p for p, key in zip(remaining, keys, strict=True) if key != missing]
    return {}


def _shown_reason(text: str, limit: int = 600) -> str:
    """pip's reason on one line, never huge (its lists of versions run to kilobytes)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
