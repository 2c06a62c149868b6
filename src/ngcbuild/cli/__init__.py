"""The commands: `ngcbuild TASK` (also `python -m ngcbuild`) and `invoke TASK` run the same tasks
(tasks.py), from any folder of the project, through the same program (`_Program`): usage errors exit
2 with one line, failures 1, an interrupt 130 (SIGTERM 143)."""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager

from invoke import Program
from invoke.exceptions import Exit, ParseError

from ngcbuild.core.interrupts import Interrupted, install, leave

# invoke's core options that are ours too; the others (--pty, --dry, --echo, --hide...) only make
# sense for a program that runs shell commands, which ngcbuild's tasks do not: not shown, refused
OUR_CORE_OPTIONS = ("help", "version", "list")


@contextmanager
def _usage_errors():
    try:
        yield
    except ParseError as exc:
        raise Exit(f"ngcbuild: {usage_message(str(exc))}", code=2) from None
    except ValueError as exc:  # invoke converting a flag's value (a number flag given a word)
        raise Exit(f"ngcbuild: an option's value is of the wrong kind ({exc}); see `ngcbuild TASK --help`",
                   code=2) from None


def usage_message(text: str) -> str:
    """invoke's parse error in the words of our flags: "<Argument: ca_bundle>" is `--ca-bundle`."""
    text = re.sub(r"^Flag '([\w-]+)' given more than once$", r"\1 was given more than once", text)
    text = re.sub(r"Flag <Argument: ([\w-]+)(?: \([^)]*\))?> needed value and was not given one!",
                  lambda m: f"--{m.group(1).replace('_', '-')} needs a value", text)
    return re.sub(r"No idea what '(.*)' is!", r"unknown task or option '\1' (see `ngcbuild --list`)", text)


class _Program(Program):
    """invoke's program with our exit status for usage errors (invoke's own is 1)."""

    def parse_core(self, argv):
        with _usage_errors():
            # refused before invoke acts on any of them (--print-completion-script prints and exits,
            # --debug logs): parse once to look, then let invoke parse again
            self.normalize_argv(argv)
            self.parse_core_args()
            for argument in self.core[0].args.values():
                if argument.name not in OUR_CORE_OPTIONS and argument.got_value:
                    raise ParseError(f"No idea what '--{argument.name}' is!")
            super().parse_core(argv)

    def parse_tasks(self):
        with _usage_errors():
            _refuse_repeated(self.core.unparsed, self.collection.to_contexts())
            super().parse_tasks()

    def print_help(self) -> None:
        print(f"Usage: {self.binary} [--help|--version|--list] TASK [--TASK-OPTIONS] ...")
        print("       ngcbuild TASK --help shows a task's options")
        print("")
        print("Options:")
        print("")
        self.print_columns([self.initial_context.help_for(f"--{name}") for name in OUR_CORE_OPTIONS])
        self.list_tasks()

    def parse_cleanup(self):
        with _usage_errors():
            super().parse_cleanup()

    def print_version(self) -> None:
        # read only when asked: importlib.metadata costs every other command a hundredth of a second
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("ngcbuild")
        except PackageNotFoundError:  # run from a checkout with PYTHONPATH=src
            installed = "unknown"
        print(f"{self.name} {installed}")


def _refuse_repeated(argv: list[str], contexts) -> None:
    """invoke takes a repeated option's second value for a task name ("No idea what 'x' is!"):
    say what happened instead. Options that collect a list (--label) may repeat."""
    by_name = {name: context for context in contexts for name in (context.name, *context.aliases)}
    context, seen, value_next = None, set(), False
    for token in argv:
        if value_next:
            value_next = False
        elif token.startswith("--") and context is not None:
            flag = token.split("=", 1)[0]
            argument = context.flags.get(flag) or context.inverse_flags.get(flag) and context.flags.get(
                context.inverse_flags[flag])
            if not argument:
                continue
            if argument.name in seen and argument.kind is not list:
                raise ParseError(f"Flag '{flag}' given more than once")
            seen.add(argument.name)
            value_next = "=" not in token and argument.takes_value and not argument.optional
        elif token in by_name:
            context, seen = by_name[token], set()


def main(argv=None, namespace=None) -> None:
    """`ngcbuild ARGS`: the product's tasks, or `namespace` (a checkout's, with its own tools)."""
    install()
    try:
        _run(argv, namespace)
    except Interrupted as exc:
        leave(exc)
    except BrokenPipeError:  # help or a list piped into `head`: stop quietly
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(argv, namespace=None) -> None:
    if namespace is None:
        try:
            from ngcbuild.cli.tasks import namespace
        except KeyboardInterrupt as exc:  # an interrupt before install() took effect
            leave(exc)

    _Program(name="ngcbuild", binary="ngcbuild", namespace=namespace).run(argv)


def take_over_from_invoke(namespace=None) -> None:
    """Called by tasks.py, which invoke's own program imports: run the same command through our
    program instead, so that `invoke TASK` and `ngcbuild TASK` behave alike (usage errors, help,
    interrupts). Importing tasks.py for any other reason (a test, a tool) changes nothing."""
    install()
    frame = sys._getframe(1)
    while frame is not None:
        caller = frame.f_locals.get("self")
        if isinstance(caller, Program) and not isinstance(caller, _Program):
            main(sys.argv, namespace)
            raise SystemExit(0)
        frame = frame.f_back
