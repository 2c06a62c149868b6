"""README.md is a front page with a runbook, and what it and docs/ say is true: the task reference is
the one the task table makes now, the README's "adding a release" works as printed, the runbook names
the tasks in the order they run with what each leaves, and every command the docs, the workflows and
the CI scripts spell uses the options of today (an old spelling is refused, so a stale one would break)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from dev.reference import REFERENCE, render_reference
from dev.tasks import CHECKOUT_TASKS

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
TASKS = {task.name: task for task in CHECKOUT_TASKS}


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def test_the_task_reference_is_the_one_the_table_makes():
    """Like the golden files: `invoke reference` rewrites docs/tasks.md; review it with git diff."""
    assert (REPO / REFERENCE).read_text() == render_reference(CHECKOUT_TASKS), \
        "docs/tasks.md is stale: run `invoke reference` and review `git diff docs/`"


def test_the_architecture_is_a_map():
    """ARCHITECTURE.md is read in one pass: a paragraph per package, the flow of a release and of a derived
    release, and the one home of what is asked most; the reference detail is docs/internals.md."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    assert len(text.encode()) <= 12 * 1024, f"ARCHITECTURE.md is {len(text.encode())} bytes; the detail belongs in " \
                                            "docs/internals.md"
    packages = sorted(p.name for p in (REPO / "src" / "ngcbuild").iterdir() if (p / "__init__.py").is_file())
    assert all(f"- **`{name}/`**" in text for name in packages), packages
    for home in ("/etc/pip/constraint.txt", "registry/auth.py", "workspace/sections.smoke_verdict",
                 "src/ngcbuild/resolver/", "## A derived release through the packages"):
        assert home in text, home
    assert "docs/internals.md" in text and (REPO / "docs" / "internals.md").is_file()


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.encode()) <= 15 * 1024, f"README.md is {len(text.encode())} bytes; the rest belongs in docs/"
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings == ["Prerequisites", "The two commands", "The release runbook", "Adding a release",
                        "Build your team's image on a release", "More"]
    two = _section(text, "The two commands")
    assert "invoke build --release dev" in two and "\n   invoke test\n" in two  # .ci/run runs command 2


def test_the_release_runbook_runs_the_tasks_in_order_and_says_what_each_leaves():
    rows = re.findall(r"^\| (\d+)\. [^|]+ \| `([^`]+)` \| ([^|]+) \|$", _section(README.read_text(), "The release runbook"),
                      re.MULTILINE)
    assert [int(n) for n, _, _ in rows] == list(range(1, len(rows) + 1))
    order = [shlex.split(command)[1] for _, command, _ in rows]
    assert order == ["changed", "verify", "build", "smoke", "sbom", "audit", "push", "attest", "publish", "promote",
                     "notes", "docs"]
    stages = [TASKS[name].stage.name for name in order]
    assert stages == sorted(stages, key=[s.name for s in dict.fromkeys(t.stage for t in CHECKOUT_TASKS)].index)
    for _, command, leaves in rows:
        words = shlex.split(command)
        task = TASKS[words[1]]
        _check_options(task, words[2:], command)
        for written in task.writes:  # what the table says the task leaves in build/R/ is in the row
            if " with --" in written:
                continue  # left only when an option the runbook does not give asks for it
            if written.startswith("build/R/") and written != "build/R/":
                assert written.removeprefix("build/R/").split(" ")[0] in leaves, (command, written)
            elif written.startswith("record.json: "):
                assert written in leaves, (command, written)


def _check_options(task, words, where) -> None:
    given = [w.split("=")[0] for w in words if re.match(r"-{1,2}[A-Za-z]", w)]
    flags = {option.flag for option in task.options} | {"--help", "-h"}
    old = [flag for flag in given if task.old_spelling(flag)]
    assert not old, f"{where}: {old} is an old spelling of `{task.name}`"
    unknown = [flag for flag in given if flag not in flags and flag.lstrip("-") not in
               {o.name for o in task.options if o.switch}]
    assert not unknown, f"{where}: `{task.name}` has no {unknown}"


COMMAND = re.compile(r"(?<![\w/.-])(?:ngcbuild|invoke) ([a-z][a-z-]*)((?:[ \t]+(?:\\\n[ \t]*)?[^\s`|;&)]+)*)")


def _spelled_commands():
    """(file, command) for every `ngcbuild TASK ...` / `invoke TASK ...` the project spells for people
    or machines to run: README, docs/, the other pages at the root, the workflows, the CI scripts."""
    files = [README, *(REPO / name for name in ("ARCHITECTURE.md", "SCALING.md", "BENCHMARKS.md", "RELIABILITY.md")),
             *sorted(DOCS.glob("*.md")),
             *sorted((REPO / ".github" / "workflows").glob("*.yml")),
             *sorted(p for p in (REPO / ".ci").iterdir() if p.is_file() and p.suffix in ("", ".sh"))]
    for path in files:
        for match in COMMAND.finditer(path.read_text()):
            if match.group(1) in TASKS:
                yield path.relative_to(REPO), match.group(1), match.group(2)


def test_every_command_the_project_spells_uses_todays_options():
    found = list(_spelled_commands())
    assert len(found) > 60  # the scan sees the docs, the workflows and .ci/
    for path, name, tail in found:
        words = [w.strip("[](),.'\"") for w in tail.replace("\\\n", " ").split()]
        _check_options(TASKS[name], [w for w in words if w.startswith("-")], f"{path}: {name}{tail}")


