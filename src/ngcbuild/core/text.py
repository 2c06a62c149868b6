"""Text from outside (a registry, an index, a record, a report, a signed statement) made safe to print:
`safe` is the older name of `core.redact.redact`, the one function through which every value is shown
(credentials masked, unprintable characters escaped, long values shortened)."""

from __future__ import annotations

from ngcbuild.core import redact

MAX_SHOWN = redact.MAX_SHOWN


def safe(value, limit: int = MAX_SHOWN) -> str:
    """`core.redact.redact(value, limit)`."""
    return redact.redact(value, limit)
