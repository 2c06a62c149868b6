"""The one way ngcbuild prints: standard output and standard error as every entry point installs them
(`install`, first thing, in cli/__init__.py, `python -m ngcbuild`, the checkout's tasks.py and
`python -m ngcbuild.smoke.host`), so that every `print` and every `out.write` of a command goes
through here.

- A stream closed before the command started (`ngcbuild matrix >&-`) or one whose reader went away
  (`ngcbuild matrix | head -c1`) swallows what is written to it from then on: the command finishes its
  work (every file it writes is written whole) and exits with its own status, without a traceback and
  without the interpreter's "Exception ignored ... BrokenPipeError" at exit. The descriptor is pointed at
  /dev/null, so neither the interpreter's last flush nor a child process that inherits it fails there;
  a closed descriptor 0, 1 or 2 is filled the same way before anything is opened, so that no file the
  command opens becomes a child's standard output.
- Any locale: a character the stream's encoding cannot show (`LC_ALL=C` with UTF-8 mode off, an advisory
  id or a package summary in another script) is written escaped (\\xe9, \\u2019), never an encoding error.
- A last net for credentials: every line is masked by core/redact.mask (the explicit `redact` calls where
  values are formatted come first; this catches what none of them saw).
"""

from __future__ import annotations

import io
import os
import sys

from ngcbuild.core.redact import mask


class Stream(io.TextIOBase):
    """A text stream over one of the process's streams that never raises for a reader gone away or a
    character its encoding lacks."""

    def __init__(self, stream, gone: bool = False):
        super().__init__()
        self._stream = stream
        self.gone = gone

    # --- what print(), logging and our writers call ---

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._stream.write(mask(text))
            except (OSError, ValueError):  # EPIPE, EBADF; a closed file object
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._lose()

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def _lose(self) -> None:
        """From now on, what is written goes nowhere: the descriptor becomes /dev/null (what the stream
        still buffers is flushed there, quietly)."""
        self.gone = True
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError, AttributeError):
            return
        _fill_with_devnull(fd, always=True)
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    # --- what callers ask a stream ---

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        if self.gone:
            return False
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", "utf-8")

    @property
    def errors(self) -> str:
        return getattr(self._stream, "errors", "backslashreplace")

    @property
    def buffer(self):
        return self._stream.buffer

    def close(self) -> None:  # the process's own stream: closed by the interpreter, never by a command
        self.flush()

    @property
    def closed(self) -> bool:
        return False


def install() -> None:
    """Make sys.stdout and sys.stderr Streams (once; a second call changes nothing)."""
    for fd in (0, 1, 2):
        _fill_with_devnull(fd)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        current = getattr(sys, name)
        if isinstance(current, Stream):
            continue
        gone = current is None  # the interpreter found no descriptor (`>&-`): one on /dev/null now
        if gone:
            current = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        elif hasattr(current, "reconfigure"):
            try:
                current.reconfigure(errors="backslashreplace")
            except (OSError, ValueError):
                pass
        setattr(sys, name, Stream(current, gone))


def _fill_with_devnull(fd: int, always: bool = False) -> None:
    """Point descriptor `fd` at /dev/null: when it is closed, or (`always`) whatever it is."""
    if not always:
        try:
            os.fstat(fd)
            return
        except OSError:
            pass
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        if null != fd:
            os.dup2(null, fd, inheritable=True)
        else:
            os.set_inheritable(fd, True)
    finally:
        if null != fd:
            os.close(null)
