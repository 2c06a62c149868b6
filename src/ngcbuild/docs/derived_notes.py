"""What a derived release adds to its base, in words: its release notes (notes.write_notes writes them
for a derived release) and its diff (diff.diff_text, where either side is derived: the pins each side's
image holds, compared). Every value shown comes from the manifests and the lock, each validated on load;
the lock's names and versions pass through core/text.safe all the same, as everything printed does."""

from __future__ import annotations

import json

from ngcbuild.core.project import Project
from ngcbuild.core.text import safe
from ngcbuild.manifest.loader import LoadedRelease


def _pins(loaded: LoadedRelease) -> dict[str, str]:
    pins = {p.key: p.version for p in loaded.constraints.pins}
    if loaded.derived is None:  # what the release builds from source is in its image too
        from ngcbuild.manifest.derived import built_from_source

        pins.update({p.key: p.version for p in built_from_source(loaded.release, loaded.catalog, loaded.constraints)})
    return pins


def changes(old: LoadedRelease, new: LoadedRelease) -> dict:
    before, after = _pins(old), _pins(new)
    return {"old": old.release.release, "new": new.release.release,
            "added": {k: after[k] for k in sorted(after.keys() - before.keys())},
            "removed": {k: before[k] for k in sorted(before.keys() - after.keys())},
            "changed": {k: [before[k], after[k]] for k in sorted(before.keys() & after.keys())
                        if before[k] != after[k]}}


def pins_diff_text(old: LoadedRelease, new: LoadedRelease, as_json: bool = False) -> str:
    found = changes(old, new)
    old, new = old.release.release, new.release.release
    if as_json:
        return json.dumps(found, indent=2) + "\n"
    lines = [f"# {old} -> {new}: Python distributions", ""]
    lines += [f"- added {safe(k)} {safe(v)}" for k, v in found["added"].items()]
    lines += [f"- removed {safe(k)} {safe(v)}" for k, v in found["removed"].items()]
    lines += [f"- {safe(k)} {safe(a)} -> {safe(b)}" for k, (a, b) in found["changed"].items()]
    if len(lines) == 2:
        lines.append("- no difference")
    return "\n".join(lines) + "\n"


def notes_text(project: Project, loaded: LoadedRelease) -> str:
    derived, release = loaded.derived, loaded.release
    name = release.release
    base = derived.base
    lines = [f"# {release.release}: {release.image.repository} on {base}", "", release.summary, "",
             f"A derived image: built FROM {base}'s image by digest, with what the team's requirements "
             f"({derived.requirements_path.relative_to(project.root).as_posix()}) add, resolved against {base}'s "
             f"pins (lock: {derived.lock_path.relative_to(project.root).as_posix()}, {derived.lock_state}). "
             f"Everything else in the image is {base}'s, unchanged.", "", "## Requirements", ""]
    lines += [f"- `{r.text}`" for r in derived.requirements]
    base_pins = {p.key: p for p in derived.base_pins()}
    locked = derived.lock.pins if derived.lock_state == "fresh" else ()
    added = [e for e in locked if e.key not in base_pins]
    lines += ["", "## What it adds to " + base, ""]
    lines += [f"- {safe(e.name)} {safe(e.version or e.url)}" + (f" ({safe(e.marker)})" if e.marker else "")
              for e in added] or \
        ["- nothing locked yet: run `ngcbuild resolve --release " + name + "`"]
    lines += ["", "## What it moves (overrides)", ""]
    moved = {e.key: e.version for e in locked}
    lines += [f"- {key} {base_pins[key].version} -> {moved.get(key, '?')}"
              + (" (protected by " + base + ")" if key in derived.protected else "") + f": {o.reason}"
              for key, o in sorted(derived.overrides.items())] or ["- nothing"]
    kept = sorted(k for k in derived.protected if k not in derived.overrides)
    lines += ["", f"## Protected by {base}, unchanged", "", ", ".join(kept) or "none", ""]
    return "\n".join(lines)
