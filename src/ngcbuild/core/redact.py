"""The one way a value that may carry a credential is shown: `redact`.

A credential can reach a message, a table, a JSON output or a page inside many kinds of value: a URL's
`user:password@` (an index URL, a mirror, a requirement line `pkg @ https://u:p@host/pkg.whl`, a joined
short option `-ihttps://u:p@host/simple`), a query or fragment parameter that carries a token or a
signature (`?token=`, `access_token`, `X-Amz-Signature`, Azure's `sig`), an image reference written with
a login (`user:password@registry/name:tag`). `mask` replaces each with `***` wherever it stands in a
text; `redact` masks, then escapes what is not printable (escape sequences, carriage returns, newlines
that fake a second message, bidirectional overrides) and shortens what is too long. The older names
`core.text.safe` and `core.references.shown_url` are this function; `core.errors.excerpt` (a repr for
messages) masks through `mask` too, and the printing streams (core/console.py) and the writer of pages
and reports (core/outputs.write_file) mask what reaches them as a last net.

Every pattern is linear: no nested quantifiers over overlapping characters.
"""

from __future__ import annotations

import re

MAX_SHOWN = 200
HIDDEN = "***"

# scheme://userinfo@ : the userinfo runs to the last @ before the path, query or fragment (as urlsplit
# reads it), so a password with a raw @ in it is hidden whole
_URL_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]{0,30}://)[^\s/?#@'\"<>]*(?:@[^\s/?#@'\"<>]*)*@")
# user:password@host/ or token@host/ at the start of a word (an image reference given with a login);
# not name@sha256:... (a digest: no host and slash after the @) and not a path's own @ (after a slash)
_REF_USERINFO = re.compile(r"(?<![^\s'\"=(\[,;])[^\s/@'\"=(\[,;]+@(?=[A-Za-z0-9.:\[\]-]+/)")
# names of parameters whose values are secrets (case-insensitive, anywhere in the name): token,
# access_token, X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, sig, password, secret, key,
# auth, session, code (an OAuth code), jwt
_SECRET_NAME = re.compile(r"token|sig|secret|pass|key|auth|cred|session|code|jwt", re.IGNORECASE)
_PARAMETER = re.compile(r"([?&#;])([^=&\s#?;'\"<>]{1,100})=([^&\s#;'\"<>]*)")


def mask(text: str) -> str:
    """`text` with every credential it carries replaced by *** (nothing else changed)."""
    if "@" not in text and "=" not in text:
        return text
    if "@" in text and "/" in text:
        if "://" in text:
            text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{HIDDEN}@", text)
        text = _REF_USERINFO.sub(f"{HIDDEN}@", text)
    if "=" in text:
        text = _PARAMETER.sub(_masked_parameter, text)
    return text


# In a value that names an image or a URL (an option, a variable of the environment), an @ has one
# meaning that is no secret: name@sha256:<hex>. Any other is a login in an unusual place
# (host/name:user:password@x/..., name:tag@token): the words on both sides of it are hidden.
# The lookbehind starts a match only where a word starts (linear time on a long word without an @).
_WORD_AT = re.compile(r"(?<![^\s/@'\"=(\[,;])([^\s/@'\"=(\[,;]*)@(?!sha256:[0-9a-f]{64}(?![0-9a-f]))([^\s/@'\"]*)")


def mask_reference(text: str) -> str:
    """`mask`, and for a value that names an image or a URL also every @ that does not start a digest,
    with the words around it (a credential typed where the reference grammar does not expect one)."""
    text = mask(text)
    if "@" not in text:
        return text
    return _WORD_AT.sub(_masked_at, text)


def _masked_at(match: re.Match) -> str:
    before, after = match.groups()
    if before == HIDDEN:  # a login `mask` hid already: what follows is its host
        return match.group(0)
    return f"{HIDDEN}@{HIDDEN}"


def _masked_parameter(match: re.Match) -> str:
    mark, name, value = match.groups()
    if value and value != HIDDEN and _SECRET_NAME.search(name):
        return f"{mark}{name}={HIDDEN}"
    return match.group(0)


def redact(value, limit: int = MAX_SHOWN) -> str:
    """`value` (str() of it when not a string) for a message, a table, a JSON output or a page: its
    credentials masked, every unprintable character escaped as \\xNN, \\uNNNN or \\UNNNNNNNN (Python's
    `str.isprintable`: control, format, separator and unassigned characters; the plain space stays),
    at most about `limit` characters (the rest replaced by "... (N characters)")."""
    text = mask(value if isinstance(value, str) else str(value))
    if text.isprintable() and len(text) <= limit:
        return text
    shown = []
    size = 0
    for char in text:
        piece = char if char.isprintable() else _escape(char)
        if size + len(piece) > limit:
            shown.append(f"... ({len(text)} characters)")
            break
        shown.append(piece)
        size += len(piece)
    return "".join(shown)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
