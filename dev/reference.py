"""`invoke reference`: docs/tasks.md, the task reference, made from the task table (the product's
tasks and this checkout's tools). tests/unit/test_cli.py fails when the file is not what this makes
now, as the golden files do for the Dockerfiles."""

from __future__ import annotations

from pathlib import Path

from ngcbuild.cli.declare import Option, Task
from ngcbuild.core.outputs import write_file
from ngcbuild.core.project import Project

REFERENCE = Path("docs") / "tasks.md"
MADE_BY = ("_Made by `invoke reference` from the task table (`src/ngcbuild/cli/tasks.py`, `dev/tasks.py`): "
           "edit the table, not this page._")


def _cell(text: str) -> str:
    return _prose(text).replace("|", "\\|")


def _prose(text: str) -> str:
    """Text as Markdown shows it as typed: `<registry>` is not an HTML tag."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _option_row(option: Option) -> str:
    return (f"| `{_cell(option.spec)}` | {option.kind}{' (required)' if option.required else ''} | "
            f"{_cell(option.shown_default or '')} | {_cell(option.help)}"
            f"{f' ({_cell(option.conditions)})' if option.conditions else ''} |")


def _task(task: Task) -> list[str]:
    lines = [f"### {task.name}", "", _prose(task.summary) + ".", "", f"`{task.usage()}`", ""]
    facts = []
    if task.writes:
        facts.append("leaves " + ", ".join(f"`{w}`" if "/" in w and " " not in w else w for w in task.writes))
    if task.guide:
        facts.append(f"more in [{task.guide}]({task.guide})")
    if facts:
        sentence = "; ".join(facts)
        lines += [sentence[0].upper() + sentence[1:] + ".", ""]
    if task.options:
        lines += ["| option | type | default | what it does |", "|---|---|---|---|"]
        lines += [_option_row(option) for option in task.options]
        lines.append("")
    if task.renamed:
        old = ", ".join(f"`{r.old}` (now {r.now})" for r in task.renamed)
        lines += [f"Old spellings, refused with the new name (exit 2) until the next release: {old}.", ""]
    return lines


def render_reference(tasks: tuple[Task, ...]) -> str:
    stages = tuple(dict.fromkeys(task.stage for task in tasks))
    lines = ["# Task reference", "", MADE_BY, "",
             "Every task runs as `ngcbuild TASK` (also `python -m ngcbuild TASK`) or `invoke TASK`, from any folder "
             "of the project; `ngcbuild TASK --help` shows the same as this page. A usage error (a missing "
             "option, an unknown one, an old spelling) is one line and exit status 2. The stages are in the "
             "order of a release (README.md: the release runbook).", ""]
    lines += ["| stage | tasks |", "|---|---|"]
    lines += [f"| [{stage.name}](#the-{stage.name}-stage): {stage.about} | "
              + ", ".join(f"[{t.name}](#{t.name})" for t in tasks if t.stage == stage) + " |" for stage in stages]
    lines.append("")
    for stage in stages:
        lines += [f"## The {stage.name} stage", "", stage.about[0].upper() + stage.about[1:] + ".", ""]
        for task in tasks:
            if task.stage == stage:
                lines += _task(task)
    return "\n".join(lines).rstrip("\n") + "\n"


def write_reference(project: Project, tasks: tuple[Task, ...]) -> Path:
    return write_file(project.root / REFERENCE, render_reference(tasks), within=project.root, mode=0o644)
