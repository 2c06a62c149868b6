"""ngcbuild: NGC-style PyTorch container images from one manifest per release."""

# The package's first instructions, before anything is imported that takes time to find or compile: a
# signal is held until core/interrupts.py is in (its import compiles it when no .pyc is there yet), then
# for one of our commands Ctrl-C and SIGTERM are one line and exit 130/143 from here on, and for any
# other program the signal held is raised again under its own handlers (core/interrupts.settle).
import _signal

_held: list[int] = []
_saved: dict = {}
try:
    for _signum in (_signal.SIGINT, _signal.SIGTERM):
        _saved[_signum] = _signal.getsignal(_signum)
        _signal.signal(_signum, lambda signum, frame: _held.append(signum))
except ValueError:  # imported on a thread that is not the main one: signals are not this import's to hold
    pass

from ngcbuild.core.interrupts import settle  # noqa: E402 - after the signals are held

settle(_held, _saved)
