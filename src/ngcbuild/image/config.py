"""An image config normalised: fixed times by the one rule of layer_tar.Times, nothing of the container or
engine that ran the build, the rewritten layers' diff ids, and the label that says when the image was made
(the one a finished release image carries). A change of these rules is a new recipe.VERSION."""

from __future__ import annotations

import calendar
import json
import re
import time

from ngcbuild.image.layer_tar import Times

# The release image's time, written into its config alone (the engine's image, as built, has none).
CREATED_LABEL = "org.opencontainers.image.created"
# What a config says about the container and engine that ran the last step, never about the image; `parent`:
# buildah's id of the last step's parent image, made anew on every build (Podman's run-to-run difference)
_ENGINE_KEYS = ("container", "container_config", "docker_version", "parent")
# buildah's history comment naming the image a step started from by the engine's id of it, which differs on
# every build: dropped (a comment naming the base by its reference stays)
_PARENT_COMMENT_RE = re.compile(r"FROM [0-9a-f]{12,64}")
_LABEL_STEP = "#(nop) LABEL "
_TIME_RE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)")
_SOURCE_HASH_RE = re.compile(r"\b(dir|file|multi):[0-9a-f]{64}\b")


def seconds(text: str) -> int:
    """Whole seconds since 1970 of an RFC 3339 time as engines write them (nanoseconds, Z or an offset)."""
    match = _TIME_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not an RFC 3339 time: {text[:40]!r}")
    value = calendar.timegm(time.strptime(match[1], "%Y-%m-%dT%H:%M:%S"))
    if match[3] != "Z":
        sign = 1 if match[3][0] == "+" else -1
        value -= sign * (int(match[3][1:3]) * 3600 + int(match[3][4:6]) * 60)
    return value


def rfc3339(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def normalised_config(raw: dict, diff_ids: list[str], times: Times, kept: int = 0) -> bytes:
    """The image config with fixed times and nothing of the container or engine that built it; the
    history entries stay (their times by the same rule as the files'). The first `kept` layers are the
    base image's."""
    config = {key: value for key, value in raw.items() if key not in _ENGINE_KEYS}
    config["created"] = rfc3339(times.epoch)
    history, layer = [], -1
    for entry in raw.get("history") or []:
        entry = dict(entry)
        if "created" in entry:
            entry["created"] = rfc3339(times(seconds(entry["created"])))
        if _PARENT_COMMENT_RE.fullmatch(entry.get("comment", "")):
            del entry["comment"]
        if not entry.get("empty_layer"):
            layer += 1
            if layer >= kept and layer < len(diff_ids) and "created_by" in entry:
                # COPY and ADD name what they copied by the engine's hash of it, times included: the
                # step's layer, as rewritten, names the same content
                entry["created_by"] = _SOURCE_HASH_RE.sub(rf"\g<1>:{diff_ids[layer][7:]}", entry["created_by"])
        history.append(entry)
    if history:
        config["history"] = _labels_in_order(history)
    config["rootfs"] = {"type": "layers", "diff_ids": list(diff_ids)}
    inner = dict(config.get("config") or {})
    inner["Hostname"] = ""  # the id of the build's last container
    inner["Image"] = ""  # the engine's id of the last step's parent image
    inner["Labels"] = {**(inner.get("Labels") or {}), CREATED_LABEL: rfc3339(times.epoch)}
    config["config"] = inner
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def _labels_in_order(history: list[dict]) -> list[dict]:
    """Each run of consecutive LABEL entries that wrote no layer sorted by their text: buildah writes the labels
    a build is given through the API (engine/build.py's) in a Go map's order, which differs from build to
    build; the labels themselves are a map, so their order in the history says nothing."""
    out: list[dict] = []
    run: list[dict] = []
    for entry in [*history, None]:
        if entry is not None and entry.get("empty_layer") and _LABEL_STEP in entry.get("created_by", ""):
            run.append(entry)
            continue
        out.extend(sorted(run, key=lambda item: json.dumps(item, sort_keys=True)))
        run = []
        if entry is not None:
            out.append(entry)
    return out
