"""Ctrl-C and SIGTERM: one exception that every command turns into one line and exit 130 or 143.

The handlers are installed first thing by each entry point (`ngcbuild`, `python -m ngcbuild`,
tasks.py for `invoke`). The exception is not a KeyboardInterrupt, so invoke's own program, which
turns a KeyboardInterrupt into a silent exit 1, lets it through to our one place (`run_guarded`);
cleanup code catches BaseException and so still removes what a command half wrote."""

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


def _raise(signum, frame):
    raise Interrupted(signum)


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
