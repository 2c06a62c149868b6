"""The Jinja environment of the generated documents (notes, matrix, diff) and their Markdown escaping:
`md`, on top of core/text.safe (control characters, a newline that would start a heading, escaped)."""

from __future__ import annotations

import re

import jinja2

from ngcbuild.core.project import Project
from ngcbuild.core.templating import environment
from ngcbuild.core.text import safe

# Characters that would start Markdown syntax inside a value: emphasis, code, links, table cells,
# raw HTML. An underscore inside a word (NCCL_ALGO) is left alone: it starts no emphasis.
_SPECIAL = re.compile(r"[\\`*\[\]|<>]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


MAX_VALUE = 4000  # the longest text a manifest may hold (fields.Prose); longer, from a file of build/, is cut


def md(value) -> str:
    """A value as literal Markdown text on one line: unprintable characters escaped (core/text.safe),
    then every character that would start Markdown syntax or raw HTML."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(0), safe(str(value), MAX_VALUE))


def document_environment(project: Project) -> jinja2.Environment:
    env = environment(project.docs_templates)
    env.filters["md"] = md
    return env
