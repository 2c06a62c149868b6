"""`python -m ngcbuild TASK`: the same as `ngcbuild TASK`."""

from ngcbuild.core.interrupts import Interrupted, install, leave

install()  # before anything slower: an interrupt at any moment is one line, never a traceback

try:
    from ngcbuild.cli import main
except Interrupted as exc:
    leave(exc)

main()
