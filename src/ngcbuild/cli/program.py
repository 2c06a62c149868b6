"""The program behind `ngcbuild` and `invoke` (cli/__init__.py hands both to it): invoke's parser with
our exit statuses (usage errors 2, with one line), our help from the task table, and what invoke's
parser cannot say itself: a task's `--help` wherever it stands (`diff --help` asks for no
positionals), an old spelling of an option, an option given twice."""

from __future__ import annotations

import re
from contextlib import contextmanager

from invoke import Program
from invoke.exceptions import Exit, ParseError

from ngcbuild.cli.collection import DeclaredTask
from ngcbuild.cli.declare import Task
from ngcbuild.cli.helptext import task_help, task_list

# invoke's core options that are ours too; the others (--pty, --dry, --echo, --hide...) only make
# sense for a program that runs shell commands, which ngcbuild's tasks do not: not shown, refused
OUR_CORE_OPTIONS = ("help", "version", "list")
HELP = ("--help", "-h")


def usage_message(text: str, flags: dict[str, str] | None = None) -> str:
    """invoke's parse error in the words of our flags: "<Argument: ca_bundle>" is `--ca-bundle`, and
    "<Argument: base>" is the flag whose keyword that is in the task (`flags`: keyword -> flag)."""
    flags = flags or {}
    text = re.sub(r"^Flag '([\w-]+)' given more than once$", r"\1 was given more than once", text)
    text = re.sub(r"Flag <Argument: ([\w-]+)(?: \([^)]*\))?> needed value and was not given one!",
                  lambda m: f"{flags.get(m.group(1)) or '--' + m.group(1).replace('_', '-')} needs a value", text)
    text = re.sub(r"^'([\w-]+)' did not receive required positional arguments: (.*)$",
                  lambda m: f"{m.group(1)}: missing {m.group(2).replace(chr(39), '').upper()} "
                            f"(see `ngcbuild {m.group(1)} --help`)", text)
    return re.sub(r"No idea what '(.*)' is!", r"unknown task or option '\1' (see `ngcbuild --list`)", text)


class NgcbuildProgram(Program):
    """invoke's program with our exit status for usage errors (invoke's own is 1) and our help."""

    @property
    def declared(self) -> tuple[Task, ...]:
        return tuple(task.declared for task in self.collection.tasks.values() if isinstance(task, DeclaredTask))

    @contextmanager
    def _usage_errors(self):
        try:
            yield
        except ParseError as exc:
            task = self._declared_task(exc.context.name if exc.context is not None else None)
            flags = {option.keyword: option.flag for option in task.options} if task else {}
            raise Exit(f"ngcbuild: {usage_message(str(exc), flags)}", code=2) from None
        except ValueError as exc:  # invoke converting a flag's value (a number flag given a word)
            raise Exit(f"ngcbuild: an option's value is of the wrong kind ({exc}); see `ngcbuild TASK --help`",
                       code=2) from None

    def _declared_task(self, name) -> Task | None:
        found = self.collection.tasks.get(name) if name else None
        return found.declared if isinstance(found, DeclaredTask) else None

    def parse_core(self, argv):
        with self._usage_errors():
            # refused before invoke acts on any of them (--print-completion-script prints and exits,
            # --debug logs): parse once to look, then let invoke parse again
            self.normalize_argv(argv)
            self.parse_core_args()
            for argument in self.core[0].args.values():
                if argument.name not in OUR_CORE_OPTIONS and argument.got_value:
                    raise ParseError(f"No idea what '--{argument.name}' is!")
            super().parse_core(argv)

    def parse_tasks(self):
        with self._usage_errors():
            self._look_ahead(self.core.unparsed)
            super().parse_tasks()

    def parse_cleanup(self):
        with self._usage_errors():
            super().parse_cleanup()

    def print_help(self) -> None:
        print(f"Usage: {self.binary} [--help|--version|--list] TASK [--TASK-OPTIONS] ...")
        print(f"       {self.binary} TASK --help shows a task's options; "
              f"`{'ngcbuild' if self.binary == 'invoke' else 'invoke'} TASK` runs the same tasks")
        print("")
        print("Options:")
        print("")
        self.print_columns([self.initial_context.help_for(f"--{name}") for name in OUR_CORE_OPTIONS])
        self.list_tasks()

    def list_tasks(self) -> None:
        tasks = self.declared
        print(task_list(tasks, tuple(dict.fromkeys(task.stage for task in tasks))), end="")

    def print_task_help(self, name: str) -> None:
        task = self._declared_task(name)
        if task is None:  # a task a user's tasks.py added with invoke's @task
            super().print_task_help(name)
            return
        print(task_help(task, self.binary), end="")

    def print_version(self) -> None:
        # read only when asked: importlib.metadata costs every other command a hundredth of a second
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("ngcbuild")
        except PackageNotFoundError:  # run from a checkout with PYTHONPATH=src
            installed = "unknown"
        print(f"{self.name} {installed}")

    def _look_ahead(self, argv: list[str]) -> None:
        """What invoke's parser would get wrong, in the order typed: a task's --help (even where it
        would take it for a positional or a value), an old spelling (one line naming the new one,
        exit 2), a repeated option (invoke takes its second value for a task name). Options that
        collect a list (--label) may repeat."""
        contexts = {name: context for context in self.collection.to_contexts()
                    for name in (context.name, *context.aliases)}
        task, context, seen, value_next, positionals = None, None, set(), False, 0
        for token in argv:
            flag = token.split("=", 1)[0] if token.startswith("-") else None
            if task is not None and flag in HELP:
                self.print_task_help(task.name)
                raise Exit
            renamed = task.old_spelling(flag) if task is not None and flag else None
            if renamed:
                raise Exit(f"ngcbuild: {renamed.message(task.name)}", code=2)
            if value_next:
                value_next = False
            elif flag and context is not None:
                argument = context.flags.get(flag) or context.inverse_flags.get(flag) and context.flags.get(
                    context.inverse_flags[flag])
                if not argument:
                    continue
                if argument.name in seen and argument.kind is not list:
                    raise ParseError(f"Flag '{flag}' given more than once")
                seen.add(argument.name)
                value_next = "=" not in token and argument.takes_value and not argument.optional
            elif flag is None and positionals:
                positionals -= 1
            elif token in contexts:
                context, seen = contexts[token], set()
                task = self._declared_task(context.name)
                positionals = len(context.positional_args)
