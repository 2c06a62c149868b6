"""`invoke TASK` in this checkout: every task of `ngcbuild` (src/ngcbuild/cli/tasks.py) and the
project's own tools, `invoke test`, `golden`, `bench` and `reliability` (dev/tasks.py), which only a
checkout has. A user's project needs only the product's namespace (dev.USER_TASKS shows the file).
Through invoke's own program, ngcbuild's program runs the command instead, so `invoke TASK` and
`ngcbuild TASK` behave alike (usage errors, help, interrupts)."""

from ngcbuild.core.interrupts import Interrupted, install, leave

install()  # first: an interrupt from here on is one line, never a traceback

try:
    from dev.tasks import namespace

    from ngcbuild.cli import take_over_from_invoke

    take_over_from_invoke(namespace)
except Interrupted as exc:
    leave(exc)

__all__ = ["namespace"]
