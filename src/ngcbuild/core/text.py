"""Text from outside (a registry, an index, a record, a report, a signed statement) made safe to print.

Such text may hold escape sequences that move the cursor, clear the screen or recolour what follows,
a carriage return that writes over the line before it, newlines that fake a second message, or
bidirectional overrides that show a name backwards. `safe` escapes every character that is not
printable (Python's `str.isprintable`: control, format, separator and unassigned characters) as
`\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`, and shortens what is too long; the plain space stays a space.
Every message and line of output that carries such text passes it through here once.
"""

from __future__ import annotations

MAX_SHOWN = 200


def safe(value, limit: int = MAX_SHOWN) -> str:
    """`value` (str() of it when not a string) with every unprintable character escaped, at most about
    `limit` characters (the rest replaced by "... (N characters)")."""
    text = value if isinstance(value, str) else str(value)
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
