"""Whose credentials go to which registry, and when: the one place that decides.

Where credentials come from, for a host, first found:
1. NGCBUILD_REGISTRY_USER and NGCBUILD_REGISTRY_PASSWORD, for the one host NGCBUILD_REGISTRY_HOST
   names (HOST[:PORT], as the command lines take it) and for no other. Set without the host they are
   refused, saying so: a password that goes wherever a command is pointed is a password given away.
2. The Docker config, read as Docker reads it ($DOCKER_CONFIG/config.json, else
   ~/.docker/config.json): the host's credential helper (`credHelpers`), else the config's store
   (`credsStore`), each run as `docker-credential-NAME get` with a deadline; else its `auths` entry
   (`auth`: base64 of user:password, or `username`/`password`, or an `identitytoken`).
Nothing is looked up until a registry asks (a 401 from that very host), and nothing is sent to
another host: a token service (the realm of a Bearer challenge) gets them only over HTTPS, or over
plain HTTP when it is the registry's own (loopback) host, as the distribution spec's token flow
assumes; elsewhere the token is asked for without them.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

from ngcbuild.core.errors import ManifestError, OperationError, UserError
from ngcbuild.core.files import exists, read_text
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.references import ReferenceProblem, parse_host
from ngcbuild.core.text import safe

USER_ENV, PASSWORD_ENV, HOST_ENV = "NGCBUILD_REGISTRY_USER", "NGCBUILD_REGISTRY_PASSWORD", "NGCBUILD_REGISTRY_HOST"
CONFIG_LIMIT = 1 << 20  # a Docker config is a few kB
HELPER_TIMEOUT_S = 30
HELPER_OUTPUT_LIMIT = 64 << 10
_HELPER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
DOCKER_HUB = "https://index.docker.io/v1/"  # the key Docker files Docker Hub's credentials under
DOCKER_HUB_HOSTS = ("docker.io", "index.docker.io", "registry-1.docker.io")
LOGIN_HELP = (f"log in with `docker login HOST`, or set {USER_ENV} and {PASSWORD_ENV} with {HOST_ENV}=HOST "
              "(the registry they are for)")


@dataclass(frozen=True)
class Credentials:
    """A user and password (or an identity token, Docker's OAuth refresh token) for one host; never
    shown: repr and str mask them."""

    username: str = field(repr=False)
    password: str = field(repr=False)
    identity_token: str | None = field(default=None, repr=False)
    source: str = ""  # where they came from, for messages: "NGCBUILD_REGISTRY_*", "the Docker config", a helper

    def engine_auth(self) -> dict:
        """As docker-py's auth_config takes them."""
        if self.identity_token:
            return {"identitytoken": self.identity_token}
        return {"username": self.username, "password": self.password}

    def __str__(self) -> str:
        return f"credentials from {self.source}"


def declared(environ=os.environ) -> tuple[str, Credentials] | None:
    """(host, credentials) that NGCBUILD_REGISTRY_USER/PASSWORD/HOST declare, or None when unset.
    Half of them, or a user and password without the host they are for, is bad input (exit 2)."""
    user, password, host = environ.get(USER_ENV), environ.get(PASSWORD_ENV), environ.get(HOST_ENV)
    if bool(user) != bool(password):
        raise UserError(f"set both {USER_ENV} and {PASSWORD_ENV}, or neither")
    if not user:
        if host:
            raise UserError(f"{HOST_ENV} is set but {USER_ENV} and {PASSWORD_ENV} are not; set all three, or none")
        return None
    if not host:
        raise UserError(f"{USER_ENV} and {PASSWORD_ENV} are set but not {HOST_ENV}: set it to the registry "
                        f"HOST[:PORT] they are for (they are sent to that host only, never to another)")
    try:
        host = parse_host(host)
    except ReferenceProblem as exc:
        raise UserError(f"{HOST_ENV}: {exc}") from None
    return host, Credentials(user, password, source=f"{USER_ENV}/{PASSWORD_ENV} (for {host})")


def check_environment(environ=os.environ) -> None:
    """Stop early (before anything is built or written) on a half-set or undeclared NGCBUILD_REGISTRY_*."""
    declared(environ)


def config_path(environ=os.environ) -> Path:
    folder = environ.get("DOCKER_CONFIG")
    return Path(folder) / "config.json" if folder else Path.home() / ".docker" / "config.json"


@dataclass(frozen=True)
class DockerConfig:
    """What the Docker config says about credentials: auths by host, helpers by host, the store."""

    path: Path
    auths: dict
    helpers: dict
    store: str | None

    @classmethod
    def read(cls, path: Path) -> DockerConfig:
        if not exists(path):
            return cls(path, {}, {}, None)
        text = read_text(path, CONFIG_LIMIT, "a Docker config (JSON)", "no Docker config", within=Path("/"))
        try:
            data = load_json(text, "a Docker config")
        except ValueError:
            raise ManifestError(path, "", "not valid JSON; expected a Docker config (`docker login` writes it)"
                                ) from None
        if not isinstance(data, dict):
            raise ManifestError(path, "", "expected a Docker config (a JSON object)")
        auths, helpers, store = data.get("auths", {}), data.get("credHelpers", {}), data.get("credsStore")
        auths, helpers = {} if auths is None else auths, {} if helpers is None else helpers
        if not isinstance(auths, dict) or not all(isinstance(v, dict) for v in auths.values()):
            raise ManifestError(path, "auths", "expected an object of registries, each an object")
        if not isinstance(helpers, dict) or not all(isinstance(v, str) for v in helpers.values()):
            raise ManifestError(path, "credHelpers", "expected an object of registry: helper name")
        if store is not None and not isinstance(store, str):
            raise ManifestError(path, "credsStore", "expected the name of a credential helper")
        return cls(path, {_hostname(k): v for k, v in auths.items()},
                   {_hostname(k): v for k, v in helpers.items()}, store or None)

    def credentials(self, host: str) -> Credentials | None:
        key = DOCKER_HUB if host in DOCKER_HUB_HOSTS else host
        found = _hostname(key)
        helper = self.helpers.get(found) or self.store
        if helper:
            return run_helper(helper, key, self.path)
        entry = self.auths.get(found)
        return _from_entry(entry, self.path, found) if entry else None


def _hostname(key: str) -> str:
    """A config key as Docker matches it: without the scheme and any path (`https://h:5000/v1/` is h:5000)."""
    for prefix in ("https://", "http://"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key.partition("/")[0]


def _from_entry(entry: dict, path: Path, host: str) -> Credentials | None:
    where = f"auths.{safe(host, 80)}"
    token = entry.get("identitytoken")
    if token is not None and not isinstance(token, str):
        raise ManifestError(path, f"{where}.identitytoken", "expected a string")
    user, password = entry.get("username"), entry.get("password")
    encoded = entry.get("auth")
    if encoded:
        if not isinstance(encoded, str):
            raise ManifestError(path, f"{where}.auth", "expected base64 of user:password")
        try:
            user, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, ValueError):
            raise ManifestError(path, f"{where}.auth", "not base64 of user:password (the value is not shown)"
                                ) from None
    if token:
        return Credentials(user if isinstance(user, str) else "", "", token, source=f"the Docker config ({path})")
    if not user or not isinstance(user, str) or not isinstance(password, str):
        return None
    return Credentials(user, password, source=f"the Docker config ({path})")


def run_helper(name: str, server: str, path: Path) -> Credentials | None:
    """`docker-credential-NAME get` for `server`: its credentials, or None when it has none for it."""
    if not _HELPER_NAME.fullmatch(name):
        raise ManifestError(path, "credHelpers", f"{safe(name, 80)!r} is not a credential helper's name "
                                                 "(letters, digits, . _ -)")
    program = shutil.which(f"docker-credential-{name}")
    if program is None:
        raise UserError(f"{path}: the Docker config names the credential helper docker-credential-{name}, which "
                        "is not on PATH; install it or remove it from the config")
    try:
        returncode, text = _bounded_run([program, "get"], server.encode(), HELPER_OUTPUT_LIMIT, HELPER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise OperationError(f"the credential helper docker-credential-{name} did not answer within "
                             f"{HELPER_TIMEOUT_S}s") from None
    except OSError as exc:
        raise OperationError(f"the credential helper docker-credential-{name} could not be run "
                             f"({exc.strerror})") from None
    if len(text) > HELPER_OUTPUT_LIMIT:
        raise OperationError(f"the credential helper docker-credential-{name} answered more than "
                             f"{HELPER_OUTPUT_LIMIT} bytes; expected its JSON")
    if returncode != 0:
        said = text.decode("utf-8", "replace").strip()
        if "credentials not found" in said.lower():
            return None
        raise OperationError(f"the credential helper docker-credential-{name} failed (exit {returncode}): "
                             f"{safe(said.splitlines()[0] if said else 'no message', 120)}")
    try:
        answer = load_json(text, "a credential helper's answer")
        user, secret = answer["Username"], answer["Secret"]
        if not isinstance(user, str) or not isinstance(secret, str):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise OperationError(f"the credential helper docker-credential-{name} answered something that is not "
                             "its JSON (Username, Secret); the answer is not shown") from None
    source = f"the credential helper docker-credential-{name}"
    if user == "<token>":
        return Credentials("", "", secret, source=source)
    return Credentials(user, secret, source=source)


def _bounded_run(command: list[str], given: bytes, limit: int, deadline_s: float) -> tuple[int, bytes]:
    """Run `command` with `given` on its stdin; (its exit status, at most limit + 1 bytes of its stdout).
    Past `deadline_s`, or past the limit, it is killed: a helper can neither park us nor fill memory or
    a disk. TimeoutExpired past the deadline."""
    import selectors
    import time

    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        try:
            process.stdin.write(given)
            process.stdin.close()
        except BrokenPipeError:
            pass
        chunks, size, ends = [], 0, time.monotonic() + deadline_s
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while size <= limit:
                left = ends - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(command, deadline_s)
                if not selector.select(left):
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        if size > limit:
            return 0, b"".join(chunks)
        return process.wait(max(0.1, ends - time.monotonic())), b"".join(chunks)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


class Keychain:
    """The credentials of this process, looked up once per host and only when a host asks for them."""

    def __init__(self, environ=None):
        self.environ = os.environ if environ is None else environ
        self._declared = declared(self.environ)
        self._found: dict[str, Credentials | None] = {}
        self._config: DockerConfig | None = None

    def for_host(self, host: str) -> Credentials | None:
        if host not in self._found:
            if self._declared is not None and self._declared[0] == host:
                self._found[host] = self._declared[1]
            else:
                self._found[host] = self.config().credentials(host)
        return self._found[host]

    def config(self) -> DockerConfig:
        if self._config is None:
            self._config = DockerConfig.read(config_path(self.environ))
        return self._config

    def engine_auth(self, host: str) -> dict | None:
        """The auth_config to hand the engine for a push or pull of `host`: the declared credentials
        when they are for `host`; otherwise None, and docker-py reads the Docker config for that
        host itself (as `docker push` does)."""
        if self._declared is not None and self._declared[0] == host:
            return self._declared[1].engine_auth()
        return None


@cache
def keychain() -> Keychain:
    """The process's keychain (the environment as it is at the first call), as registry_session() is
    the process's session."""
    return Keychain()


# --- challenges and where a token service may get credentials -----------------------------------------

_PARAMETER = re.compile(r'([A-Za-z][A-Za-z0-9_-]{0,63})=(?:"((?:[^"\\]|\\.){0,4096})"|([^\s,"]{0,4096}))')
MAX_CHALLENGE = 16384


@dataclass(frozen=True)
class Challenge:
    scheme: str  # "basic" or "bearer" (lower case), else what the registry said
    params: dict

    @classmethod
    def parse(cls, header: str) -> Challenge:
        header = header[:MAX_CHALLENGE]
        scheme, _, rest = header.strip().partition(" ")
        params = {}
        for match in _PARAMETER.finditer(rest):
            name, quoted, bare = match.groups()
            params.setdefault(name.lower(), re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare)
        return cls(scheme.lower(), params)


def realm_may_get_credentials(realm: str, registry_url: str) -> bool:
    """Whether credentials may go with a token request to `realm`: over HTTPS to any host (the token
    service of a registry is often another host, as Docker Hub's), over plain HTTP only to the
    registry's own host and port (a loopback registry serving its own tokens)."""
    where, ours = urlsplit(realm), urlsplit(registry_url)
    if where.scheme == "https":
        return True
    return where.scheme == "http" and ours.scheme == "http" and _netloc(where) == _netloc(ours)


def _netloc(parts) -> tuple[str, int | None]:
    try:
        port = parts.port
    except ValueError:
        port = -1
    return (parts.hostname or "", port or (443 if parts.scheme == "https" else 80))
