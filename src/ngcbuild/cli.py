"""Glue between invoke tasks and the library: user errors become one message and an exit status."""

from __future__ import annotations

import functools
import os
import sys

import requests
import urllib3
from docker.errors import DockerException
from invoke.exceptions import Exit

from .errors import NgcbuildError
from .outputs import describe


def guarded(function):
    """Run `function`; an NgcbuildError becomes its message on stderr and its exit status (2 for bad
    input, 1 for failures), with no traceback. Ctrl-C exits 130."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except NgcbuildError as exc:
            raise Exit(f"ngcbuild: {exc}", code=exc.exit_code) from None
        except DockerException as exc:
            raise Exit(f"ngcbuild: the Docker engine failed: {exc}", code=1) from None
        except BrokenPipeError:
            # output piped into `head` and the like: stop quietly, as other tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise Exit(code=0) from None
        except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as exc:
            # a backstop: the connection to the engine broke somewhere no module expected it
            raise Exit(f"ngcbuild: the connection to the Docker engine broke: {exc}", code=1) from None
        except OSError as exc:
            # a backstop (after the subclasses above): the file system refused what no module expected
            raise Exit(f"ngcbuild: {describe(exc)}", code=1) from None
        except KeyboardInterrupt:
            raise Exit("ngcbuild: interrupted", code=130) from None

    return wrapper
