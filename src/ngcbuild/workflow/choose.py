"""The releases an operator names when dispatching the release workflow by hand (its `releases`
input, passed on as `invoke changed --releases "..."`): the plan narrowed to them.
A name the plan does not hold stops the plan, listing the names it could have been."""

from __future__ import annotations

import re

from ngcbuild.core.errors import UserError, excerpt
from ngcbuild.core.names import RELEASE_NAME_RE

MAX_TEXT = 4000  # far more than every release's name; a longer input is a mistake


def parse_names(text: str) -> list[str]:
    """Release names separated by spaces or commas, each once, in the order given; [] for blank."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise UserError(f"--releases: expected release names separated by spaces or commas, at most {MAX_TEXT} "
                        "characters")
    names = []
    for name in re.split(r"[\s,]+", text.strip()):
        if not name:
            continue
        if not RELEASE_NAME_RE.fullmatch(name):
            raise UserError(f"--releases: {excerpt(name)} is not a release name; expected names such as dev or "
                            "25.12 (manifests/NAME.yaml) separated by spaces or commas")
        if name not in names:
            names.append(name)
    return names


def narrow(plan: dict, text: str | None) -> dict:
    """`plan` (render/changed.selection) with only the releases named in `text`, and the base of each
    derived release named (its job makes the record the derived job builds FROM); unchanged for none."""
    names = parse_names(text) if text is not None else []
    if not names:
        return plan
    unknown = [name for name in names if name not in plan["releases"]]
    if unknown:
        which = ", ".join(unknown)
        offered = ", ".join(plan["releases"]) or "none"
        raise UserError(f"--releases: {which}: no buildable release of that name in this plan; expected some of: "
                        f"{offered}")
    derived = plan.get("derived_jobs", [])
    names = names + [job["base"] for job in derived if job["release"] in names]
    return {**plan, "releases": [r for r in plan["releases"] if r in names],
            "jobs": [job for job in plan["jobs"] if job["release"] in names],
            "derived_jobs": [job for job in derived if job["release"] in names]}
