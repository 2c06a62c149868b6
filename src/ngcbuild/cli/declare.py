"""The shape of the task table (cli/tasks.py, and dev/tasks.py in a checkout): a task is declared
once, with its stage, its one line, the function it calls and each option's type, default and help.
invoke's tasks (cli/collection.py), the help (cli/helptext.py) and the reference in docs/tasks.md
(dev/reference.py) are made from these declarations; nothing else declares a task or an option."""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Stage:
    """A group of tasks in the order of a release: `ngcbuild --help` lists them so."""

    name: str
    about: str  # one line: what the stage's tasks are for


@dataclass(frozen=True)
class Option:
    """One option of a task: `--NAME VALUE`, a switch `--NAME` (value None), or a positional NAME."""

    name: str  # the flag without its dashes (`base-image`), or a positional's name (`old`)
    help: str  # one line, without the default (shown from `default` or `default_text`); a switch that is on
    # unless turned off (default True) is shown as `--no-NAME`, and its help says what that does
    value: str | None = "TEXT"  # the value's placeholder (R, HOST[:PORT], FILE...); None: a switch
    default: object = None  # given to the function when the option is absent
    default_text: str | None = None  # a default the function works out (`$DOCKER_HOST`), in words
    required: bool = False
    repeatable: bool = False  # each use adds one value to a list
    positional: bool = False
    dest: str | None = None  # the function's keyword, where it is not the name (`from` is `from_`)
    # What the option means something only with: other options by name (`perf`: --baseline only with
    # --perf), or an option's value (`workflow=ci`, `workflow=release|bump`, its default counting); and
    # what it means nothing with (`host`). Given otherwise, it is refused before the task runs (one
    # line, exit 2), not silently ignored.
    needs: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    @property
    def keyword(self) -> str:
        """The keyword argument of the task's function that receives the value."""
        return self.dest or self.name.replace("-", "_")

    @property
    def switch(self) -> bool:
        return self.value is None

    @property
    def flag(self) -> str:
        """How a user types it: `--release`, `-k` (one letter), `--no-screenshot` (a switch that is on
        unless turned off), `OLD` (a positional)."""
        if self.positional:
            return self.name.upper()
        if self.switch and self.default is True:
            return f"--no-{self.name}"
        return ("-" if len(self.name) == 1 else "--") + self.name

    @property
    def spec(self) -> str:
        """The flag with its value: `--release R`, `--label K=V` (repeatable: `...`)."""
        if self.positional or self.switch:
            return self.flag
        return f"{self.flag} {self.value}" + (" ..." if self.repeatable else "")

    @property
    def shown_default(self) -> str | None:
        """The default in words, or None when there is none worth saying."""
        if self.default_text:
            return self.default_text
        if self.switch:  # off unless given; one on by default is shown as its --no- flag
            return None
        return None if self.default is None else str(self.default)

    def given(self, value) -> bool:
        """Whether `value` (what the parser filled in for this option) means the user gave it: a switch
        turned the other way, a list not empty, a value other than the default."""
        if self.switch:
            return bool(value) != bool(self.default)
        if self.repeatable:
            return bool(value)
        return value is not None and value != self.default

    @property
    def kind(self) -> str:
        """The option's type, as the reference names it."""
        if self.positional:
            return "argument"
        if self.switch:
            return "switch"
        return "list" if self.repeatable else "value"

    @property
    def conditions(self) -> str:
        """`needs` and `excludes` in words: "only with --perf; not with --host" ("" for none)."""
        parts = (["only with " + " and ".join(_condition_words(n) for n in self.needs)] if self.needs else []) + \
            (["not with " + " or ".join(_condition_words(n) for n in self.excludes)] if self.excludes else [])
        return "; ".join(parts)

    def help_line(self) -> str:
        """The one line of help: what it is, then its default or that it is required."""
        extras = []
        if self.required:
            extras.append("required")
        if self.conditions:
            extras.append(self.conditions)
        if self.repeatable:
            extras.append("repeatable")
        if self.shown_default:
            extras.append(f"default: {self.shown_default}")
        return self.help + (f" ({'; '.join(extras)})" if extras else "")


def _condition_words(condition: str) -> str:
    """`perf` is --perf; `workflow=release|bump` is --workflow release or bump."""
    name, equals, values = condition.partition("=")
    return f"--{name} {values.replace('|', ' or ')}" if equals else f"--{name}"


