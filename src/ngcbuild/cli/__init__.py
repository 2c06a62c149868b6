"""The commands: `ngcbuild TASK` (also `python -m ngcbuild`) and `invoke TASK` run the same tasks
(tasks.py), from any folder of the project. Usage errors exit 2, failures 1."""

from __future__ import annotations

import re
from contextlib import contextmanager

from invoke import Program
from invoke.exceptions import Exit, ParseError


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
    text = re.sub(r"Flag <Argument: ([\w-]+)(?: \([^)]*\))?> needed value and was not given one!",
                  lambda m: f"--{m.group(1).replace('_', '-')} needs a value", text)
    return re.sub(r"No idea what '(.*)' is!", r"unknown task or option '\1' (see `ngcbuild --list`)", text)


class _Program(Program):
    """invoke's program with our exit status for usage errors (invoke's own is 1)."""

    def parse_core(self, argv):
        with _usage_errors():
            super().parse_core(argv)

    def parse_tasks(self):
        with _usage_errors():
            super().parse_tasks()

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


def main(argv=None) -> None:
    try:
        _run(argv)
    except BrokenPipeError:  # help or a list piped into `head`: stop quietly
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(argv) -> None:
    from ngcbuild.cli.tasks import namespace

    _Program(name="ngcbuild", binary="ngcbuild", namespace=namespace).run(argv)
