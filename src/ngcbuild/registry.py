"""Push a built release to a registry and prove it arrived: the digest the registry serves for each
tag must equal the digest the push reported. Transient failures are retried with backoff."""

from __future__ import annotations

import os
import sys
import time

import docker
import requests
import urllib3

from .engine import connect
from .errors import PushFailed, UserError
from .events import PushStream
from .manifest import load_release
from .project import Project
from .record import read_record, write_record
from .transfer import TransferProgress

ATTEMPTS = 4
BACKOFF_S = 2.0
TRANSIENT = ("connection refused", "connection reset", "i/o timeout", "timeout", "eof", "502", "503", "504",
             "500 internal server error", "broken pipe", "temporarily unavailable", "tls handshake")
DENIED = ("unauthorized", "authentication required", "denied", "forbidden", "401", "403")


def credentials(environ=os.environ) -> dict | None:
    """NGCBUILD_REGISTRY_USER / NGCBUILD_REGISTRY_PASSWORD, or None to use the Docker config's."""
    user, password = environ.get("NGCBUILD_REGISTRY_USER"), environ.get("NGCBUILD_REGISTRY_PASSWORD")
    if bool(user) != bool(password):
        raise UserError("set both NGCBUILD_REGISTRY_USER and NGCBUILD_REGISTRY_PASSWORD, or neither")
    return {"username": user, "password": password} if user else None


def is_transient(message: str) -> bool:
    text = message.lower()
    return not any(word in text for word in DENIED) and any(word in text for word in TRANSIENT)


def push_release(project: Project, name: str, host: str, out=sys.stdout, sleep=time.sleep, cache: bool = False) -> dict:
    release = load_release(project, name).release
    directory = project.out(name)
    record = read_record(directory)
    host = host.rstrip("/")
    if not host or "/" in host:
        raise UserError(f"--registry {host!r}: expected HOST[:PORT] such as localhost:5000")
    auth = credentials()
    client = connect()
    image_id = record["image_id"]
    try:
        client.inspect_image(image_id)
    except docker.errors.ImageNotFound:
        raise UserError(f"image {image_id[:19]} of {name} is gone; "
                        f"rebuild it (`invoke build --release {name}`)") from None

    repository = f"{host}/{release.image.repository}"
    tags = sorted({ref.rsplit(":", 1)[1] for ref in record["tags"]})
    pushed = {}
    for tag in tags:
        client.tag(image_id, repository, tag, force=True)
        ref = f"{repository}:{tag}"
        print(f"pushing {ref}", file=out, flush=True)
        stream = _push_with_retries(client, repository, tag, auth, out, sleep)
        served = _digest_served(client, ref, auth)
        if served != stream.digest:
            raise PushFailed(f"{ref}: the push reported {stream.digest} but the registry serves {served}; "
                             "the local image is kept, nothing was recorded")
        pushed[ref] = {"digest": stream.digest, "size": stream.size, "registry": host,
                       "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        print(f"pushed {ref}@{stream.digest} (verified against the registry)", file=out, flush=True)
    record.setdefault("pushed", {}).update(pushed)
    record["tags"] = sorted(set(record["tags"]) | set(pushed))
    if cache:
        record["cache_pushed"] = push_cache_images(client, host, release, record, auth, out, sleep)
    write_record(directory, record)
    return pushed


def push_cache_images(client, host: str, release, record: dict, auth, out, sleep=time.sleep) -> dict:
    """Every stage image of the build under its cache tag (layer_cache.py); ref -> digest."""
    from .layer_cache import tag_stages

    stages = record.get("stages") or {}
    if not stages:
        print(f"no stage images recorded for {release.release} (its image was reused, not built here); "
              "no cache pushed (`invoke build --force` builds and records them)", file=out, flush=True)
        return {}
    pushed = {}
    for ref in tag_stages(client, host, release, record["platform"], stages):
        repository, tag = ref.rsplit(":", 1)
        print(f"pushing cache image {ref}", file=out, flush=True)
        pushed[ref] = _push_with_retries(client, repository, tag, auth, out, sleep).digest
    return pushed


def _push_with_retries(client, repository: str, tag: str, auth, out, sleep) -> PushStream:
    last = ""
    for attempt in range(1, ATTEMPTS + 1):
        stream, progress = PushStream(), TransferProgress(out, verb="pushing")
        try:
            for event in client.push(repository, tag=tag, stream=True, decode=True, auth_config=auth):
                progress.feed(event)  # layers: bytes and rate on a terminal, a line each in a log
                lines = stream.feed(event)
                if not event.get("id") or stream.error:
                    for line in lines:
                        print(line, file=out, flush=True)
        except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, docker.errors.APIError) as exc:
            stream.error = str(exc)
        progress.done()
        if not stream.error and stream.digest:
            return stream
        last = stream.error or "the push ended without a digest"
        if any(word in last.lower() for word in DENIED):
            raise PushFailed(f"{repository}:{tag}: the registry rejected the credentials ({_first_line(last)}); "
                             "log in with `docker login` or set NGCBUILD_REGISTRY_USER/NGCBUILD_REGISTRY_PASSWORD")
        if attempt == ATTEMPTS or not is_transient(last):
            break
        delay = BACKOFF_S * 2 ** (attempt - 1)
        print(f"push failed ({_first_line(last)}); retry {attempt}/{ATTEMPTS - 1} in {delay:.0f}s",
              file=out, flush=True)
        sleep(delay)
    hint = ""
    if "connection refused" in last.lower():
        hint = f"; is a registry running at {repository.split('/', 1)[0]}?"
    raise PushFailed(f"{repository}:{tag}: push failed after {attempt} attempt(s): {_first_line(last)}{hint}; "
                     "the local image is kept")


def _digest_served(client, ref: str, auth) -> str:
    """The manifest digest the registry serves for `ref` (read through the engine's registry client)."""
    try:
        return client.inspect_distribution(ref, auth_config=auth)["Descriptor"]["digest"]
    except docker.errors.APIError as exc:
        raise PushFailed(f"{ref}: pushed, but the registry cannot be read back: {exc.explanation or exc}; "
                         "the local image is kept, nothing was recorded") from None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
