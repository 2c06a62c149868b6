"""Registry hosts and image references, parsed once by the distribution reference grammar.

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ host [ ":" port ] "/" ] path-component ( "/" path-component )*

(github.com/distribution/reference). A registry host here is lower case, with an optional port and
nothing else: no scheme, no path, no spaces and never credentials. `user:password@host` is refused
without echoing it: credentials come from NGCBUILD_REGISTRY_USER/NGCBUILD_REGISTRY_PASSWORD (for the
host NGCBUILD_REGISTRY_HOST names) or the Docker config (registry/auth.py), never from a command line
that shell history and CI logs keep.

Every pattern below is free of nested quantifiers over overlapping characters, so a failed match
costs linear time however long and hostile the input.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ngcbuild.core.errors import UserError, excerpt
from ngcbuild.core.redact import redact

_DOMAIN_COMPONENT = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MAX_NAME = 255
CREDENTIALS_HELP = ("credentials do not belong in a registry reference (the value is not shown); set "
                    "NGCBUILD_REGISTRY_USER and NGCBUILD_REGISTRY_PASSWORD with NGCBUILD_REGISTRY_HOST (the host "
                    "they are for), or log in with `docker login` (the Docker config)")
HOST_EXAMPLE = "HOST[:PORT] such as localhost:5000 or nvcr.io"


def _shown(value: str) -> str:
    # a value given as a host, a reference or a URL: every @ that starts no digest is a login (hidden)
    return excerpt(value, reference=True)


class ReferenceProblem(ValueError):
    """What is wrong with a host or reference, in words safe to print (never a credential)."""


def parse_host(value: str) -> str:
    """A registry host `host[:port]` (one trailing slash tolerated), or ReferenceProblem."""
    if not isinstance(value, str):
        raise ReferenceProblem(f"expected {HOST_EXAMPLE}")
    if "@" in value:
        raise ReferenceProblem(CREDENTIALS_HELP)
    text = value[:-1] if value.endswith("/") else value
    if not text:
        raise ReferenceProblem(f"is empty; expected {HOST_EXAMPLE}")
    if "://" in text:
        raise ReferenceProblem(f"{_shown(text)}: expected {HOST_EXAMPLE}, without a scheme")
    if "/" in text:
        raise ReferenceProblem(f"{_shown(text)}: expected {HOST_EXAMPLE}, without a path")
    if text != text.lower():
        raise ReferenceProblem(f"{_shown(text)}: expected a lower-case {HOST_EXAMPLE}")
    if text.startswith("["):  # an IPv6 address: [::1]:5000
        address, bracket, port = text[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            raise ReferenceProblem(f"{_shown(text)}: expected [IPv6]:PORT, or {HOST_EXAMPLE}")
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            raise ReferenceProblem(f"{_shown(text)}: {_shown(address)} is not an IPv6 address") from None
        port = port[1:] if port else None
    else:
        address, colon, port = text.partition(":")
        port = port if colon else None
        if len(address) > 253 or not all(_DOMAIN_COMPONENT.fullmatch(c) for c in address.split(".")):
            raise ReferenceProblem(f"{_shown(text)}: expected {HOST_EXAMPLE} (letters, digits, dots and "
                                   "hyphens; no spaces)")
    if port is not None and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ReferenceProblem(f"{_shown(text)}: the port must be a number from 1 to 65535")
    return text


ENGINE_EXAMPLE = ("unix:///path/to/docker.sock or tcp://HOST:PORT (TLS: DOCKER_TLS_VERIFY=1 and "
                  "DOCKER_CERT_PATH)")
MAX_SOCKET_PATH = 107  # sun_path of a unix socket address, less its terminating NUL


def parse_engine_url(value: str) -> str:
    """A Docker engine address (`--engine`, DOCKER_HOST) as the engine clients take it, or
    ReferenceProblem. Credentials are refused and never shown; ssh:// is not offered (see docs/building.md)."""
    if not isinstance(value, str) or not value:
        raise ReferenceProblem(f"is empty; expected {ENGINE_EXAMPLE}")
    if not value.isprintable() or len(value) > 4096:
        raise ReferenceProblem(f"{_shown(value)}: expected {ENGINE_EXAMPLE}")
    scheme, sep, where = value.partition("://")
    if scheme == "ssh" and sep:
        raise ReferenceProblem("ssh:// engines are not offered: forward the remote engine's socket with "
                               "`ssh -NL /tmp/engine.sock:/var/run/docker.sock USER@HOST` and use "
                               "unix:///tmp/engine.sock")
    if "@" in where.partition("/")[0] and scheme != "unix":
        raise ReferenceProblem("credentials do not belong in an engine address (the value is not shown); "
                               "a tcp:// engine authenticates with TLS client certificates (DOCKER_CERT_PATH)")
    if scheme == "unix" and sep:
        if not where.startswith("/") or len(where.encode()) > MAX_SOCKET_PATH:
            raise ReferenceProblem(f"{_shown(value)}: expected unix:// and an absolute socket path of at most "
                                   f"{MAX_SOCKET_PATH} bytes")
        return value
    if scheme == "tcp" and sep:
        host = where[:-1] if where.endswith("/") else where
        address, colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not colon:
            raise ReferenceProblem(f"{_shown(value)}: expected tcp://HOST:PORT (the port is needed)")
        try:
            parse_host(f"{address.lower()}:{port}")
        except ReferenceProblem:
            raise ReferenceProblem(f"{_shown(value)}: expected tcp://HOST:PORT with a port from 1 to 65535"
                                   ) from None
        return value
    raise ReferenceProblem(f"{_shown(value)}: expected {ENGINE_EXAMPLE}")


