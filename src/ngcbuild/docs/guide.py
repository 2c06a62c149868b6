"""The project's guide: the Markdown pages of docs/ (the task reference, the runbooks, the trust
model, design notes), served by the site as guide/NAME.html, docs/README.md as guide/index.html.

Each page is read through the one reader of user files (a regular file inside the project, bounded,
UTF-8). A link to another page of the guide becomes a link to its HTML page; any other relative link
(to a file of the checkout the site does not hold) becomes its text and its target, so no link of
the site leads nowhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import UserError
from ngcbuild.core.files import read_text
from ngcbuild.core.project import Project

FOLDER = "docs"
MAX_PAGE_BYTES = 1_000_000
MAX_PAGES = 200
INDEX = "README.md"
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class GuidePage:
    rel: str  # its path in the site: guide/NAME.html
    title: str
    markdown: str


def _html_name(name: str) -> str:
    return "index.html" if name == INDEX else name[: -len(".md")] + ".html"


def _links(text: str, pages: set[str]) -> str:
    def link(match: re.Match) -> str:
        label, target = match.groups()
        page, _, anchor = target.partition("#")
        if page in pages:
            return f"[{label}]({_html_name(page)}{'#' + anchor if anchor else ''})"
        if not page and anchor:  # a heading of this page
            return match.group(0)
        return f"{label} (`{target}`)"

    return _LINK.sub(link, text)


def guide_pages(project: Project) -> list[GuidePage]:
    """The pages of docs/ (none when the project has no docs/ folder)."""
    folder = project.root / FOLDER
    if not folder.is_dir():
        return []
    paths = sorted(path for path in folder.iterdir() if path.suffix == ".md")
    if len(paths) > MAX_PAGES:
        raise UserError(f"{FOLDER}/: {len(paths)} Markdown pages; the site's guide takes at most {MAX_PAGES}")
    names = {path.name for path in paths}
    pages = []
    for path in paths:
        text = read_text(Path(path), MAX_PAGE_BYTES, "a page of the guide (Markdown)", "file not found",
                         within=project.root)
        heading = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
        pages.append(GuidePage(f"guide/{_html_name(path.name)}", heading, _links(text, names)))
    return pages
