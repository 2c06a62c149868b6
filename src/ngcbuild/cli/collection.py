"""invoke's tasks, made from the task table: `invoke TASK` and `ngcbuild TASK` parse exactly what the
table declares.

invoke reads a task's arguments from its function's signature and its help from a dict that it
empties as it reads (invoke 2.2: `Task.arg_opts` pops each entry), so the second time anything asked
for the arguments, every help line was blank. A `DeclaredTask` makes its arguments from its
declaration each time it is asked, and holds no state that reading could consume.
"""

from __future__ import annotations

from invoke import Collection
from invoke import Task as InvokeTask
from invoke.exceptions import Exit
from invoke.parser import Argument

from ngcbuild.cli.declare import Option, Task
from ngcbuild.cli.guard import guarded


def _argument(option: Option) -> Argument:
    if option.switch:
        kind, default = bool, bool(option.default)
    elif option.repeatable:
        kind, default = list, []
    else:
        kind, default = str, option.default
    attr = option.keyword if option.keyword != option.name else None
    return Argument(names=(option.name,), kind=kind, default=default, help=option.help_line(),
                    positional=option.positional, attr_name=attr)


class DeclaredTask(InvokeTask):
    """An invoke task whose arguments are its declaration's (never introspected, never used up)."""

    def __init__(self, declared: Task) -> None:
        self.declared = declared

        def body(c, *args, **kwargs):
            missing = [o.flag for o in declared.options if o.required and kwargs.get(o.keyword) is None]
            if missing:
                raise Exit(f"ngcbuild: {declared.name}: missing {', '.join(missing)} "
                           f"(see `ngcbuild {declared.name} --help`)", code=2)
            refused = declared.refusal(kwargs)
            if refused:
                raise Exit(f"ngcbuild: {refused}", code=2)
            return guarded(declared.run)(*args, **kwargs)

        body.__name__ = declared.name.replace("-", "_")
        body.__doc__ = declared.summary
        super().__init__(body, name=declared.name, positional=[o.keyword for o in declared.options if o.positional],
                         auto_shortflags=False)

    def get_arguments(self, ignore_unknown_help=None) -> list[Argument]:
        arguments = [_argument(option) for option in self.declared.options]
        # positionals first, in their declared order (the parser fills them in that order)
        return sorted(arguments, key=lambda argument: not argument.positional)


def collection(tasks: tuple[Task, ...]) -> Collection:
    made = Collection()
    for task in tasks:
        made.add_task(DeclaredTask(task))
    return made
