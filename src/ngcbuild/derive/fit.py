"""`ngcbuild fit --requirements FILE`: which of our releases a team's requirement set fits. Each
buildable release is tried as a base (its pins as constraints, what it builds from source standing
in), exactly as `resolve` would for a derived release on it with no override: a table of release,
fits or not, and the conflicts (each with its chain). What a team reads before choosing a month, and
what a scheduled job runs to say when they can move."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import ManifestError, OperationError, UserError, excerpt, shown_path
from ngcbuild.core.indexes import IndexSetting, day_end, release_indexes
from ngcbuild.core.project import Project
from ngcbuild.derive.as_of_index import check_dates_served
from ngcbuild.derive.resolve import machine_inputs
from ngcbuild.manifest.derived import built_from_source, protected_names
from ngcbuild.manifest.loader import LoadedRelease, buildable_releases, load_release
from ngcbuild.manifest.platforms import interpreter
from ngcbuild.manifest.requirements import TeamRequirement, load_requirements
from ngcbuild.resolver.deadline import run_deadline
from ngcbuild.resolver.resolution import Problem, resolve
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.uv import IndexRefused, UnresolvedError
from ngcbuild.verify.target import Target

FITS, CONFLICTS, NOT_CHECKED = "fits", "no", "not checked"


@dataclass(frozen=True)
class FitRow:
    release: str
    verdict: str
    details: tuple[str, ...]  # one line per conflict, or why it was not checked
    conflicts: tuple = ()

    def to_json(self) -> dict:
        return {"release": self.release, "fits": self.verdict == FITS, "verdict": self.verdict,
                "details": list(self.details), "conflicts": [c.to_json(self.release) for c in self.conflicts]}


def fit_problem(loaded: LoadedRelease, requirements: tuple[TeamRequirement, ...], team: str,
                wheelhouse: Path | None, ca_bundle: Path | None, setting: IndexSetting,
                index_as_of: str | None = None) -> Problem:
    release = loaded.release
    provided = built_from_source(release, loaded.catalog, loaded.constraints)
    platforms = tuple(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    return Problem(base=release.release, team=team, requirements=tuple(r.text for r in requirements),
                   kept=loaded.constraints.pins + provided, released=(),
                   stand_ins=tuple(StandIn(p.name, p.version) for p in provided),
                   protected=frozenset(protected_names(release, loaded.catalog)),
                   targets=tuple(Target(interpreter(release), p, release.os.glibc) for p in platforms),
                   indexes=tuple(release_indexes(release, setting, wheelhouse=wheelhouse is not None)),
                   find_links=(wheelhouse,) if wheelhouse else (), ca_bundle=ca_bundle, index_as_of=index_as_of)


def fit_rows(project: Project, file: str, setting: IndexSetting, wheelhouse: str | None = None,
             index_as_of=None) -> list[FitRow]:
    house, ca_bundle = machine_inputs(wheelhouse)
    deadline = run_deadline()
    path = Path(file)
    path = path if path.is_absolute() else Path.cwd() / path
    requirements = _team_requirements(project, path)
    team = shown_path(path)
    rows, dates_checked = [], False
    for name in buildable_releases(project):
        loaded = load_release(project, name)
        if loaded.release.os is None or loaded.release.os.glibc is None:
            rows.append(FitRow(name, NOT_CHECKED, ("its manifest names no os.glibc (which wheels it installs)",)))
            continue
        problem = fit_problem(loaded, requirements, team, house, ca_bundle, setting, day_end(index_as_of))
        if not dates_checked:  # the first index is every release's: asked once
            check_dates_served(problem, "--index-as-of")
            dates_checked = True
        try:
            outcome = resolve(problem, deadline=deadline)
        except IndexRefused:
            raise  # our credentials refused: no release can be judged, and none is "no"
        except UnresolvedError as exc:
            rows.append(FitRow(name, NOT_CHECKED, (exc.reason,)))
            continue
        if outcome.fits:
            rows.append(FitRow(name, FITS, ()))
        else:
            where = f" ({outcome.target.platform})" if len(loaded.release.build.published_platforms) > 1 else ""
            rows.append(FitRow(name, CONFLICTS, tuple(f"{c.requirement}: {c.chain}{where}"
                                                      + (f" (trap: {c.traps[0]})" if c.traps else "")
                                                      for c in outcome.conflicts), tuple(outcome.conflicts)))
    return rows


def _team_requirements(project: Project, path: Path) -> tuple[TeamRequirement, ...]:
    """A team's file wherever it lives (its own checkout, a CI workspace): read as every file is read (a
    regular file, bounded, never a FIFO or device); only a manifest's file must lie in the project. What a
    file outside the project holds is not ours to print (a file of credentials named by mistake): a line
    it refuses is named by its number alone."""
    try:
        return load_requirements(path, within=None, named_by="--requirements")
    except ManifestError as exc:
        real = Path(os.path.realpath(path))
        inside = Path(os.path.realpath(project.root))
        if not exc.key or real == inside or inside in real.parents:
            raise
        raise ManifestError(path, exc.key, "is not a requirement (the line is not shown: the file lies outside "
                                           "the project); expected NAME[extras] SPECIFIERS ; MARKERS, e.g. "
                                           "einops>=0.8") from None


def fit_table(file: str, rows: list[FitRow]) -> str:
    lines = [f"releases for {file}", "", "| release | fits | conflicts |", "|---|---|---|"]
    for row in rows:
        details = "<br>".join(d.replace("|", "\\|") for d in row.details) or "-"
        lines.append(f"| {row.release} | {row.verdict} | {details} |")
    fitting = [r.release for r in rows if r.verdict == FITS]
    lines += ["", f"fits: {', '.join(fitting) or 'none'}"]
    return "\n".join(lines) + "\n"


def run_fit(project: Project, file: str, setting: IndexSetting, wheelhouse: str | None = None, as_json: bool = False,
            index_as_of=None, out=sys.stdout) -> list[FitRow]:
    """The table (or JSON); NoneChecked (exit 1) when no release could be checked at all."""
    if not isinstance(file, str) or not file or file.startswith("-"):
        raise UserError(f"--requirements {excerpt(file)}: expected the path of a requirements FILE")
    rows = fit_rows(project, file, setting, wheelhouse, index_as_of)
    if as_json:
        out.write(json.dumps({"requirements": file, "releases": [r.to_json() for r in rows]}, indent=2) + "\n")
    else:
        out.write(fit_table(file, rows))
    if rows and all(row.verdict == NOT_CHECKED for row in rows):
        out.flush()
        raise NoneChecked(f"fit: no release could be checked ({rows[0].release}: {rows[0].details[0]})")
    return rows


class NoneChecked(OperationError):
    """Not one release could be checked (an index unreachable, uv missing): exit 1, never "fits: none"."""
