"""`invoke golden`; golden files: the rendered Dockerfile of every buildable release, kept under tests/golden/<R>/ so
that a change to a manifest or a template shows up as a reviewable diff."""

from __future__ import annotations

from pathlib import Path

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.render.context import render_files

GOLDEN_FILES = ("Dockerfile",)


def golden_dir(project: Project) -> Path:
    return project.root / "tests" / "golden"


def rendered_golden(project: Project, name: str) -> dict[str, bytes]:
    """What the golden files of `name` should hold now (rendered in memory; build/ is not touched)."""
    rendered = render_files(project, load_release(project, name))
    return {rel: rendered.files[rel] for rel in GOLDEN_FILES}


def regenerate(project: Project) -> list[Path]:
    """Write the golden files of every buildable release; returns the files whose content changed."""
    written = []
    for name in buildable_releases(project):
        for rel, data in rendered_golden(project, name).items():
            path = golden_dir(project) / name / rel
            if path.is_file() and path.read_bytes() == data:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    return written
