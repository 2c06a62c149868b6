"""Looking for secrets where they must never be: every layer tar and the config of `docker save`, the
image's history and labels, and any text (command output, files under build/)."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from pathlib import Path


def credential_markers(user: str, password: str) -> dict[str, bytes]:
    """A password as it could leak: itself, and in the base64 `user:password` of a Docker config."""
    return {"registry password": password.encode(),
            "registry auth (base64)": base64.b64encode(f"{user}:{password}".encode())}


def scan_image(engine, image_id: str, markers: dict[str, bytes], archive: Path) -> tuple[list[str], int]:
    """Where any marker occurs in the image; and how many layer tars were read."""
    with archive.open("wb") as handle:
        for chunk in engine.get_image(image_id):
            handle.write(chunk)
    found, layers = [], 0
    with tarfile.open(archive) as outer:
        for member in outer.getmembers():
            if not member.isfile():
                continue
            data = outer.extractfile(member).read()
            if member.name.endswith("layer.tar"):
                layers += 1
                with tarfile.open(fileobj=io.BytesIO(data)) as layer:
                    for entry in layer.getmembers():
                        if "ngcbuild/ca.pem" in entry.name or entry.name.endswith("build-inputs/ca.pem"):
                            found.append(f"CA bundle file in {member.name}: {entry.name}")
                        if entry.isfile():
                            content = layer.extractfile(entry).read()
                            found += [f"{name} in {member.name}: {entry.name}"
                                      for name, marker in markers.items() if marker in content]
            else:  # the image config (labels, env, history), manifest.json, repositories
                found += [f"{name} in {member.name}" for name, marker in markers.items() if marker in data]
    history = json.dumps(engine.history(image_id)).encode()
    found += [f"{name} in docker history" for name, marker in markers.items() if marker in history]
    labels = json.dumps(engine.inspect_image(image_id)["Config"].get("Labels") or {}).encode()
    found += [f"{name} in labels" for name, marker in markers.items() if marker in labels]
    return found, layers


def scan_text(where: str, text: str | bytes, markers: dict[str, bytes]) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [f"{name} in {where}" for name, marker in markers.items() if marker in data]


def scan_files(directory: Path, markers: dict[str, bytes]) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            found += scan_text(str(path), path.read_bytes(), markers)
    return found
