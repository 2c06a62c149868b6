"""What "the base's stack" is, for the smoke suite of an image built FROM another (a derived release):
read once from the base image itself before the suite runs, each protected distribution's version and
the sha256 of its RECORD (which holds the hash of every file), through engine/container.py. The render
says which distributions (Rendered.base_stack); an image built from a manifest has none.
"""

from __future__ import annotations

import json

from ngcbuild.core.errors import OperationError, SmokeFailed, excerpt
from ngcbuild.core.text import safe

DEADLINE_S = 600
# With the base image's python3 and the standard library: each named distribution's version and the
# sha256 of its RECORD, found by reading the dist-info folders of sys.path (Python 3.6 has no importlib.metadata).
STACK = r"""
import hashlib, json, os, re, sys
wanted = set(json.loads(sys.argv[1]))
found = {}
for entry in sys.path:
    if not os.path.isdir(entry):
        continue
    for folder in sorted(os.listdir(entry)):
        if not folder.endswith(".dist-info"):
            continue
        meta = os.path.join(entry, folder, "METADATA")
        record = os.path.join(entry, folder, "RECORD")
        if not (os.path.isfile(meta) and os.path.isfile(record)):
            continue
        fields = {}
        for line in open(meta, encoding="utf-8", errors="replace"):
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key, value.strip())
        name = re.sub(r"[-_.]+", "-", fields.get("Name", "")).lower()
        if name in wanted and name not in found:
            with open(record, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            found[name] = {"version": fields.get("Version"), "record_sha256": digest}
print(json.dumps(found, sort_keys=True))
"""


def base_stack(client, image: str, names: list[str]) -> dict:
    """name -> {version, record_sha256} of each of `names` installed in `image`."""
    from ngcbuild.engine.client import ensure_image
    from ngcbuild.engine.container import run_once

    ensure_image(client, image, "the base image of the derived release")
    ran = run_once(client, image, ["-c", STACK, json.dumps(sorted(names))], entrypoint=["python3"],
                   what=f"{safe(image, 60)}: reading its protected distributions", deadline_s=DEADLINE_S,
                   failure=SmokeFailed, labels={"io.ngcbuild.smoke": "1"})
    if ran.exit_code != 0:
        raise SmokeFailed(f"{safe(image, 60)}: could not read its distributions: "
                          f"{safe((ran.stdout + ran.stderr)[-300:], 400)}")
    try:
        found = json.loads(ran.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = None
    if not isinstance(found, dict) or not all(isinstance(f, dict) and isinstance(f.get("version"), str)
                                              and isinstance(f.get("record_sha256"), str) for f in found.values()):
        raise OperationError(f"{safe(image, 60)}: its inventory was not what the script prints: "
                             f"{excerpt(ran.stdout[-200:])}")
    return found


def with_base_stack(client, rendered, expected_json: bytes, say) -> bytes:
    """`expected_json` with the base stack read from the base image (its `derived.base_stack`) where the
    render names one; unchanged otherwise."""
    names = list(rendered.base_stack)
    if not names:
        return expected_json
    base_image = rendered.plan.base_image
    stack = base_stack(client, base_image, names)
    missing = sorted(set(names) - set(stack))
    if missing:
        raise SmokeFailed(f"{safe(base_image, 80)}: protected distributions not installed in the base: "
                          f"{', '.join(missing)}")
    expected = json.loads(expected_json)
    expected["derived"]["base_stack"] = stack
    say(f"smoke: {rendered.release} on {expected['derived']['base']} ({safe(base_image, 80)}); base stack: "
        + ", ".join(f"{safe(n, 60)} {safe(f['version'], 40)}" for n, f in sorted(stack.items())))
    return (json.dumps(expected, indent=2, sort_keys=True) + "\n").encode()