@dataclass(frozen=True)
class Renamed:
    """An old spelling of an option, answered with its new one (exit 2) for one release cycle."""

    old: str  # as it was typed: `--base`
    now: str  # what to type instead: `--base-image`, or in words (`its own task: ...`)

    def message(self, task: str) -> str:
        """One line: `build --base is now --base-image (renamed; see `ngcbuild build --help`)`."""
        if self.now.startswith("--"):
            return f"{task} {self.old} is now {self.now} (renamed; see `ngcbuild {task} --help`)"
        return f"{task} {self.old} is now {self.now}"


@dataclass(frozen=True)
class Task:
    name: str  # `ngcbuild NAME`
    stage: Stage
    summary: str  # one line: what it does
    run: Callable  # the function it calls, with each option as a keyword (Option.keyword)
    options: tuple[Option, ...] = ()
    writes: tuple[str, ...] = ()  # what it leaves behind (build/R/record.json), for the help and the runbook
    guide: str | None = None  # the page of docs/ that explains it in depth
    renamed: tuple[Renamed, ...] = ()

    @property
    def required(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.required or o.positional)

    def usage(self, program: str = "ngcbuild") -> str:
        """`ngcbuild build --release R [OPTIONS]`, `ngcbuild diff OLD NEW [OPTIONS]`."""
        shown = " ".join(o.spec for o in self.required)
        more = " [OPTIONS]" if len(self.required) < len(self.options) else ""
        return " ".join(part for part in (program, self.name, shown) if part) + more

    def old_spelling(self, flag: str) -> Renamed | None:
        return next((r for r in self.renamed if r.old == flag), None)

    def refusal(self, given: dict) -> str | None:
        """Why the options `given` (keyword -> value, as the parser filled them) cannot go together: the
        first option given without what it `needs`, or with what it `excludes`; None when they can."""
        options = {o.name: o for o in self.options}
        for option in self.options:
            if not option.given(given.get(option.keyword)):
                continue
            for condition in option.needs:
                if not _holds(condition, options, given):
                    return (f"{self.name} {option.flag} means something only with {_condition_words(condition)} "
                            f"(see `ngcbuild {self.name} --help`)")
            for condition in option.excludes:
                if _holds(condition, options, given):
                    return f"{self.name} {option.flag} cannot go with {_condition_words(condition)}"
        return None


def check_table(tasks: tuple[Task, ...], stages: tuple[Stage, ...]) -> None:
    """A mistake in the table stops the program at once, naming it (a test imports every table)."""
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"task table: a task is declared twice: {sorted(n for n in names if names.count(n) > 1)}")
    for task in tasks:
        where = f"task table: {task.name}"
        if task.stage not in stages:
            raise ValueError(f"{where}: stage {task.stage.name!r} is not among {[s.name for s in stages]}")
        if not task.summary or "\n" in task.summary:
            raise ValueError(f"{where}: the summary must be one line")
        flags = [o.name for o in task.options]
        if len(set(flags)) != len(flags):
            raise ValueError(f"{where}: an option is declared twice")
        for option in task.options:
            if not option.help or "\n" in option.help:
                raise ValueError(f"{where} --{option.name}: the help must be one line")
            if not option.keyword.isidentifier() or keyword.iskeyword(option.keyword):
                raise ValueError(f"{where} --{option.name}: {option.keyword!r} cannot be a keyword argument")
            if option.switch and option.repeatable:
                raise ValueError(f"{where} --{option.name}: a switch cannot repeat")
        for option in task.options:
            for condition in (*option.needs, *option.excludes):
                name, equals, values = condition.partition("=")
                other = next((o for o in task.options if o.name == name), None)
                if other is None or other is option or (equals and (other.switch or not values)):
                    raise ValueError(f"{where} --{option.name}: {condition!r} names no other option of the task "
                                     "(or a value of a switch)")
        for old in task.renamed:
            if old.old.lstrip("-") in flags:
                raise ValueError(f"{where}: {old.old} is both an option and an old spelling")


def _holds(condition: str, options: dict, given: dict) -> bool:
    """`perf`: --perf was given; `workflow=release|bump`: --workflow's value (its default when not
    given) is one of those."""
    name, equals, values = condition.partition("=")
    option = options[name]
    value = given.get(option.keyword)
    if not equals:
        return option.given(value)
    return str(value if value is not None else option.default) in values.split("|")
