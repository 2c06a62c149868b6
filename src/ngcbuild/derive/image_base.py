"""A base given as an image pinned by digest: its pins read from the image itself, by running it once
(engine/container.py): every installed distribution with its version and declared requirements, and
its /etc/pip/constraint.txt. The pins are written to constraints/R.base.txt (the loader reads them
from there); the requirements make the stand-ins of the resolve (stand_ins.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ngcbuild.core.errors import OperationError, UserError, excerpt
from ngcbuild.core.outputs import write_file
from ngcbuild.manifest.constraints import parse_pin
from ngcbuild.resolver.stand_ins import StandIn

DEADLINE_S = 300
# Runs with the image's own python3: the standard library only.
INVENTORY = r"""
import json, sys
from importlib import metadata
from pathlib import Path
dists = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        dists[name.lower()] = {"name": name, "version": dist.version, "requires": list(dist.requires or [])}
constraint = Path("/etc/pip/constraint.txt")
listed = sorted(dists.values(), key=lambda d: d["name"].lower())
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "distributions": listed,
                  "constraint_file": constraint.read_text() if constraint.is_file() else None}))
"""


@dataclass(frozen=True)
class ImageInventory:
    python: str
    pins: tuple[str, ...]  # NAME==VERSION, by name
    stand_ins: tuple[StandIn, ...]
    constraint_file: str | None


def read_inventory(image: str, expected_python: str) -> ImageInventory:
    """Run `image` (it must be on this engine, or pullable by it) and read what it holds."""
    from ngcbuild.engine.client import connect, ensure_image
    from ngcbuild.engine.container import run_once

    client = connect()
    ensure_image(client, image, "the derived release's base image")
    ran = run_once(client, image, ["-c", INVENTORY], entrypoint=["python3"], what=f"{image}: reading its pins",
                   deadline_s=DEADLINE_S, labels={"io.ngcbuild.derive": "1"})
    if ran.exit_code != 0:
        raise OperationError(f"{image}: python3 could not list its distributions: {(ran.stdout + ran.stderr)[-300:]}")
    try:
        data = json.loads(ran.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise OperationError(f"{image}: its inventory was not JSON: {excerpt(ran.stdout[-200:])}") from None
    if data["python"] != expected_python:
        raise UserError(f"{image} runs Python {data['python']}, but its derived manifest says python.version "
                        f"{expected_python!r}; expected the image's")
    pins, stand_ins = [], []
    for dist in data["distributions"]:
        pin = parse_pin(f"{dist['name']}=={dist['version']}", 0)
        if pin is None:
            continue  # a name or version no index could serve: nothing can collide with it
        pins.append(str(pin))
        stand_ins.append(StandIn(pin.name, pin.version, tuple(dist["requires"])))
    # What the image's constraint file pins beyond what it installs still holds for every later install
    # in the image (PIP_CONSTRAINT): a pin of the base too.
    installed = {parse_pin(p, 0).key for p in pins}
    for line in (data["constraint_file"] or "").splitlines():
        pin = parse_pin(line.split("#", 1)[0].strip(), 0)
        if pin is not None and pin.key not in installed:
            pins.append(str(pin))
            installed.add(pin.key)
    return ImageInventory(data["python"], tuple(sorted(pins, key=str.lower)), tuple(stand_ins), data["constraint_file"])


def write_base_pins(path, root, image: str, inventory: ImageInventory) -> None:
    """constraints/R.base.txt: the image's distributions, pinned; what the loader takes as the base's pins."""
    listed = "its /etc/pip/constraint.txt and" if inventory.constraint_file else "(it has no /etc/pip/constraint.txt)"
    text = (f"# The pins of the base image {image}: {listed} its installed distributions,\n"
            "# read by `ngcbuild resolve` from the image itself. Do not edit: resolve again to read them.\n"
            + "".join(f"{pin}\n" for pin in inventory.pins))
    write_file(path, text, within=root)
