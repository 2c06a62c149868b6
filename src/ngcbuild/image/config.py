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
# buildah's history comment naming the image a step started from (the engine's id of it, new on every build,
# or the base's local name): Docker writes none; the base is named by its label and its layers
_PARENT_COMMENT_RE = re.compile(r"FROM \S+")
# what a config says about the engine alone (buildah's version): a label Docker's image has no counterpart of
_ENGINE_LABELS = ("io.buildah.version",)
_LABEL_STEP = "#(nop) LABEL "
# a metadata step's history text, as each engine writes it: Docker `#(nop)  ENV A=1 B=x y` (values evaluated,
# unquoted, two spaces), buildah `#(nop) ENV A="1"     B="x y"` (the Dockerfile's words as written)
_NOP_RE = re.compile(r"#\(nop\) +")
_SETTING_STEP_RE = re.compile(r"(.*#\(nop\) )(ENV|LABEL) (.*)", re.S)
_SETTING_KEY_RE = re.compile(r'(?:^|\s)"?([^\s"=]+)"?=')
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
            made = seconds(entry["created"])
            entry["created"] = rfc3339(times(made))
            if made > times.made_after and isinstance(entry.get("created_by"), str):  # the build's step
                entry["created_by"] = _engine_free(entry["created_by"], raw.get("config") or {})
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
    for key, value in inner.items():  # an empty setting: null on Docker, [] or {} on buildah
        if value == [] or value == {}:
            inner[key] = None
    labels = {key: value for key, value in (inner.get("Labels") or {}).items() if key not in _ENGINE_LABELS}
    inner["Labels"] = {**labels, CREATED_LABEL: rfc3339(times.epoch)}
    config["config"] = inner
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def _engine_free(created_by: str, settings: dict) -> str:
    """A build step's history text as no engine in particular writes it: `#(nop)` and one space, and an ENV or
    LABEL step as `KEY=VALUE ...`, its keys in the step's order, each value the image's (its config's Env or
    Labels), so that Docker's evaluated words and buildah's quoted ones read the same. A key the config does
    not hold is not one (a word of a value that has `=` in it); a step none of whose keys it holds is left."""
    text = _NOP_RE.sub("#(nop) ", created_by)
    step = _SETTING_STEP_RE.fullmatch(text)
    if step is None:
        return text
    if step[2] == "ENV":
        env = settings.get("Env") if isinstance(settings.get("Env"), list) else []
        values = dict(item.split("=", 1) for item in env if isinstance(item, str) and "=" in item)
    else:
        values = settings.get("Labels") if isinstance(settings.get("Labels"), dict) else {}
    keys = [key for key in dict.fromkeys(_SETTING_KEY_RE.findall(step[3])) if key in values]
    if not keys:
        return text
    return step[1] + step[2] + " " + " ".join(f"{key}={values[key]}" for key in keys)


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
