"""The one index rule: where every step that reads Python distributions reads them (`build`'s pip in
every stage, `resolve`, `fit`, `bump`, `verify`, `audit`, the smoke suite's pytest), one list of indexes
per release, and the user's index setting, taken the way pip and uv take theirs.

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
logged or written to a lock.

A build's pip needs the logins too: `build_logins` takes each index host's login from its URL, else
from the user's netrc ($NETRC, else ~/.netrc: a `machine` entry, else `default`), and `netrc_text`
writes them as the netrc the builder stage reads (engine/image_build.py); the URLs pip.conf names
carry none (`without_login`). A lock's header records the index it was resolved against without its
login (`header_lines`); `lock_index_problem` says when a build reads another.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import UserError
from ngcbuild.core.references import ReferenceProblem, UrlLogin, login_of, parse_index_url, shown_url, without_login

PYPI_SIMPLE = "https://pypi.org/simple"  # PyPI's simple index (PEP 503/691)
INDEX_VARIABLES = ("UV_INDEX_URL", "PIP_INDEX_URL")  # in their order of precedence
EXTRA_VARIABLES = ("UV_EXTRA_INDEX_URL", "PIP_EXTRA_INDEX_URL")
MAX_EXTRA = 20
INDEX_KEY, EXTRA_KEY = "index", "extra-index"  # a lock's header lines (manifest/lock.py's keyed lines)
MAX_NETRC = 1 << 20


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

    def header_lines(self) -> list[tuple[str, str]]:
        """What a lock's header records of the setting it was resolved against: the index and the extra
        ones, without their logins."""
        return [(INDEX_KEY, without_login(self.index_url)), *((EXTRA_KEY, without_login(u)) for u in self.extra)]


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


def lock_index_problem(header: dict[str, list[str]], setting: IndexSetting) -> str | None:
    """Why a lock (its keyed header lines) was resolved against other indexes than `setting` reads, in
    words with no login; None when they are the same, or the lock records none (written before locks
    recorded it)."""
    recorded = header.get(INDEX_KEY)
    if not recorded:
        return None
    locked = (recorded[0].rstrip("/"), tuple(u.rstrip("/") for u in header.get(EXTRA_KEY, [])))
    wanted = dict(setting.header_lines())
    now = (wanted[INDEX_KEY], tuple(without_login(u) for u in setting.extra))
    if locked == now:
        return None

    def said(index, extra):
        return shown_url(index) + "".join(f" + {shown_url(u)}" for u in extra)
    return f"resolved against {said(*locked)}; this build reads {said(*now)}" + (
        f" (from {setting.index_from})" if setting.index_from != "default" else "")


def build_logins(urls: list[str], environ=os.environ) -> dict[str, UrlLogin]:
    """The login of each host of `urls` a build's pip needs: the one in its URL, else the user's netrc
    `machine` entry for that host. One login per host, as a netrc holds: two URLs of one host
    with different logins are refused, naming the host alone."""
    logins: dict[str, UrlLogin] = {}
    for url in urls:
        login = login_of(url)
        if login is None:
            continue
        known = logins.get(login.host)
        if known is not None and (known.user, known.password) != (login.user, login.password):
            raise UserError(f"two index URLs of {login.host} carry different logins; the build's pip takes one per "
                            "host (a netrc): give one login for it (the values are not shown)")
        logins[login.host] = login
    hosts = [h for h in dict.fromkeys(_host(u) for u in urls) if h and h not in logins]
    if hosts:
        entries = user_netrc(environ)
        for host in hosts:
            found = entries.get(host)  # a `machine` entry only: a `default` login is never carried into a build
            if found is not None:
                logins[host] = UrlLogin(host, *found)
    for login in logins.values():
        for word in (login.user, login.password):
            if not word or not word.isprintable() or any(c.isspace() or c in "\"'#" for c in word):
                raise UserError(f"the login for {login.host}: its user and password must be non-empty printable "
                                "words without spaces, quotes, backslashes or #, which the build's netrc cannot "
                                "carry (the values are not shown)")
    return logins


def netrc_text(logins: dict[str, UrlLogin]) -> str:
    """The netrc the builder stage's pip reads (its /root/.netrc, mode 0600): one `machine` line per host.
    Never written under build/ and never shown."""
    return "".join(f"machine {login.host} login {login.user} password {login.password}\n"
                   for _host_name, login in sorted(logins.items()))


def user_netrc(environ=os.environ) -> dict[str | None, tuple[str, str]]:
    """The user's netrc ($NETRC, else ~/.netrc) as host -> (login, password); None: its `default`. A
    file that is not there is no login; one that cannot be read is refused naming it (never its text)."""
    from ngcbuild.core.errors import ManifestError
    from ngcbuild.core.files import read_text

    named = environ.get("NETRC", "")
    path = Path(named) if named.strip() else Path(environ.get("HOME") or Path.home()) / ".netrc"
    try:
        text = read_text(path, MAX_NETRC, "a netrc file", "", within=None)
    except ManifestError as exc:
        if not path.exists():
            return {}
        raise UserError(f"{'$NETRC' if named.strip() else '~/.netrc'}: {exc}") from None
    return parse_netrc(text)


def parse_netrc(text: str) -> dict[str | None, tuple[str, str]]:
    """netrc's words (machine, default, login, password, account; a macdef runs to a blank line; a line
    whose first word starts with # is a comment), as curl and Python's netrc read them. An entry
    without a password gives none."""
    entries: dict[str | None, tuple[str, str]] = {}
    words: list[str] = []
    in_macro = False
    for line in text.splitlines():
        if in_macro:
            in_macro = bool(line.strip())
            continue
        split = line.split()
        if split and split[0].startswith("#"):
            continue
        if "macdef" in split:
            words += split[:split.index("macdef")]
            in_macro = True
            continue
        words += split
    host: str | None | bool = False  # False: before any entry
    login = password = ""

    def close():
        if host is not False and password and host not in entries:
            entries[host] = (login, password)
    position = 0
    while position < len(words):
        word = words[position]
        if word in ("machine", "default"):
            close()
            login = password = ""
            if word == "default":
                host = None
                position += 1
                continue
            host = words[position + 1].lower() if position + 1 < len(words) else False
            position += 2
            continue
        if word in ("login", "password", "account") and position + 1 < len(words):
            if word == "login":
                login = words[position + 1]
            elif word == "password":
                password = words[position + 1]
            position += 2
            continue
        position += 1
    close()
    return entries


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower()


APT_PROXY_VARIABLE = "NGCBUILD_APT_PROXY"


def apt_proxy_setting(option: str | None = None, environ=os.environ) -> str | None:
    """The proxy every apt read goes through (the build's apt steps, verify's reads of apt archives):
    --apt-proxy, else $NGCBUILD_APT_PROXY (empty: unset), else none. Checked by core/references.
    parse_proxy_url; its login is never shown."""
    from ngcbuild.core.references import parse_proxy_url

    for value, where in ((option, "--apt-proxy"), (environ.get(APT_PROXY_VARIABLE), f"${APT_PROXY_VARIABLE}")):
        if value is None or (where.startswith("$") and not value.strip()):
            continue
        try:
            return parse_proxy_url(value.strip() if where.startswith("$") else value)
        except ReferenceProblem as exc:
            raise UserError(f"{where}: {exc}") from None
    return None
