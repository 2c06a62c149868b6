"""Glue between the tasks and the library: user errors become one message and an exit status."""

from __future__ import annotations

import functools
import os
import sys

from invoke.exceptions import Exit

from ngcbuild.core.errors import NgcbuildError, excerpt
from ngcbuild.core.interrupts import within
from ngcbuild.core.outputs import describe


def guarded(function):
    """Run `function`; an NgcbuildError becomes its message on stderr and its exit status (2 for bad
    input, 1 for failures), with no traceback. Ctrl-C exits 130."""
    # The engine's and HTTP libraries' exceptions are imported only when one is raised: importing
    # docker costs a tenth of a second that the commands which never reach an engine should not pay.

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            _settings_checked()
            return function(*args, **kwargs)
        except NgcbuildError as exc:
            raise Exit(f"ngcbuild: {exc}", code=exc.exit_code) from None
        except BrokenPipeError:
            # output piped into `head` and the like: stop quietly, as other tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise Exit(code=0) from None
        except KeyboardInterrupt:  # raised by code that has no handler of ours installed
            raise Exit("ngcbuild: interrupted", code=130) from None
        except OSError as exc:
            # a backstop: the file system (or, below it, the connection) refused what no module expected
            raise Exit(f"ngcbuild: {_engine_failure(exc) or describe(exc)}", code=1) from None
        except Exception as exc:
            interrupt = within(exc)  # an interrupt Python wrapped (a signal inside `__set_name__`)
            if interrupt is not None:
                raise interrupt from None
            message = _engine_failure(exc)
            if message is None:
                raise
            raise Exit(f"ngcbuild: {message}", code=1) from None

    return wrapper


def _settings_checked() -> None:
    """The settings of the environment that every command obeys, checked before it starts (a bad one is
    one line and exit 2 here, not a failure half way through on a worker thread)."""
    if any(name.startswith("NGCBUILD_HTTP_") for name in os.environ):  # core/http is imported only then
        from ngcbuild.core.http import deadline_cap

        deadline_cap()


def _engine_failure(exc: Exception) -> str | None:
    """The message for a failure of the engine or of the connection to it; None for anything else."""
    if "docker" in sys.modules:
        from docker.errors import DockerException

        if isinstance(exc, DockerException):
            return f"the Docker engine failed: {excerpt(str(exc), 300)}"
    if "requests" in sys.modules:
        import requests
        import urllib3

        if isinstance(exc, (requests.exceptions.RequestException, urllib3.exceptions.HTTPError)):
            # a backstop: the connection to the engine broke somewhere no module expected it
            return f"the connection to the Docker engine broke: {excerpt(str(exc), 300)}"
    return None
