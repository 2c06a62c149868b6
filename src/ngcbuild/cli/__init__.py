"""The commands: `ngcbuild TASK` (also `python -m ngcbuild`) and `invoke TASK` run the same tasks,
declared once in the task table (tasks.py; declare.py says its shape), from any folder of the
project, through the same program (program.py): usage errors exit 2 with one line, failures 1, an
interrupt 130 (SIGTERM 143)."""

from __future__ import annotations

import sys

from invoke import Program

from ngcbuild.core import console
from ngcbuild.core.interrupts import Interrupted, install, leave


def main(argv=None, namespace=None, binary: str = "ngcbuild") -> None:
    """`ngcbuild ARGS`: the product's tasks, or `namespace` (a checkout's, with its own tools)."""
    install()
    console.install()
    try:
        _run(argv, namespace, binary)
    except Interrupted as exc:
        leave(exc)
    except BrokenPipeError:  # help or a list piped into `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(argv, namespace, binary: str) -> None:
    try:
        from ngcbuild.cli.program import NgcbuildProgram

        if namespace is None:
            from ngcbuild.cli.tasks import namespace
    except KeyboardInterrupt as exc:  # an interrupt before install() took effect
        leave(exc)

    NgcbuildProgram(name="ngcbuild", binary=binary, namespace=namespace).run(argv)


def take_over_from_invoke(namespace=None) -> None:
    """Called by tasks.py, which invoke's own program imports: run the same command through our
    program instead, so that `invoke TASK` and `ngcbuild TASK` behave alike (usage errors, help,
    interrupts). Importing tasks.py for any other reason (a test, a tool) changes nothing."""
    frame = sys._getframe(1)
    while frame is not None:
        caller = frame.f_locals.get("self")
        if isinstance(caller, Program) and type(caller).__module__.startswith("invoke"):
            install()
            main(sys.argv, namespace, binary="invoke")
            raise SystemExit(0)
        frame = frame.f_back
