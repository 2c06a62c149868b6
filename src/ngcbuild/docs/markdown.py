"""The Jinja environment of the generated documents (notes, matrix, diff) and their Markdown escaping."""

from __future__ import annotations

import re

import jinja2

from ngcbuild.core.project import Project
from ngcbuild.core.templating import environment

# Characters that would start Markdown syntax inside a value: emphasis, code, links, table cells,
# raw HTML. An underscore inside a word (NCCL_ALGO) is left alone: it starts no emphasis.
_SPECIAL = re.compile(r"[\\`*\[\]|<>]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md(value) -> str:
    """A value as literal Markdown text."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), str(value))


def document_environment(project: Project) -> jinja2.Environment:
    env = environment(project.docs_templates)
    env.filters["md"] = md
    return env
