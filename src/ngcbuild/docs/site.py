"""The documentation site: build/site/ from the same documents as `notes`, `matrix` and `diff`.

index.html (the support matrix, each release linked), releases/R.html (its notes), diffs/R.html
(what changed since its predecessor), guide/ (the project's docs/, docs/guide.py) and, where both
images were built here and described (their build/R/sbom.cdx.json), images/R.html (what changed in the
image itself), with one stylesheet. Static and offline: no scripts, no fonts, nothing fetched from
elsewhere. Markdown becomes HTML with `markdown`, raw HTML in it disabled, so a manifest's text can never
become markup. The whole site is made in memory first and swapped in like build/R/
(workspace/atomic_dir.py): an interrupt or a failure leaves the older complete site.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2
import markdown

from ngcbuild.core.outputs import make_dir, storing
from ngcbuild.core.project import Project
from ngcbuild.core.redact import mask
from ngcbuild.core.templating import environment
from ngcbuild.docs.diff import render_diff
from ngcbuild.docs.guide import guide_pages
from ngcbuild.docs.image_diff import has_image_facts, render_image_diff
from ngcbuild.docs.matrix import render_matrix
from ngcbuild.docs.notes import render_notes
from ngcbuild.manifest.series import Series
from ngcbuild.workspace.atomic_dir import replace_dir
from ngcbuild.workspace.locks import release_lock

PAGE = "site/page.html.j2"
STYLE = "site/style.css"
SCREENSHOT = "index.png"
PAGE_FOLDERS = ("releases", "diffs", "images", "guide")


@dataclass(frozen=True)
class Site:
    directory: Path
    pages: tuple[Path, ...]

    @property
    def index(self) -> Path:
        return self.directory / "index.html"


def to_html(text: str, anchors: bool = False) -> str:
    """`anchors`: headings get ids (the guide's links to a task of docs/tasks.md need them)."""
    extensions = ["tables", "footnotes", "sane_lists"] + (["toc"] if anchors else [])
    converter = markdown.Markdown(extensions=extensions, output_format="html")
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return converter.convert(text)


def _environment(project: Project) -> jinja2.Environment:
    return environment(project.docs_templates, html=True)


def build_site(project: Project, out: Path | None = None) -> Site:
    series = Series.load(project)
    directory = out or project.build / "site"
    with storing(project.docs_templates / STYLE):
        files = {"style.css": (project.docs_templates / STYLE).read_bytes()}
    page = _environment(project).get_template(PAGE)
    names = series.names

    guide = guide_pages(project)

    def write(rel: str, title: str, body_markdown: str, current=None, related=(), anchors=False) -> None:
        root = "../" if "/" in rel else ""
        html = page.render(title=title, body=to_html(body_markdown, anchors), root=root, releases=names,
                           current=current, related=related, guide=bool(guide), in_guide=rel.startswith("guide/"))
        files[rel] = mask(html).encode("utf-8")  # a last net: no credential reaches a page

    matrix = render_matrix(project, series, link="releases/{}.html")
    write("index.html", "Support matrix", matrix)
    for name in names:
        previous = series.predecessor(name)
        related = []
        images = previous is not None and has_image_facts(project, name) and \
            has_image_facts(project, previous.release.release)
        if previous is not None:
            related.append((f"What changed since {previous.release.release}", f"../diffs/{name}.html"))
            if images:
                related.append((f"What changed in the image since {previous.release.release}",
                                f"../images/{name}.html"))
            related.append((f"Release {previous.release.release}", f"{previous.release.release}.html"))
        write(f"releases/{name}.html", f"PyTorch Release {name}", render_notes(series, name, project),
              current=name, related=related)
        if previous is not None:
            old = previous.release.release
            write(f"diffs/{name}.html", f"Changes from {old} to {name}", render_diff(project, series, old, name),
                  current=name, related=[(f"Release notes of {name}", f"../releases/{name}.html"),
                                         (f"Release notes of {old}", f"../releases/{old}.html")])
        if images:
            old = previous.release.release
            write(f"images/{name}.html", f"Changes in the image from {old} to {name}",
                  render_image_diff(project, old, name), current=name,
                  related=[(f"What changed in the release from {old}", f"../diffs/{name}.html"),
                           (f"Release notes of {name}", f"../releases/{name}.html")])
    for entry in guide:
        write(entry.rel, entry.title, entry.markdown, anchors=True)
    make_dir(directory.parent)
    with storing(directory), release_lock(directory):
        # the screenshot belongs to the old site's pages: it goes with them; so does a folder of pages this
        # site no longer has (images/ once an SBOM is gone)
        replace_dir(directory, files, executable=set(),
                    owned={*(rel.split("/")[0] for rel in files), SCREENSHOT, *PAGE_FOLDERS})
    return Site(directory, tuple(directory / rel for rel in files if rel.endswith(".html")))
