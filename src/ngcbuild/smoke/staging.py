"""Stage the host's pytest (pure Python) into a folder that an interpreter without pytest, in an
image or on a GPU host, can put on sys.path to run the checks."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

from packaging.requirements import Requirement

PYTEST_DISTS = ("pytest",)


def stage_pytest(target: Path) -> None:
    """Copy the host's pytest and what it needs (pure Python) for another interpreter to import."""
    target.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    pending = list(PYTEST_DISTS)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            source = Path(dist.locate_file(file))
            if ".." in file.parts or file.suffix == ".pyc" or not source.is_file():
                continue
            destination = target / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        for requirement in dist.requires or ():
            req = Requirement(requirement)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                pending.append(req.name)
