"""`invoke TASK` runs the tasks of ngcbuild (the same as `ngcbuild TASK`); they live in
src/ngcbuild/cli/tasks.py."""

from ngcbuild.cli.tasks import namespace

__all__ = ["namespace"]
