"""The words of `ngcbuild --help`, `--list` and `ngcbuild TASK --help`, from the task table: the tasks
grouped by stage in the order of a release, each with its one line; a task's options, each with its
one line of help."""

from __future__ import annotations

import shutil
import textwrap

from ngcbuild.cli.declare import Stage, Task

INDENT = "  "
MAX_COLUMN = 30  # a longer option or task name pushes its own line's help along, not every line's


def _width() -> int:
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))


def _rows(pairs: list[tuple[str, str]], indent: str = INDENT) -> list[str]:
    """`name  text` lines, the texts in one column, wrapped to the terminal under their column."""
    column = min(max((len(name) for name, _ in pairs), default=0), MAX_COLUMN) + 2
    lines = []
    for name, text in pairs:
        head = f"{indent}{name}".ljust(len(indent) + column)
        if len(head) > len(indent) + column:
            head += " "
        wrapped = textwrap.wrap(text, max(20, _width() - len(head))) or [""]
        lines.append(head + wrapped[0])
        lines.extend(" " * len(head) + more for more in wrapped[1:])
    return lines


def task_list(tasks: tuple[Task, ...], stages: tuple[Stage, ...]) -> str:
    """Every task under its stage, stages in the order of a release."""
    pairs_of = {stage: [(t.name, t.summary) for t in tasks if t.stage == stage] for stage in stages}
    width = max(len(t.name) for t in tasks)
    lines = ["Tasks, in the order of a release (`ngcbuild TASK --help` shows a task's options):"]
    for stage in stages:
        if not pairs_of[stage]:
            continue
        lines += ["", f"{stage.name}: {stage.about}"]
        lines += _rows([(name.ljust(width), text) for name, text in pairs_of[stage]])
    return "\n".join(lines) + "\n"


def task_help(task: Task, program: str = "ngcbuild") -> str:
    lines = [f"Usage: {task.usage(program)}", "", task.summary, ""]
    facts = [f"Stage: {task.stage.name}."]
    if task.writes:
        facts.append(f"Leaves: {', '.join(task.writes)}.")
    if task.guide:
        facts.append(f"More: docs/{task.guide}.")
    lines += textwrap.wrap(" ".join(facts), _width()) + ["", "Options:"]
    lines += _rows([(option.spec, option.help_line()) for option in task.options]
                   + [("-h, --help", "this help")])
    return "\n".join(lines) + "\n"

