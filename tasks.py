"""`invoke TASK` runs the tasks of ngcbuild (the same as `ngcbuild TASK`); they live in
src/ngcbuild/cli/tasks.py."""

from ngcbuild.core.interrupts import Interrupted, install, leave

install()  # first: an interrupt from here on is one line, never a traceback

try:
    from ngcbuild.cli import take_over_from_invoke

    # invoke's own program is loading this file: ngcbuild's program runs the command in its place
    take_over_from_invoke()
except Interrupted as exc:
    leave(exc)

from ngcbuild.cli.tasks import namespace  # noqa: E402

__all__ = ["namespace"]
