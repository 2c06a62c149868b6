"""The one Jinja environment: strict (an undefined name is an error), whitespace as written.

Templates are the project's files like manifests: read through the one reader (files.py), so a
template that is a link out of templates/, a FIFO or a huge file is one clear error, not a hang.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2
from jinja2.loaders import split_template_path

from ngcbuild.core.files import exists, read_text

MAX_TEMPLATE_BYTES = 1_000_000


class ProjectLoader(jinja2.BaseLoader):
    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def get_source(self, environment, template):
        path = self.directory.joinpath(*split_template_path(template))
        if not exists(path):
            raise jinja2.TemplateNotFound(template)
        text = read_text(path, MAX_TEMPLATE_BYTES, "a template", "template not found",
                                within=self.directory.parent)
        mtime = os.path.getmtime(path)
        return text, str(path), lambda: os.path.exists(path) and os.path.getmtime(path) == mtime


def environment(directory: Path, *, html: bool = False) -> jinja2.Environment:
    return jinja2.Environment(
        loader=ProjectLoader(directory),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=html,
    )
