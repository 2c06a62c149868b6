"""`ngcbuild smoke --release R` for a derived release: the base's checks with the derived image's
expectations, and the derived checks (smoke/checks/test_derived.py). What "the base's stack" is comes
from the base image itself, read once here: each protected distribution's version and the sha256 of
its RECORD (which holds the hash of every file), run through engine/container.py."""

from __future__ import annotations

import json
import sys

from ngcbuild.core.errors import OperationError, SmokeFailed, excerpt
from ngcbuild.core.project import Project
from ngcbuild.derive.render import render_derived
from ngcbuild.manifest.loader import load_release
from ngcbuild.workspace.release_dir import EXPECTED

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
    from ngcbuild.engine.container import run_once

    ran = run_once(client, image, ["-c", STACK, json.dumps(sorted(names))], entrypoint=["python3"],
                   what=f"{image[:60]}: reading its protected distributions", deadline_s=DEADLINE_S,
                   failure=SmokeFailed, labels={"io.ngcbuild.smoke": "1"})
    if ran.exit_code != 0:
        raise SmokeFailed(f"{image[:60]}: could not read its distributions: {(ran.stdout + ran.stderr)[-300:]}")
    try:
        return json.loads(ran.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise OperationError(f"{image[:60]}: its inventory was not JSON: {excerpt(ran.stdout[-200:])}") from None


def smoke_derived(project: Project, name: str, require_gpu: bool = False, image: str | None = None,
                  out=sys.stdout) -> dict:
    from ngcbuild.engine.client import connect
    from ngcbuild.smoke.runner import run_smoke

    loaded = load_release(project, name)
    rendered = render_derived(project, loaded)
    expected = json.loads(rendered.files[EXPECTED])
    base_image = rendered.plan.base_image
    protected = sorted(loaded.derived.protected)
    stack = base_stack(connect(), base_image, protected)
    missing = sorted(set(protected) - set(stack))
    if missing:
        raise SmokeFailed(f"{base_image[:60]}: protected distributions not installed in the base: {', '.join(missing)}")
    expected["derived"]["base_stack"] = stack
    print(f"smoke: {name} on {loaded.derived.base} ({base_image[:60]}); base stack: "
          + ", ".join(f"{n} {f['version']}" for n, f in sorted(stack.items())), file=out, flush=True)
    return run_smoke(project, name, require_gpu=require_gpu, image=image, out=out, rendered=rendered,
                     expected_json=(json.dumps(expected, indent=2, sort_keys=True) + "\n").encode())
