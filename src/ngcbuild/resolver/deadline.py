"""One deadline for a whole resolve, fit or bump: every run of uv and every read of ours in it gets
what is left of the same budget, so an index that trickles its pages a byte at a time, or never ends
one, stops the command within it (uv's own timeout is per read, and a trickle never trips it).

NGCBUILD_RESOLVER_DEADLINE_S sets it (seconds, default 600)."""

from __future__ import annotations

import os
import time

from ngcbuild.core.errors import OperationError, UserError, excerpt

DEADLINE_ENV = "NGCBUILD_RESOLVER_DEADLINE_S"
DEFAULT_S = 600
MAX_S = 24 * 3600


class DeadlinePassed(OperationError):
    """The run's deadline fell before the resolver or a read finished (exit 1)."""


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())

    def passed(self, what: str) -> DeadlinePassed:
        return DeadlinePassed(f"{what} within the run's deadline of {self.seconds:g} s ({DEADLINE_ENV}); nothing "
                              "was written")


def run_deadline(environ=os.environ) -> Deadline:
    """The deadline of one run: $NGCBUILD_RESOLVER_DEADLINE_S seconds from now (default 600)."""
    text = environ.get(DEADLINE_ENV, "")
    if not text:
        return Deadline(DEFAULT_S)
    if not (text.isascii() and text.isdigit() and 0 < int(text) <= MAX_S):
        raise UserError(f"${DEADLINE_ENV} {excerpt(text)}: expected a whole number of seconds from 1 to {MAX_S}")
    return Deadline(int(text))
