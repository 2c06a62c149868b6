"""The documentation site in a real browser: headless Chromium loads it from 127.0.0.1.

Built from the project's real manifests. Without Chromium these tests skip, except with CI=true,
where they fail (`bash .ci/browser` installs it).
"""

import html
import json
import re
import struct

import pytest

from ngcbuild.core.project import Project
from ngcbuild.docs import browser
from ngcbuild.docs.site import build_site
from ngcbuild.manifest.series import Series

from ..conftest import REPO, fail_in_ci_else_skip

pytestmark = pytest.mark.browser
PROJECT = Project.at(REPO)
NOTES_HEADINGS = ["Contents of the PyTorch container", "Driver Requirements", "GPU Requirements",
                  "Key Features and Enhancements", "Announcements", "NVIDIA PyTorch Container Versions",
                  "Automatic Mixed Precision (AMP)"]

# A test-only page, next to the site: it shows a site page in a phone-wide frame and writes what it
# measured into its own DOM, which --dump-dom then prints.
HARNESS = """<!doctype html><meta charset="utf-8">
<iframe id="f" src="{page}" style="width:{width}px;height:800px;border:0"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {{
  var doc = this.contentDocument, root = doc.documentElement, table = doc.querySelector("table");
  var out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({{
    pageWidth: root.scrollWidth, frameWidth: root.clientWidth,
    tableOverflowX: table ? getComputedStyle(table).overflowX : null,
    tableWidth: table ? table.getBoundingClientRect().width : null,
    fontPx: parseFloat(getComputedStyle(doc.body).fontSize)
  }});
  document.body.appendChild(out);
}});
</script>"""


@pytest.fixture(scope="module")
def chromium():
    path = browser.find_chromium()
    if path is None:
        fail_in_ci_else_skip("chromium is not installed", "bash .ci/browser installs it")
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(PROJECT, out=tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="module")
def url(site):
    with browser.serve(site.directory) as base:
        yield base


def texts(dom: str, tag: str) -> list[str]:
    found = re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", dom, flags=re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", f)).strip() for f in found]


def test_index_shows_the_support_matrix_with_every_release(chromium, url):
    dom = browser.dump_dom(chromium, url + "index.html")
    assert texts(dom, "h1") == ["Support matrix"]
    headers = texts(dom, "th")
    assert headers[:3] == ["Release", "Status", "Ubuntu"] and headers[-1] == "Minimum compute capability"
    rows = re.findall(r"<tr>(.*?)</tr>", dom, flags=re.DOTALL)[1:]
    shown = [texts(row, "td")[0] for row in rows]
    assert shown == list(reversed(Series.load(PROJECT).names))
    assert 'href="releases/dev.html"' in dom


def test_every_release_page_shows_its_notes(chromium, url):
    for name in Series.load(PROJECT).names:
        dom = browser.dump_dom(chromium, f"{url}releases/{name}.html")
        assert texts(dom, "h1") == [f"PyTorch Release {name}"]
        assert texts(dom, "h2")[:len(NOTES_HEADINGS)] == NOTES_HEADINGS, name


def test_diff_pages_link_back(chromium, url, site):
    for page in sorted((site.directory / "diffs").glob("*.html")):
        dom = browser.dump_dom(chromium, f"{url}diffs/{page.name}")
        assert texts(dom, "h1")[0].startswith("What changed from ")
        assert f'href="../releases/{page.stem}.html"' in dom


def test_index_is_readable_on_a_phone(chromium, url, site):
    (site.directory / "_harness.html").write_text(HARNESS.format(page="index.html", width=390))
    dom = browser.dump_dom(chromium, url + "_harness.html")
    measured = re.search(r'<pre id="measured">(.*?)</pre>', dom, flags=re.DOTALL)
    assert measured, "the harness measured nothing: the page did not load in the frame"
    data = json.loads(html.unescape(measured[1]))
    assert data["frameWidth"] == 390
    assert data["pageWidth"] <= data["frameWidth"], f"the page scrolls sideways on a phone: {data}"
    assert data["tableOverflowX"] == "auto" and data["tableWidth"] <= 390  # the wide table scrolls itself
    assert data["fontPx"] >= 14


def test_screenshot_of_the_index(chromium, url, tmp_path):
    shot = browser.screenshot(chromium, url + "index.html", tmp_path / "index.png", window=browser.PHONE)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == browser.PHONE
    assert len(data) > 10_000  # a rendered page, not a blank frame


def test_the_guide_is_served_and_readable_on_a_phone(chromium, url, site):
    """docs/ in the site: the guide's index links every page, the task reference's wide tables scroll
    inside themselves, and a link to a task lands on its heading."""
    dom = browser.dump_dom(chromium, url + "guide/index.html")
    assert texts(dom, "h1") == ["ngcbuild guide"]
    for page in sorted((REPO / "docs").glob("*.md")):
        if page.name != "README.md":
            assert f'href="{page.stem}.html"' in dom, page.name
    tasks = browser.dump_dom(chromium, url + "guide/tasks.html")
    assert 'id="build"' in tasks and 'id="the-build-stage"' in tasks
    for page in ("guide/tasks.html", "guide/building.html"):
        (site.directory / "_harness.html").write_text(HARNESS.format(page=page, width=390))
        measured = re.search(r'<pre id="measured">(.*?)</pre>', browser.dump_dom(chromium, url + "_harness.html"),
                             flags=re.DOTALL)
        assert measured, f"the harness measured nothing: {page} did not load in the frame"
        data = json.loads(html.unescape(measured[1]))
        assert data["pageWidth"] <= data["frameWidth"] == 390, f"{page} scrolls sideways on a phone: {data}"
