"""`invoke TASK` in this checkout: every task of `ngcbuild` (src/ngcbuild/cli/tasks.py) and the
project's own tools, `invoke test`, `golden`, `bench` and `reliability` (dev/tasks.py), which only a
checkout has. A user's project needs only `from ngcbuild.cli.tasks import namespace`."""

from dev.tasks import namespace

__all__ = ["namespace"]
