"""Ctrl-C and SIGTERM: one exception that every command turns into one line and exit 130 or 143.

The handlers are installed by the package's first instruction (ngcbuild/__init__.py) when the process
is one of our commands (`ngcbuild`, `python -m ngcbuild`, `invoke`, `python -m ngcbuild.smoke.host`:
`install_if_a_command`), and again first thing by each entry point (cli/__init__.py, tasks.py): a
signal in the first milliseconds, while the commands import what they need, is one line too. A
program that only imports ngcbuild (a test run, a user's script) keeps its own handlers. An interrupt
that comes before a command's own handling (a console script still importing) is one line too
(`sys.excepthook`). The exception is not a KeyboardInterrupt, so invoke's own program, which turns a
KeyboardInterrupt into a silent exit 1, lets it through to our one place (`run_guarded`);
cleanup code catches BaseException and so still removes what a command half wrote.

A second signal while that cleanup runs does not cut it short (it is noted, not raised): a user who
presses Ctrl-C twice still gets the registry tags, containers and temporary files put back. A third
ends the process at once, with the first signal's status, for a cleanup that cannot finish."""

# the built-in module, not `signal` (which imports enum): the handlers must be in place within a
# millisecond of the interpreter handing over to us
import _signal as signal
import sys

_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Interrupted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = _CODES.get(signum, 128 + signum)
        self.message = "ngcbuild: interrupted" if signum == signal.SIGINT else "ngcbuild: terminated"


_first: list[int] = []  # the signal being handled, once one came
FORCE_AFTER = 3  # signals in all: the third ends the process without waiting for the cleanup


def _raise(signum, frame):
    if _first:
        _first.append(signum)
        if len(_first) >= FORCE_AFTER:
            import os

            os._exit(_CODES.get(_first[0], 128 + _first[0]))
        return
    _first.append(signum)
    raise Interrupted(signum)


def within(exc: BaseException | None) -> Interrupted | None:
    """The interrupt an exception stands for: itself, or one Python wrapped in another exception on its
    way up (a signal that lands in a class body's `__set_name__` while a module imports is a RuntimeError
    caused by it), or any failure after a signal was raised; None when it is another failure."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Interrupted):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    if _first:
        # a signal came and was raised, and a failure took its place without keeping it in the chain
        # (pydantic-core turns an exception raised while it builds a schema into a SchemaError that
        # holds only its text): it is the interrupt's doing
        return Interrupted(_first[0])
    return None


def interrupted() -> bool:
    """Whether a signal has come: work on other threads checks it before each step."""
    return bool(_first)


def install() -> None:
    for signum in _CODES:
        signal.signal(signum, _raise)
    if sys.excepthook is not _uncaught:
        _previous_hook[:] = [sys.excepthook]
        sys.excepthook = _uncaught
    if sys.unraisablehook is not _unraisable:
        import _thread

        _main_thread[:] = [_thread.get_ident()]  # signal.signal above: this is the main thread
        _previous_unraisable[:] = [sys.unraisablehook]
        sys.unraisablehook = _unraisable


_previous_hook: list = []
_previous_unraisable: list = []
_main_thread: list[int] = []


def _unraisable(unraisable) -> None:
    """An interrupt raised where Python ignores exceptions (a weakref's callback, such as the import
    system's module locks run while a command imports; a __del__) would be printed as "Exception
    ignored" and lost: the signal is sent again instead, from another thread once this code has
    returned (a signal raised here would be handled, and ignored, here), to land in the code that
    runs next."""
    if isinstance(unraisable.exc_value, Interrupted) and _first and _main_thread:
        import _thread

        signum = _first[0]
        del _first[:]
        _thread.start_new_thread(_send_again, (signum,))
        return
    (_previous_unraisable[0] if _previous_unraisable else sys.__unraisablehook__)(unraisable)


def _send_again(signum: int) -> None:
    import time

    time.sleep(0.01)
    signal.pthread_kill(_main_thread[0], signum)


def _uncaught(kind, exc, tb) -> None:
    """An interrupt that no command caught (it came while a console script was still importing the
    command, before `main` runs): one line and its status, not a traceback."""
    exc = within(exc) or exc
    if not isinstance(exc, Interrupted):
        (_previous_hook[0] if _previous_hook else sys.__excepthook__)(kind, exc, tb)
        return
    import os

    try:
        sys.stderr.write(exc.message + "\n")
        sys.stderr.flush()
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(exc.exit_code)


COMMANDS = ("ngcbuild", "invoke", "inv")  # the programs (console scripts, `python -m`) that are ours to run
_VALUED_OPTIONS = ("-X", "-W", "--check-hash-based-pycs")  # the interpreter's options that take a value


def install_if_a_command() -> bool:
    """install(), when this process runs one of our commands (ngcbuild's package or invoke, as a console
    script or with `python -m`); nothing for a program that only imports ngcbuild. Whether it did."""
    if _command_of(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]) is None:
        return False
    install()
    return True


def settle(held: list[int], saved: dict) -> None:
    """The package's first instructions held the signals that came while this module was imported
    (`held`, in place of the handlers in `saved`): a command gets its handlers and the first signal
    held is raised as an interrupt now; any other program gets its own handlers back, and the signal
    held is sent again to land in them (a KeyboardInterrupt, or the default action, as it would have)."""
    if install_if_a_command():
        if held:
            _raise(held[0], None)
        return
    for signum, handler in saved.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    if held:
        signal.raise_signal(held[0])


def _command_of(argv: list) -> str | None:
    """What `argv` (the interpreter's own, sys.orig_argv) runs when it is ours: the module of `-m` or
    the script's name; None for anything else (`-c`, pytest, a user's script)."""
    words = iter(argv[1:])
    for word in words:
        if word in _VALUED_OPTIONS:
            next(words, None)
        elif word == "-m":
            module = next(words, "")
            return module if module.split(".")[0] in ("ngcbuild", "invoke") else None
        elif word.startswith("-m"):
            module = word[2:]
            return module if module.split(".")[0] in ("ngcbuild", "invoke") else None
        elif word == "-c" or word.startswith("-c"):
            return None
        elif not word.startswith("-") or word == "-":
            name = word.replace("\\", "/").rsplit("/", 1)[-1]
            return name if name in COMMANDS else None
    return None


def leave(exc: BaseException) -> None:
    """Exit the way an interrupt must: one line, its status, no traceback (even if a second
    signal comes while the line is written)."""
    for signum in _CODES:
        signal.signal(signum, signal.SIG_IGN)
    code = getattr(exc, "exit_code", 130)
    try:
        sys.stderr.write(getattr(exc, "message", "ngcbuild: interrupted") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    raise SystemExit(code)