INDEX_EXAMPLE = "https://HOST[:PORT]/PATH (such as https://mirror.example/pypi), or http:// on the loopback"
MAX_URL = 2048


def parse_index_url(value: str) -> str:
    """The URL of an index or a mirror of PyPI's JSON API (`--pypi-mirror`, NGCBUILD_PYPI_MIRROR), its
    trailing slashes dropped, or ReferenceProblem in words that never show the value's credentials.
    HTTPS, or plain HTTP on the loopback only: a mirror's advisory data over plain HTTP could be
    rewritten on the way, so that an image looked clean. user:password@ is allowed (a mirror may need
    it) and goes to that host alone; no query or fragment (nothing of ours goes there)."""
    parts = _http_url(value, INDEX_EXAMPLE)
    if parts.query or parts.fragment or "?" in value or "#" in value:
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': expected a URL without a query or fragment")
    if parts.scheme == "http":
        if not on_loopback(value):
            raise ReferenceProblem(f"'{shown_url(value)[:80]}': plain http:// is refused off the loopback (what it "
                                   "answers could be changed on the way); expected https://")
    return value.rstrip("/")


def on_loopback(url: str) -> bool:
    """Whether a checked URL's host is this machine's loopback (localhost, 127.0.0.0/8, ::1): a mirror a
    build reaches only on the host's network (engine/image_build.py)."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class UrlLogin:
    """The login a checked URL carries in its user:password@ (percent-decoded, as pip and uv read it)."""

    host: str  # the host alone, as netrc names a machine (lower case, no port, no brackets)
    user: str
    password: str

    def __repr__(self) -> str:  # never the password, whatever prints the object
        return f"UrlLogin(host={self.host!r}, user=***, password=***)"


def without_login(url: str) -> str:
    """A URL checked by parse_index_url or parse_proxy_url with its user:password@ taken out: what may be
    written where it lasts (a lock's header, the build's pip.conf, a record)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def login_of(url: str) -> UrlLogin | None:
    """The user:password@ of a checked URL, or None when it carries none."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return UrlLogin((parts.hostname or "").lower(), unquote(parts.username or ""), unquote(parts.password or ""))


PROXY_EXAMPLE = "http://HOST[:PORT] (such as http://apt-cache.example:3142), or https://"


def parse_proxy_url(value: str) -> str:
    """The URL of an HTTP proxy (`--apt-proxy`, NGCBUILD_APT_PROXY): http:// or https://, a host, an
    optional port and user:password@ (never shown), no path, query or fragment; ReferenceProblem in words
    that never show its credentials. Plain HTTP is allowed anywhere: apt checks every file it fetches
    against the archive's signed Release file."""
    parts = _http_url(value, PROXY_EXAMPLE)
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in value or "#" in value:
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': expected a proxy's address alone (no path, query or "
                               "fragment)")
    return value.rstrip("/")


