"""The proposal as the two files a release is: a short manifest that extends the current release
with only what changed (each changed value with where it came from), and the whole constraints file.
The day the indexes were read is in both headers; the same proposal written on the same day is the
same bytes, and apply.py compares a proposal with the files there under their own day."""

from __future__ import annotations

import re

import yaml

from ngcbuild.bump.components import Changes
from ngcbuild.bump.propose import Proposal
from ngcbuild.core.references import shown_url

HEADER_DAY = re.compile(r"^# Proposed by ngcbuild bump --release (?P<parent>\S+) .*?"
                        r"read (?P<day>[0-9]{4}-[0-9]{2}-[0-9]{2})", re.M)


class ManifestDumper(yaml.SafeDumper):
    """Mappings in blocks; a list of short words (a pip layer) on one line, as the manifests write them."""


def _list(dumper, items):
    short = all(isinstance(i, str) and len(i) <= 40 for i in items)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", items, flow_style=short)


ManifestDumper.add_representer(list, _list)
ManifestDumper.add_representer(
    dict, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False))


def _where(proposal: Proposal) -> str:
    return ", ".join(shown_url(i) for i in proposal.indexes)


def manifest_text(proposal: Proposal, changes: Changes, day: str | None = None) -> str:
    day = day or proposal.day
    parent = proposal.release.release
    old_leader = proposal.old_pins().get(proposal.leader.key, "none")
    header = [
        f"# Proposed by ngcbuild bump --release {parent} from {_where(proposal)}, read {day}:",
        f"# {proposal.leader.name} {old_leader} -> {proposal.leader.version}, with the newest of everything else that "
        f"its policy (bump:) and the whole set admit.",
        f"# Only what changed is here; the rest is {parent}'s. Review build/{proposal.name}/bump.md before merging.",
    ]
    data: dict = {"extends": parent}
    components = {}
    for update in changes.components.values():
        entry: dict = {"version": update.version}
        if update.env_version:
            entry["env_version"] = update.env_version
        if update.module_version:
            entry["module_version"] = update.module_version
        entry["source"] = update.source.replace(proposal.day, day)
        if update.packages:
            entry["packages"] = dict(update.packages)
        components[update.name] = entry
    for key, lines in sorted(changes.texts.items()):
        section, _, field = key.partition(".")
        data.setdefault(section, {})[field] = list(lines)
    if changes.layers is not None:
        data["pip"] = {"layers": changes.layers}
    if components:
        data["components"] = components
    body = yaml.dump(data, Dumper=ManifestDumper, sort_keys=False, width=4096, allow_unicode=True)
    return "\n".join(header) + "\n" + body


def constraints_text(proposal: Proposal, day: str | None = None) -> str:
    day = day or proposal.day
    platforms = " and ".join(t.platform for t in proposal.targets)
    header = [
        f"# Proposed by ngcbuild bump --release {proposal.release.release} from {_where(proposal)}, read {day}:",
        f"# the Python environment of `{proposal.name}`, every distribution in the image pinned exactly, resolved "
        f"whole for Python {proposal.targets[0].python} on {platforms}.",
    ]
    pins = [f"{key}=={dist.version}" for key, dist in sorted(proposal.pins.items())]
    return "\n".join(header + pins) + "\n"


def header_of(text: str) -> tuple[str, str] | None:
    """(the release it was proposed from, the day) of a file bump wrote, else None."""
    match = HEADER_DAY.search(text[:2000])
    return (match["parent"], match["day"]) if match else None
