"""What the resolver's process is given, and nothing more.

Its environment is allow-listed: the search path, the home folder (uv's cache and the user's netrc
live there), the locale, the proxies, the CA bundle, uv's cache and keyring settings. Nothing else of
the caller's reaches it: not the registry password of a CI job, not a UV_CONSTRAINT or PIP_INDEX_URL
meant for the user's own work (the indexes it reads are the ones given to it, as UV_INDEX_URL and
UV_EXTRA_INDEX_URL: a process's environment, unlike its command line, is not shown to other users).

uv expands `${NAME}` in requirement lines from its environment; a line that holds `${` is refused
without being shown, wherever it came from (the team's file says which line first). A line that
begins with `-` would be read as an option; each is refused too, and every path on uv's command line
is written `--option=/absolute/path`, so that none can be taken for an option either."""

from __future__ import annotations

from pathlib import Path

from ngcbuild.core.errors import UserError

PASSED = (
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
    "SSL_CERT_DIR", "NETRC", "UV_CACHE_DIR", "XDG_CACHE_HOME",
    # `uv --keyring-provider subprocess` runs `keyring`, which finds its backend by these
    "UV_KEYRING_PROVIDER", "PYTHON_KEYRING_BACKEND", "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
)
KEYRING_PROVIDERS = ("disabled", "subprocess")
EXPANSION = "${"


def environment(environ, indexes: list[str], ca_bundle: Path | None) -> dict[str, str]:
    """uv's whole environment: the allow-listed variables the caller has, and ours."""
    env = {key: environ[key] for key in PASSED if key in environ}
    if env.get("UV_KEYRING_PROVIDER", "disabled") not in KEYRING_PROVIDERS:
        raise UserError(f"$UV_KEYRING_PROVIDER: expected {' or '.join(KEYRING_PROVIDERS)}")
    if indexes:
        env["UV_INDEX_URL"] = indexes[0]
        env["UV_EXTRA_INDEX_URL"] = " ".join(indexes[1:])
    if ca_bundle is not None:
        env["SSL_CERT_FILE"] = str(ca_bundle)
    env["UV_NO_PROGRESS"] = "1"
    env["NO_COLOR"] = "1"
    return env


def checked_line(line: str, what: str) -> str:
    """A line of a requirements or constraints file uv reads, or UserError (the line not shown)."""
    if EXPANSION in line:
        raise UserError(f"{what} holds ${{...}}, which the resolver would expand from its environment (a "
                        "secret of this machine could reach an index's URL); refused, the line is not shown")
    if line.lstrip().startswith("-"):
        raise UserError(f"{what} begins with '-', which the resolver would read as an option; expected a "
                        "requirement such as einops==0.8.1 (the line is not shown)")
    if "\n" in line or "\r" in line:
        raise UserError(f"{what} holds a line break; expected one requirement per line")
    return line


def path_option(flag: str, path: Path) -> str:
    """`--flag=/absolute/path`: never read as an option, whatever the path's name."""
    return f"{flag}={Path(path).resolve()}"