def test_workflows_and_ci_scripts_run_no_removed_task():
    """`matrix --changed` is the task `changed`: the release plan and .ci/arm64 call it so."""
    for path in [*(REPO / ".github" / "workflows").glob("*.yml"), REPO / ".ci" / "arm64"]:
        assert "matrix --json --changed" not in path.read_text(), path
    assert "invoke changed " in (REPO / ".github" / "workflows" / "release.yml").read_text()


def test_every_link_of_the_readme_and_the_guide_leads_somewhere():
    for path in [README, *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            assert linked.exists(), f"{path.relative_to(REPO)}: {target} leads nowhere"
            if anchor and linked.suffix == ".md":
                slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.MULTILINE)}
                assert anchor in slugs, f"{path.relative_to(REPO)}: no heading #{anchor} in {file or path.name}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and Python-Markdown's toc make it (for the headings we write)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_task_has_its_page_in_the_guide():
    for task in CHECKOUT_TASKS:
        assert task.guide and (DOCS / task.guide).is_file(), task.name
        assert f"`{task.name}`" in (DOCS / task.guide).read_text() or task.name in (DOCS / task.guide).read_text()


# --- "Adding a release", as printed ---------------------------------------------------------------

RUNNABLE = {"cp", "sed", "ngcbuild"}  # what the README's steps may run here (checked before running)


def test_the_readmes_new_release_renders_as_printed(scratch, tmp_path):
    section = _section(README.read_text(), "Adding a release")
    manifest = re.search(r"`manifests/(\S+)\.yaml`", section).group(1)
    yaml_text = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    steps = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    parent = re.search(r"^extends: '([^']+)'", yaml_text, re.MULTILINE).group(1)
    commands = [shlex.split(line) for line in steps.splitlines() if line.strip()]
    assert all(words[0] in RUNNABLE for words in commands), steps
    assert "inherit:" in yaml_text  # a release extending NVIDIA's restates or inherits its text

    scratch.copy_release(parent)
    scratch.manifest(manifest, yaml_text)
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "ngcbuild").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ngcbuild "$@"\n')
    (shim / "ngcbuild").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", steps], cwd=scratch.root, env=env, text=True,
                            capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr

    dockerfile = (scratch.root / "build" / manifest / "Dockerfile").read_text()
    base = re.search(r"^  image: (\S+)$", yaml_text, re.MULTILINE).group(1)
    assert f"FROM {base} AS runtime" in dockerfile
    moved = re.search(r"s/\^(\S+?)==\S+?\$/(\S+?)==(\S+?)/", steps)
    assert f"{moved.group(2)}=={moved.group(3)}" in dockerfile  # the pin that moved, as the constraints say
    notes = (scratch.root / "build" / manifest / "release-notes.md").read_text()
    assert manifest in notes and f"Release {parent} is based on" not in notes


def test_the_readme_example_fails_without_its_constraints(scratch):
    """The example's own check: without the pin that moved, its DALI disagrees with the constraints."""
    section = _section(README.read_text(), "Adding a release")
    yaml_text = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    scratch.copy_release("25.12")
    scratch.manifest("26.01", yaml_text)
    scratch.constraints("26.01", (REPO / "constraints" / "25.12.txt").read_text())
    result = scratch.ngcbuild("render", "--release", "26.01")
    assert result.returncode == 2 and "dali" in result.stderr, result.stderr
    assert not (Path(scratch.root) / "build" / "26.01" / "Dockerfile").exists()


# --- the guide in the site (invoke docs) ----------------------------------------------------------

def test_the_site_serves_the_guide_with_its_links_kept_and_no_link_leading_nowhere(scratch):
    from ngcbuild.core.project import Project
    from ngcbuild.docs.site import build_site

    scratch.copy_release("dev")
    (scratch.root / "docs").mkdir()
    (scratch.root / "docs" / "README.md").write_text("# The guide\n\nSee [the tasks](tasks.md#the-build-stage) and "
                                                   "[the map](../ARCHITECTURE.md).\n")
    (scratch.root / "docs" / "tasks.md").write_text("# Tasks\n\n## The build stage\n\n<b>raw</b> text\n")
    site = build_site(Project.at(scratch.root))
    pages = {p.relative_to(site.directory).as_posix() for p in site.pages}
    assert {"guide/index.html", "guide/tasks.html", "index.html"} <= pages
    index = (site.directory / "guide" / "index.html").read_text()
    assert '<a href="tasks.html#the-build-stage">the tasks</a>' in index
    assert "ARCHITECTURE.md" in index and 'href="../ARCHITECTURE.md"' not in index  # not in the site: text
    assert "<title>The guide · ngcbuild</title>" in index and 'href="../guide/index.html" aria-current="page"' in index
    tasks = (site.directory / "guide" / "tasks.html").read_text()
    assert 'id="the-build-stage"' in tasks and "<b>" not in tasks  # raw HTML stays text, as in the notes
    assert 'href="guide/index.html"' in (site.directory / "index.html").read_text()


def test_the_projects_own_site_has_a_page_per_guide_page():
    from ngcbuild.core.project import Project
    from ngcbuild.docs.guide import guide_pages

    pages = guide_pages(Project.at(REPO))
    assert sorted(p.rel for p in pages) == sorted(
        "guide/index.html" if p.name == "README.md" else f"guide/{p.stem}.html" for p in DOCS.glob("*.md"))
    for page in pages:  # every link between the guide's pages points at a page of the site
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", page.markdown):
            assert target in {p.rel.removeprefix("guide/") for p in pages}, (page.rel, target)
