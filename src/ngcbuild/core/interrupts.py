"""Ctrl-C and SIGTERM: one exception that every command turns into one line and exit 130 or 143.

The handlers are installed first thing by each entry point (`ngcbuild`, `python -m ngcbuild`,
tasks.py for `invoke`). The exception is not a KeyboardInterrupt, so invoke's own program, which
turns a KeyboardInterrupt into a silent exit 1, lets it through to our one place (`run_guarded`);
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


def interrupted() -> bool:
    """Whether a signal has come: work on other threads checks it before each step."""
    return bool(_first)


def install() -> None:
    for signum in _CODES:
        signal.signal(signum, _raise)


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
