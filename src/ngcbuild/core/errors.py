"""Errors that reach the user as one clear message (no traceback).

`UserError` is bad input (exit status 2); `OperationError` is a failure of the outside world or of a
build step (exit status 1); `RecordDamaged` is a build/R/record.json that cannot be used (exit status
1: the record is our own output, never the user's input). The commands (cli/guard.py) turn each into
a message and an exit status.
"""

import os


class NgcbuildError(Exception):
    exit_code = 1


class UserError(NgcbuildError):
    """Bad input: a manifest, a constraints file, a command-line argument."""

    exit_code = 2


def shown_path(path) -> str:
    """A path as the user typed it: relative to the current directory when it is inside it."""
    import os

    text = str(path)
    try:
        relative = os.path.relpath(text)
    except ValueError:
        return text
    return text if relative.startswith("..") else relative


def excerpt(value, limit: int = 80, *, reference: bool = False) -> str:
    """A value for a message: repr (control characters, quotes and newlines escaped), never long, its
    credentials masked (core/redact.mask; `reference`: a value that names an image or a URL, every @
    that starts no digest hidden too, redact.mask_reference). The mask comes before the cut: a login
    cut in two would match no pattern and half of it would be shown."""
    from ngcbuild.core.redact import mask, mask_reference

    hide = mask_reference if reference else mask
    text = repr(hide(value)) if isinstance(value, str) else hide(repr(value))
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, (str, bytes)) else ""
    return text[:limit] + "..." + size


class ManifestError(UserError):
    def __init__(self, path, key: str, expected: str):
        # a key comes from the user's file: a newline or a huge key must not make the message many lines
        if len(key) > 120 or any(ord(c) < 32 or ord(c) == 127 for c in key):
            key = excerpt(key, 120)
        self.path, self.key, self.expected = shown_path(path), key, expected
        where = f"{self.path}: {key}: " if key else f"{self.path}: "
        super().__init__(where + expected)


class OperationError(NgcbuildError):
    """The engine, the registry or a build step failed."""


class RecordDamaged(OperationError):
    """build/R/record.json (written by build, push, smoke, publish) cannot be read or lacks what a
    step needs: our own output is damaged, so a failure (exit 1), not bad input."""

    def __init__(self, path, key: str, problem: str):
        where = f"{key}: " if key else ""
        self.path, self.key = shown_path(path), key
        super().__init__(f"record.json is damaged: {self.path}: {where}{problem}")


class OutputDamaged(OperationError):
    """Another file an earlier step of ours wrote in build/R/ (sbom.cdx.json, audit.json) cannot be
    read or lacks what a step needs: exit 1, as a damaged record."""

    def __init__(self, path, key: str, problem: str):
        where = f"{key}: " if key else ""
        self.path, self.key = shown_path(path), key
        super().__init__(f"{os.path.basename(str(path))} is damaged: {self.path}: {where}{problem}")


class EngineUnavailable(OperationError):
    pass


class BuildFailed(OperationError):
    pass


class PushFailed(OperationError):
    pass


class SmokeFailed(OperationError):
    pass
