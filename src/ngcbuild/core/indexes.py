"""Where the resolver, bump and verify read Python distributions: one list of indexes per release,
and the user's index setting, taken the way pip and uv take theirs.

    the index (in place of PyPI)    --index-url URL, else $UV_INDEX_URL, else $PIP_INDEX_URL,
                                    else https://pypi.org/simple
    the release's own indexes       its manifest's pip.extra_index_urls, always
    more indexes                    --extra-index-url URL (repeatable), else $UV_EXTRA_INDEX_URL,
                                    else $PIP_EXTRA_INDEX_URL (each a space-separated list)

An option wins over every variable and uv's variable over pip's, as each tool orders its own; a
variable set to the empty string counts as unset. Every URL is checked by core/references.
parse_index_url (HTTPS, or plain HTTP on the loopback; no query, no fragment) and refused in one
line that never shows it whole. `user:password@` in a URL is how pip and uv take credentials from
the environment; they go to that URL's host only and are never printed (core/references.shown_url),
logged or written to a lock. netrc and keyring credentials are the resolver's and the HTTP
library's own business: nothing of ours reads them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ngcbuild.core.errors import UserError
from ngcbuild.core.references import ReferenceProblem, parse_index_url, shown_url

PYPI_SIMPLE = "https://pypi.org/simple"  # PyPI's simple index (PEP 503/691)
INDEX_VARIABLES = ("UV_INDEX_URL", "PIP_INDEX_URL")  # in their order of precedence
EXTRA_VARIABLES = ("UV_EXTRA_INDEX_URL", "PIP_EXTRA_INDEX_URL")
MAX_EXTRA = 20


@dataclass(frozen=True)
class IndexSetting:
    """The user's choice of indexes for one run: `index_url` replaces PyPI, `extra` come last."""

    index_url: str = PYPI_SIMPLE
    extra: tuple[str, ...] = ()
    index_from: str = "default"  # where index_url came from: --index-url, a variable's name, default

    def described(self) -> str:
        """One line for messages: which index, and from where (credentials never shown)."""
        where = "" if self.index_from == "default" else f" (from {self.index_from})"
        return f"{shown_url(self.index_url)}{where}"


def index_setting(index_url: str | None = None, extra_index_urls=None, environ=os.environ) -> IndexSetting:
    """The index setting of one run, from the options (None: not given) and the environment."""
    chosen, index_from = PYPI_SIMPLE, "default"
    for value, where in ((index_url, "--index-url"), *((environ.get(v), f"${v}") for v in INDEX_VARIABLES)):
        if value is None or (where.startswith("$") and not value.strip()):
            continue
        chosen, index_from = _checked(value.strip() if where.startswith("$") else value, where), where
        break
    extra: list[str] = []
    if extra_index_urls:
        extra = [_checked(value, "--extra-index-url") for value in _as_list(extra_index_urls)]
    else:
        for variable in EXTRA_VARIABLES:
            value = environ.get(variable, "")
            if value.strip():
                extra = [_checked(part, f"${variable}") for part in value.split()]
                break
    if len(extra) > MAX_EXTRA:
        raise UserError(f"{len(extra)} extra indexes: expected at most {MAX_EXTRA}")
    return IndexSetting(chosen, tuple(dict.fromkeys(extra)), index_from)


def release_indexes(release, setting: IndexSetting | None = None, *, wheelhouse: bool = False) -> list[str]:
    """The indexes a release's pins come from, in the resolver's order: the index (PyPI unless the
    setting names another), the manifest's own extra indexes, then the setting's extra ones. A
    wheelhouse replaces the release's own extra indexes (as for `build`): it carries what they would
    give (dev's CPU torch)."""
    setting = setting if setting is not None else IndexSetting()
    own = () if wheelhouse else (str(u).rstrip("/") for u in release.pip.extra_index_urls)
    urls = [setting.index_url, *own, *setting.extra]
    return list(dict.fromkeys(urls))


def day_end(day) -> str | None:
    """A day of `derive.index_as_of` (or `fit --index-as-of`) as the resolver and verify read it: the
    indexes as they were at its end (uv's --exclude-newer; verify leaves out files uploaded later)."""
    return f"{day.isoformat()}T23:59:59Z" if day else None


def _as_list(values) -> list[str]:
    return [values] if isinstance(values, str) else list(values)


def _checked(value, where: str) -> str:
    if not isinstance(value, str):
        raise UserError(f"{where}: expected an index URL")
    if "${" in value:  # uv would expand it from its environment: never ours to pass on
        raise UserError(f"{where}: holds ${{...}}, which the resolver would expand from its environment; expected "
                        "the URL itself (the value is not shown)")
    try:
        return parse_index_url(value)
    except ReferenceProblem as exc:
        raise UserError(f"{where}: {exc}") from None
