"""What a derived release's manifest says in its `derive:` section: the team's requirements file, the
base pins it overrides (each with its reason) and, for a base given as an image, which of that
image's distributions are protected.

A derived release is a manifest under manifests/derived/ that `extends:` one of our releases (its
base), or that describes a base image pinned by digest (`base.image` and `base.digest`). Everything
else comes from the base; manifest/derived.py checks the section against the base's pins.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from ngcbuild.core.errors import excerpt
from ngcbuild.manifest.constraints import parse_pin
from ngcbuild.manifest.fields import Day, PackageName, Reason

# a file of the project, named relative to its root: no .., no absolute path, no option-like start
_PROJECT_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*")
MAX_OVERRIDES = 200


def _project_file(value: str) -> str:
    if not _PROJECT_FILE.fullmatch(value) or len(value) > 300 or ".." in value.split("/"):
        shown = excerpt(value)
        raise PydanticCustomError("ngcbuild_pattern", "{value} is not {expected}",
                                  {"value": shown, "expected": "a file of the project, relative to its root "
                                   "(e.g. teams/vision/requirements.txt)"})
    return value


def _exact_pin(value: str) -> str:
    if parse_pin(value, 0) is None:
        shown = excerpt(value)
        raise PydanticCustomError("ngcbuild_pattern", "{value} is not {expected}",
                                  {"value": shown, "expected": "the base's pin it replaces, NAME==VERSION "
                                   "(e.g. numpy==2.4.6)"})
    return value


def day_to_come(day: date) -> str | None:
    """Why `day` cannot say which index to read (derive.index_as_of, fit --index-as-of), or None: the
    index as of a day to come is whatever it holds when the resolver runs (the same inputs would lock
    otherwise on another day), and uv cannot read a day near the end of its calendar at all."""
    today = datetime.now(timezone.utc).date()
    if day > today:
        return f"{day.isoformat()} is in the future (today is {today.isoformat()} UTC); expected a day that has begun"
    return None


def _passed_day(value: date) -> date:
    problem = day_to_come(value)
    if problem:
        raise PydanticCustomError("ngcbuild_date", "{problem}", {"problem": problem})
    return value


ProjectFile = Annotated[str, AfterValidator(_project_file)]
ExactPin = Annotated[str, AfterValidator(_exact_pin)]


class Override(BaseModel):
    """A base pin the derived release may move, and why. The resolver then picks that distribution's
    version for the team's requirements; the lock records it, the image's constraint file carries it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    replaces: ExactPin
    reason: Reason
    # A distribution the base protects (its pip.protected, or a component built from source) moves
    # only under an override that says so.
    protected: bool = False


class DeriveSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # The team's requirements (requirements-file syntax: pins, ranges, extras, markers; a URL only
    # pinned by hash, a VCS reference only by a full commit; no options).
    requirements: ProjectFile
    overrides: list[Override] = Field(default_factory=list, max_length=MAX_OVERRIDES)
    # For a base given as an image: the distributions of that image that must not move (a base
    # release declares its own in pip.protected).
    protected: list[PackageName] = Field(default_factory=list)
    # The index as it was at the end of this day (uv's --exclude-newer): the same inputs resolve to the
    # same lock on any later day. Without it the lock is what the index holds when `resolve` runs.
    index_as_of: Annotated[Day, AfterValidator(_passed_day)] | None = None

    @model_validator(mode="after")
    def _each_pin_once(self):
        seen = set()
        for override in self.overrides:
            name = parse_pin(override.replaces, 0).key
            if name in seen:
                raise PydanticCustomError("ngcbuild_duplicate", "{name} is overridden twice; expected one "
                                          "override per base pin", {"name": name})
            seen.add(name)
        return self
