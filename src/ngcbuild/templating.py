"""The one Jinja environment: strict (an undefined name is an error), whitespace as written."""

from __future__ import annotations

from pathlib import Path

import jinja2


def environment(directory: Path, *, html: bool = False) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=html,
    )