def _http_url(value, example: str):
    """The parts of an http:// or https:// URL with a valid host (and port), checked as every URL we take
    is: not empty, not option-like, bounded, printable; ReferenceProblem naming `example`, never the
    URL's credentials."""
    from urllib.parse import urlsplit

    if not isinstance(value, str) or not value:
        raise ReferenceProblem(f"is empty; expected {example}")
    if value.startswith("-"):
        raise ReferenceProblem(f"'{shown_url(value)[:80]}' looks like an option; expected {example}")
    if len(value) > MAX_URL or not value.isprintable() or any(c.isspace() for c in value):
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': expected {example} (at most {MAX_URL} printable "
                               "characters, no spaces)")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': expected {example}") from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': expected {example}")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    try:
        parse_host(host.lower() + (f":{port}" if port else ""))
    except ReferenceProblem as exc:
        raise ReferenceProblem(f"'{shown_url(value)[:80]}': the host {exc}") from None
    return parts


def shown_url(url: str) -> str:
    """A URL for a message: `core.redact.redact` (its user:password@ and the values of its secret-bearing
    query parameters masked, control characters escaped), at most 400 characters."""
    return redact(url, 400)


def host_address(host: str) -> str:
    """The address of a registry host (as parse_host returned it) without its port; an IPv6 address
    without its brackets."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0]


def same_registry(one: str, other: str) -> bool:
    """Whether two registry hosts (as parse_host returned them) name the same registry without asking
    DNS: the loopback by any of its names (localhost, 127.0.0.0/8, ::1), and a missing port as the one
    the client uses (443 for HTTPS; a loopback registry is plain HTTP, 80)."""
    return _registry_key(one) == _registry_key(other)


def _registry_key(host: str) -> tuple[str, int]:
    address = host_address(host)
    port_text = host.rpartition("]")[2] if host.startswith("[") else host.partition(":")[2]
    port_text = port_text.lstrip(":")
    try:
        loopback = address == "localhost" or ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = False
    port = int(port_text) if port_text.isdigit() else (80 if loopback else 443)
    return ("loopback" if loopback else address, port)


def registry_host(value: str, flag: str = "--registry") -> str:
    """A command-line registry host, or a UserError naming the flag."""
    try:
        return parse_host(value)
    except ReferenceProblem as exc:
        raise UserError(f"{flag}: {exc}") from None


@dataclass(frozen=True)
class ImageRef:
    """An image reference: `repository` (with its registry host, if any), `tag` and/or `digest`."""

    repository: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str, *, need_tag: bool = False) -> ImageRef:
        if not isinstance(text, str) or not text:
            raise ReferenceProblem("is empty; expected an image reference such as debian:bookworm-slim")
        if "://" in text:
            raise ReferenceProblem("expected an image reference without a scheme (registry/name:tag)")
        host_part = text.split("/", 1)[0] if "/" in text else ""
        if "@" in host_part or text.count("@") > 1:
            raise ReferenceProblem(CREDENTIALS_HELP)
        name, at, digest = text.partition("@")
        if at and not _DIGEST.fullmatch(digest):
            raise ReferenceProblem(f"{_shown(text)}: the digest must be sha256:<64 hex digits>")
        slash = name.rfind("/")
        colon = name.rfind(":")
        tag = None
        if colon > slash:
            name, tag = name[:colon], name[colon + 1:]
            if not _TAG.fullmatch(tag):
                raise ReferenceProblem(f"{_shown(text)}: the tag must be letters, digits, _ . - "
                                       "(at most 128, not starting with . or -)")
        if need_tag and tag is None:
            raise ReferenceProblem(f"{_shown(text)}: expected an image reference with a tag (registry/name:tag)")
        if len(name) > MAX_NAME:
            raise ReferenceProblem(f"{_shown(text)}: the name is longer than {MAX_NAME} characters")
        first, sep, rest = name.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
            parse_host(first)
            path = rest
        else:
            path = name
        if not all(_PATH_COMPONENT.fullmatch(c) for c in path.split("/")):
            raise ReferenceProblem(f"{_shown(text)}: expected an image reference (registry/name:tag; the "
                                   "name lower case, its parts joined by / and separated by . _ __ -)")
        return cls(name, tag, digest or None)

    @property
    def host(self) -> str | None:
        first, sep, _ = self.repository.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
            return first
        return None

    @property
    def path(self) -> str:
        """The repository without its registry host (nvidia/pytorch)."""
        host = self.host
        return self.repository[len(host) + 1:] if host else self.repository

    def with_tag(self, tag: str) -> ImageRef:
        return ImageRef(self.repository, tag)

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def image_ref(value: str, flag: str, *, need_tag: bool = False) -> ImageRef:
    """A command-line image reference, or a UserError naming the flag."""
    try:
        return ImageRef.parse(value, need_tag=need_tag)
    except ReferenceProblem as exc:
        raise UserError(f"{flag}: {exc}") from None
