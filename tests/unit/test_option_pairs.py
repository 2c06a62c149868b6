"""Options that mean something only with another (cli/declare.py: Option.needs, Option.excludes), walked
over the whole task table: each is refused alone, with one line naming what it needs, and accepted with it."""

from __future__ import annotations

import pytest

from ngcbuild.cli.declare import Option, Stage, Task, check_table
from ngcbuild.cli.tasks import STAGES, TASKS

PAIRED = [(task, option) for task in TASKS for option in task.options if option.needs or option.excludes]


def _given(option: Option):
    """A value the parser would fill in for `option` given on the command line."""
    if option.switch:
        return not option.default
    return ["x"] if option.repeatable else "given"


def _satisfying(task: Task, condition: str) -> dict:
    name, equals, values = condition.partition("=")
    other = next(o for o in task.options if o.name == name)
    return {other.keyword: values.split("|")[0] if equals else _given(other)}


def test_the_table_declares_the_pairs_the_issue_names():
    names = {(task.name, option.name) for task, option in PAIRED}
    assert {("smoke", "baseline"), ("smoke", "threshold"), ("smoke", "python"), ("smoke", "expect-from-env"),
            ("build", "force-platform"), ("rehearse", "job"), ("rehearse", "as"), ("bump", "as")} <= names


@pytest.mark.parametrize("task, option", PAIRED, ids=[f"{t.name}--{o.name}" for t, o in PAIRED])
def test_an_option_is_refused_without_what_it_needs_and_accepted_with_it(task, option):
    alone = {option.keyword: _given(option)}
    for condition in option.needs:
        name, equals, _ = condition.partition("=")
        other = next(o for o in task.options if o.name == name)
        wrong = {other.keyword: "none-of-those"} if equals else {}
        refusal = task.refusal({**alone, **wrong})
        assert refusal and option.flag in refusal and f"--{name}" in refusal and "\n" not in refusal
    together = dict(alone)
    for condition in option.needs:
        together.update(_satisfying(task, condition))
    assert task.refusal(together) is None or option.flag not in task.refusal(together)
    for condition in option.excludes:
        refusal = task.refusal({**together, **_satisfying(task, condition)})
        assert refusal and "cannot go with" in refusal and f"--{condition.partition('=')[0]}" in refusal


def test_nothing_given_is_never_refused():
    for task in TASKS:
        assert task.refusal({o.keyword: o.default for o in task.options}) is None, task.name


def test_a_condition_naming_no_option_stops_the_table():
    stage = Stage("s", "about")
    task = Task("t", stage, "one line", print, (Option("a", "help", needs=("nope",)),))
    with pytest.raises(ValueError, match="names no other option"):
        check_table((task,), (stage,))
    check_table(TASKS, STAGES)
