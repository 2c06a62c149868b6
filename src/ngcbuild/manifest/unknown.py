"""Values a draft manifest leaves UNKNOWN on purpose.

`ngcbuild bump` drafts NVIDIA's next release (25.12 -> 26.01) with every version NVIDIA chooses (CUDA,
cuDNN, NCCL, TensorRT, source commits, the base image, the notes) written as the word UNKNOWN until
someone fills it in from NVIDIA's release notes: never guessed, never the previous release's value
passing for the new one. Such a manifest does not load: every command that needs the release
(render, build, verify, notes) names each key still UNKNOWN, so nothing is built from a guess.
"""

from __future__ import annotations

UNKNOWN = "UNKNOWN"


def unknown_keys(data, prefix: str = "") -> list[str]:
    """The dotted key path of every value that is exactly UNKNOWN (list items by their index)."""
    if isinstance(data, str):
        return [prefix] if data == UNKNOWN else []
    if isinstance(data, dict):
        items = ((str(key), value) for key, value in data.items())
    elif isinstance(data, list):
        items = ((str(index), value) for index, value in enumerate(data))
    else:
        return []
    found = []
    for key, value in items:
        found += unknown_keys(value, f"{prefix}.{key}" if prefix else key)
    return found


def unknown_message(keys: list[str]) -> str:
    shown = ", ".join(keys[:30]) + (f" and {len(keys) - 30} more" if len(keys) > 30 else "")
    return (f"{len(keys)} value{'s are' if len(keys) != 1 else ' is'} still UNKNOWN (a draft): {shown}; fill each "
            "in from NVIDIA's release notes for this release (nothing is rendered, built or verified until none is)")
