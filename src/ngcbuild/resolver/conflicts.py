"""What a conflict is, for the team: their requirement, the base pin it collides with, the chain of
who requires what, the exact override entry that would accept it, and the traps worth naming.

Pure: reads uv's explanation (its "Because ... depends on ..." sentences) and the base's pins; the
trial resolves that find each entry are derive/resolution.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.manifest.constraints import Pin

# "scipy==1.11.4 depends on numpy>=1.21.6,<1.28.0", "all versions of foo depend on bar<2"
_REQUIREMENT = r"[A-Za-z0-9][A-Za-z0-9._\-\[\]]*(?:[=<>!~]=?[^\s,]+(?:,[=<>!~]=?[^\s,]+)*)?"
_DEPENDS = re.compile(rf"(?P<who>{_REQUIREMENT}) depends? on (?P<what>{_REQUIREMENT})")
_SPEC_OF = r"(?<![A-Za-z0-9._-]){name}(?P<spec>(?:[=<>!~]=?[^\s,]+)(?:,[=<>!~]=?[^\s,]+)*)"


@dataclass(frozen=True)
class Conflict:
    requirement: str  # the team's requirement (or "the requirements together")
    collides_with: tuple[Pin, ...]  # the base's pins it collides with
    chain: str  # "scipy 1.11.4 requires numpy>=1.21.6,<1.28.0; dev pins numpy==2.4.6"
    explanation: str  # uv's own words
    protected: tuple[str, ...] = ()  # which of the collided pins the base protects
    accepted_with: dict[str, str] = field(default_factory=dict)  # name -> version an override would give
    traps: tuple[str, ...] = ()

    def override_entry(self, reason: str) -> str | None:
        """The YAML of derive.overrides that would accept the requirement (None: no override does)."""
        if not self.accepted_with or not self.collides_with:
            return None
        lines = []
        for pin in self.collides_with:
            lines.append(f"- replaces: {pin}")
            if pin.key in self.protected:
                lines.append("  protected: true")
            lines.append(f"  reason: {reason}")
        return "\n".join(lines)

    def to_json(self, base: str) -> dict:
        reason = f"<why the team needs {self.requirement}>"
        return {"requirement": self.requirement, "collides_with": [str(p) for p in self.collides_with],
                "protected": list(self.protected), "chain": self.chain, "resolver": self.explanation,
                "override": self.override_entry(reason), "accepted_with": dict(sorted(self.accepted_with.items())),
                "traps": list(self.traps), "base": base}


def explanation(output: str) -> str:
    """uv's explanation, without its "hint:" lines and indentation: one paragraph."""
    lines = []
    for line in output.splitlines():
        text = line.strip()
        if not text or text.startswith(("hint:", "error: No solution found")):
            continue
        lines.append(text.removeprefix("×").removeprefix("╰─▶").removeprefix("cause:").strip())
    return " ".join(lines)


def named_pins(message: str, pins: tuple[Pin, ...]) -> tuple[Pin, ...]:
    """The base pins uv's explanation mentions (by name, as a word)."""
    found = []
    words = {canonicalize_name(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", message)}
    for pin in pins:
        if pin.key in words:
            found.append(pin)
    return tuple(found)


def chain(message: str, base: str, collided: tuple[Pin, ...], requirement: str, team: str) -> str:
    """Who requires what, in order, then what the base pins: "team-x requires accelerate==1.2;
    accelerate 1.2 requires numpy<2; dev pins numpy==2.4.6"."""
    links = [f"{team} requires {requirement}"] if requirement else []
    for match in _DEPENDS.finditer(message):
        who, what = match["who"], match["what"]
        name, _, version = who.partition("==")
        links.append(f"{name} {version} requires {what}" if version else f"{who} requires {what}")
    links += [f"{base} pins {pin}" for pin in collided]
    return "; ".join(dict.fromkeys(links))


def traps(message: str, requirement: str, collided: tuple[Pin, ...], base: str) -> tuple[str, ...]:
    """The known traps behind a conflict: a `>=X.Y` bound that the base's `X.Y.0a0+...` build (a
    pre-release by PEP 440) does not meet; a local build tag (+cpu, +cu130) another build's pin
    names; a requirement that would replace the base's torch by an index's."""
    found = []
    text = f"{message} {requirement}"
    for pin in collided:
        try:
            version = Version(pin.version)
        except InvalidVersion:
            continue
        for match in re.finditer(_SPEC_OF.format(name=re.escape(pin.name)), text, flags=re.IGNORECASE):
            try:
                spec = SpecifierSet(match["spec"])
            except InvalidSpecifier:
                continue
            public = Version(version.base_version)
            if (version.is_prerelease or version.is_devrelease) and spec.contains(public) \
                    and not spec.contains(version, prereleases=True):
                found.append(f"{pin.name}{match['spec']} does not accept {base}'s {pin.version}: a pre-release of "
                             f"{public} sorts before {public} (PEP 440); write {pin.name}>={version.base_version}a0 "
                             "to accept the release's build")
            if version.local and any(s.operator == "==" and "+" in s.version and s.version != pin.version
                                     for s in spec):
                found.append(f"{pin.name}{match['spec']} names another build than {base}'s {pin.version} (the "
                             "part after + is the build: cpu, cu130, an NVIDIA commit)")
        if pin.key == "torch":
            found.append(f"accepting it would replace {base}'s torch {pin.version} by another build of torch from "
                         "the index: the image's CUDA libraries, extensions and smoke checks are built for the "
                         "release's torch")
    return tuple(dict.fromkeys(found))
