"""Push a built release to a registry and prove it arrived: the digest the registry serves for each
tag (the sha256 of the manifest's bytes, read through registry/client.py) must equal the digest the
push wrote. Transient failures are retried with backoff. `push_and_read_back` is the one way
anything of ngcbuild pushes a release's image (push, publish): ngcbuild's own, its layers compressed
deterministically (image/blobs.py); only the layer cache's stage images (`--cache-to`, which
the engine pulls back as they are) go through the engine's push."""

from __future__ import annotations

import hashlib
import re
import sys
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import docker
import requests
import urllib3

from ngcbuild.core.errors import PushFailed, RecordDamaged, UserError, excerpt
from ngcbuild.core.http import ATTEMPTS, BACKOFF_S
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.names import ImageNames
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef, ReferenceProblem, registry_host
from ngcbuild.core.scratch import scratch_folder
from ngcbuild.core.text import safe
from ngcbuild.engine.client import connect
from ngcbuild.engine.events import PushStream
from ngcbuild.engine.release_image import recipe_of
from ngcbuild.engine.transfer import TransferProgress
from ngcbuild.image.blobs import Blob, ImageBlobs
from ngcbuild.image.media import DOCKER_MANIFEST
from ngcbuild.publish.blob_sender import BlobSender
from ngcbuild.publish.layer_blobs import image_blobs
from ngcbuild.registry.auth import LOGIN_HELP, keychain
from ngcbuild.registry.client import BlobMismatch, DigestMismatch, Registry, RegistryError, digest_of, is_digest
from ngcbuild.workspace.record import read_record, record_path, require, write_record
from ngcbuild.workspace.sections import BuildRecord, Pushed, utc_timestamp

# ATTEMPTS and BACKOFF_S: the one schedule of retries (core/http.py)
# A status code counts only as a number of its own ("HTTP 403", "503 Service Unavailable"): the digits
# inside a port, a digest or a name are not one (a registry on 127.0.0.1:40369 refusing connections was
# taken for a registry rejecting the credentials).
_STATUS = r"(?<![\w:.])(?:{})(?![\w.])"
TRANSIENT = re.compile("|".join((r"connection refused", r"connection reset", r"i/o timeout", r"timeout", r"\beof\b",
                                 _STATUS.format("502|503|504"), r"500 internal server error", r"broken pipe",
                                 r"temporarily unavailable", r"tls handshake",
                                 # our own HTTP layer's words (core/http.fetch) for a connection that failed or
                                 # was cut before the answer: a registry restarting, a proxy dropping us
                                 r"cannot be reached after", r"remote end closed connection")))
MAX_CONFIG = 16 << 20  # an image config read back from the registry (a few kB; a long history is larger)
_INFLATE_BLOCK = 1 << 20  # what one step of decompressing a layer read back may produce
DENIED = re.compile("|".join((r"unauthorized", r"authentication required", r"denied", r"forbidden",
                              _STATUS.format("401|403"))))


def is_denied(message: str) -> bool:
    return DENIED.search(message.lower()) is not None


def is_transient(message: str) -> bool:
    return not is_denied(message) and TRANSIENT.search(message.lower()) is not None


def push_release(project: Project, name: str, host: str, out=sys.stdout, sleep=time.sleep,
                 cache_to: str | None = None) -> dict:
    """Every tag of R to `host`; with `cache_to` (as `build --cache-to`), R's layer cache to that registry too."""
    from ngcbuild.manifest.loader import load_release

    host = registry_host(host)
    cache_to = registry_host(cache_to, "--cache-to") if cache_to is not None else None
    auth = keychain().engine_auth(host)  # for this host alone
    release = load_release(project, name).release
    directory = project.out(name)
    record = read_record(directory)
    image_id = require(record.build.image_id, directory, "image_id", "the id of the built image")
    known = require(record.build.tags, directory, "tags", "a list of image references")
    tags = sorted({record_tag(ref, directory) for ref in known})
    client = connect()
    try:
        client.inspect_image(image_id)
    except docker.errors.ImageNotFound:
        raise UserError(f"image {image_id[:19]} of {name} is gone; "
                        f"rebuild it (`invoke build --release {name}`)") from None

    repository = f"{host}/{release.image.repository}"
    registry = Registry(host)
    pushed = {}
    with registry_tags(client, image_id, out) as tag_for_push:
        refs = [tag_for_push(repository, tag) for tag in tags]
        print(f"pushing {', '.join(refs)}", file=out, flush=True)
        before = [entry.digest for entry in record.pushed.values() if entry.registry == host and entry.digest]
        uploaded = push_and_read_back(client, registry, release.image.repository, tags, image_id, out, sleep, before)
        for ref in refs:
            pushed[ref] = Pushed.of(digest=uploaded.digest, size=uploaded.size, registry=host, at=utc_timestamp(),
                                    image_id=uploaded.image_id)
            print(f"pushed {ref}@{uploaded.digest} (verified against the registry)", file=out, flush=True)
    record = replace(record, pushed={**record.pushed, **pushed},
                     build=replace(record.build, tags=sorted(set(known) | set(pushed))))
    if cache_to is not None:
        cache_auth = auth if cache_to == host else keychain().engine_auth(cache_to)
        record = replace(record, cache_pushed=push_cache_images(client, cache_to, ImageNames.of(release),
                                                                record.build, cache_auth, out, sleep))
    write_record(directory, record)
    return pushed


def record_tag(ref, directory) -> str:
    """The tag of an image reference the record lists, or a clean error naming the record."""
    try:
        tag = ImageRef.parse(ref).tag
    except ReferenceProblem as exc:
        raise RecordDamaged(record_path(directory), "tags", f"{exc}; rebuild to rewrite the record") from None
    if tag is None:
        raise RecordDamaged(record_path(directory), "tags", f"{excerpt(ref)} has no tag; rebuild to rewrite the record")
    return tag


@contextmanager
def registry_tags(client, image_id: str, out):
    """Tags `image_id` for pushing; when the push fails, every tag it added is removed again and every
    tag it moved goes back to its image, so a failed push leaves the engine's tags as they were."""
    before: dict[ImageRef, str | None] = {}

    def tag_for_push(repository: str, tag: str) -> str:
        ref = ImageRef(repository, tag)
        if ref not in before:
            try:
                before[ref] = client.inspect_image(str(ref))["Id"]
            except docker.errors.ImageNotFound:
                before[ref] = None
        client.tag(image_id, repository, tag, force=True)
        return str(ref)

    try:
        yield tag_for_push
    except BaseException:
        for ref, previous in before.items():
            if previous == image_id:
                continue
            try:
                if previous is None:
                    client.remove_image(str(ref), noprune=True)
                else:
                    client.tag(previous, ref.repository, ref.tag, force=True)
            except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
                print(f"warning: could not restore the tag {ref} after the failed push ({exc})", file=out, flush=True)
        raise


def push_layer_cache(project: Project, names: ImageNames, host: str, out=sys.stdout) -> dict:
    """`build --cache-to HOST`, after the build (whose names it is given: no second load of the
    release): the stage images of R's build under their cache tags, recorded as `cache_pushed`."""
    host = registry_host(host, "--cache-to")
    directory = project.out(names.release)
    record = read_record(directory)
    pushed = push_cache_images(connect(), host, names, record.build, keychain().engine_auth(host), out)
    write_record(directory, replace(record, cache_pushed=pushed))
    return pushed


def push_cache_images(client, host: str, names: ImageNames, build: BuildRecord, auth, out, sleep=time.sleep) -> dict:
    """Every stage image of the build under its cache tag (layer_cache.py); ref -> digest."""
    from ngcbuild.engine.layer_cache import tag_stages

    stages = build.stages
    if not stages:
        print(f"no stage images recorded for {names.release} (its image was reused, not built here); "
              "no cache pushed (`invoke build --force` builds and records them)", file=out, flush=True)
        return {}
    pushed = {}
    for ref in tag_stages(client, host, names, build.platform, stages):
        parsed = ImageRef.parse(ref)
        print(f"pushing cache image {ref}", file=out, flush=True)
        pushed[ref] = push_with_retries(client, parsed.repository, parsed.tag, auth, out, sleep).digest
    return pushed


class _AttemptFailed(Exception):
    """One attempt of the engine's push failed, with the engine's words."""


def push_with_retries(client, repository: str, tag: str, auth, out, sleep) -> PushStream:
    """The engine's push of `repository:tag` (the layer cache's stage images), retried as ngcbuild's own."""
    def attempt() -> PushStream:
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
        raise _AttemptFailed(stream.error or "the push ended without a digest")

    return _with_retries(f"{repository}:{tag}", attempt, out, sleep)


@dataclass(frozen=True)
class Uploaded:
    digest: str  # of the manifest written for every tag
    size: int  # of the manifest
    image_id: str  # the release image's (its config's digest): the engine's image made as data (release_image.py)


def push_and_read_back(client, registry: Registry, repository_path: str, tags: list[str], image_id: str, out,
                       sleep, before: list[str] = ()) -> Uploaded:
    """ngcbuild's own push of the engine's `image_id` as `registry.host/repository_path:TAG` for each of `tags`:
    its release image made from the save where it has a recipe (engine/release_image.py), else the image as
    the engine holds it; the layers compressed by ngcbuild (image/blobs.py: the same blobs and manifest digest
    on any engine), each blob sent unless the registry has it, the manifest written under every tag, the whole
    retried on the one schedule; then the manifest each tag serves read back through our own client: its
    bytes must hash to the digest written, whatever a header says. `before`: the digests this image was
    pushed as to this registry (the record's): one it still holds whole is written again under the tags,
    and nothing is sent (an image built elsewhere is not even saved; a release image is made again first,
    its layers found in the layer store: nothing compressed)."""
    repository = f"{registry.host}/{repository_path}"
    shown = f"{repository}:{tags[0]}"
    say = printer(out)
    uploader = registry.without_retries()
    # the registry asked first (a blob by the engine's image id: for an image built elsewhere, its config): one
    # that is down or refuses the login fails before the image is saved or a layer compressed
    config_held = _with_retries(shown, lambda: uploader.has_blob(repository_path, image_id), out, sleep)
    recipe = recipe_of(client.inspect_image(image_id))
    # each layer's blob sent as soon as it is made, beside the rest (blob_sender.py); the upload below does the rest
    with scratch_folder("ngcbuild-push-") as tmp, BlobSender(registry.without_retries(), repository_path,
                                                              say) as early:
        blobs, release_id, sent_early = None, image_id, frozenset()
        if recipe is not None:  # the release image made from the save (release_image.py): its id known from here
            blobs = image_blobs(client, image_id, Path(tmp), say, ready=early.offer)
            sent_early = early.finish()
            release_id = blobs.image_id
            config_held = _with_retries(shown, lambda: uploader.has_blob(repository_path, release_id), out, sleep)
        held = None
        if config_held and before:
            held = _with_retries(shown, lambda: _held_whole(uploader, repository_path, release_id, before), out,
                                 sleep)
        if held is not None:
            lacked = f"the {len(sent_early)} blobs it lacked sent" if sent_early else "nothing sent"
            say(f"    {repository} holds this image already (manifest {digest_of(held)}): every layer read back to "
                f"its diff id, {lacked}")

            def write_tags() -> None:
                for tag in tags:
                    uploader.put_manifest(repository_path, tag, held, DOCKER_MANIFEST)

            _with_retries(shown, write_tags, out, sleep)
            body = held
        else:
            if blobs is None:
                blobs = image_blobs(client, image_id, Path(tmp), say, ready=early.offer)
                sent_early = early.finish()
            body = _upload(uploader, repository, repository_path, tags, blobs, out, sleep, sent_early)
    digest = digest_of(body)
    for tag in tags:
        ref = f"{repository}:{tag}"
        try:
            served = registry.digest(repository_path, tag)
        except RegistryError as exc:
            raise PushFailed(f"{ref}: pushed, but reading it back failed: {_after(str(exc), registry.host)}; the "
                             "local image is kept, nothing was recorded") from None
        if served != digest:
            raise PushFailed(f"{ref}: the push wrote {digest} but the registry serves {served or 'nothing'}; "
                             "the local image is kept, nothing was recorded")
    return Uploaded(digest, len(body), release_id)


def _held_whole(uploader: Registry, repository_path: str, image_id: str, before: list[str]) -> bytes | None:
    """The bytes of the first manifest of `before` the registry still serves (read by digest: the bytes
    hash to it) that is, byte for byte, the manifest this push would write for `image_id` and whose every
    blob the registry holds whole; None when none is (the push then saves, compresses and sends).

    The record that names `before` is input, and so is all the registry says, so each is proved: the
    config is the image's own bytes (read back: they hash to the image id), the manifest is the one our
    fixed form writes for that config and its layer descriptors (image/blobs.py), it names one layer for
    each of the config's diff ids (the same blob where a diff id repeats, another where it differs), each
    blob is there with its digest and size (a HEAD each), and each layer blob is read back through a
    decompressor to the diff id it stands for: a manifest with this image's config and no layers, fewer,
    or another image's layers is not this image held whole. The read-back costs the image's download once
    (each blob under its own deadline, sized to it); never a save or a compression."""
    for digest in dict.fromkeys(before):
        served = uploader.manifest(repository_path, digest)
        if served is None or served.media_type != DOCKER_MANIFEST:
            continue
        image = served.image()
        if image.config.digest != image_id or image.config.size > MAX_CONFIG:
            continue
        try:
            config = uploader.blob(repository_path, image_id, MAX_CONFIG)  # its bytes hash to the image id
        except BlobMismatch:  # other bytes under the image's id: sent again by the push
            continue
        if config is None or len(config) != image.config.size:
            continue
        layers = tuple(Blob(layer.digest, layer.size, None) for layer in image.layers)
        if ImageBlobs(config, layers).manifest() != served.body:
            continue  # not the manifest our push writes for this config and these blobs
        diff_ids = _diff_ids(config)
        if diff_ids is None or len(diff_ids) != len(layers):
            continue
        pairs = dict(zip(diff_ids, layers, strict=True))
        if len(set(zip(diff_ids, layers, strict=True))) != len(pairs) or len(set(pairs.values())) != len(pairs):
            continue  # a diff id named with two blobs, or one blob standing for two diff ids
        if not all(uploader.holds_blob(repository_path, blob.digest, blob.size) for blob in pairs.values()):
            continue
        if all(_layer_is(uploader, repository_path, blob, diff_id) for diff_id, blob in pairs.items()):
            return served.body
    return None


def _diff_ids(config: bytes) -> list[str] | None:
    """The config's rootfs diff ids, or None when it has no list of sha256 digests there."""
    try:
        document = load_json(config, "the image's config")
    except ValueError:
        return None
    rootfs = document.get("rootfs") if isinstance(document, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(isinstance(d, str) and is_digest(d) for d in diff_ids):
        return None
    return diff_ids


def _layer_is(uploader: Registry, repository_path: str, blob: Blob, diff_id: str) -> bool:
    """Whether the registry's blob (its digest and size checked as it streams) is one gzip stream of the
    layer `diff_id`: what it decompresses to hashes to that diff id. Never more than a block held."""
    plain = hashlib.sha256()
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    wrong = False  # not one gzip stream: damaged, or bytes after its end

    def take(chunk: bytes) -> None:
        nonlocal wrong
        data = chunk
        try:
            while data and not wrong:
                if inflate.eof:
                    wrong = True
                    break
                plain.update(inflate.decompress(data, _INFLATE_BLOCK))
                data = inflate.unconsumed_tail or inflate.unused_data
        except zlib.error:
            wrong = True

    try:
        uploader.read_blob(repository_path, blob.digest, blob.size, take)
    except BlobMismatch:
        return False
    return not wrong and inflate.eof and "sha256:" + plain.hexdigest() == diff_id


def _upload(uploader: Registry, repository: str, repository_path: str, tags: list[str], blobs: ImageBlobs, out,
            sleep, sent_early: frozenset[str] = frozenset()) -> bytes:
    """Each blob the registry lacks sent (but those `sent_early`, while the image was made: blob_sender.py), the
    manifest written under every tag: its bytes."""
    shown = f"{repository}:{tags[0]}"
    say = printer(out)
    body = blobs.manifest()

    def upload() -> int:
        sent = 0
        for blob in dict.fromkeys(blobs.layers):
            if blob.digest in sent_early:
                sent += 1
            elif uploader.put_blob_file(repository_path, blob.path, blob.digest, blob.size):
                sent += 1
                say(f"    sent {blob.digest[:19]} ({blob.size / 1e6:.1f} MB)")
        uploader.put_blob(repository_path, blobs.config)
        for tag in tags:
            uploader.put_manifest(repository_path, tag, body, DOCKER_MANIFEST)
        return sent

    sent = _with_retries(shown, upload, out, sleep)
    layers = len(set(blobs.layers))
    say(f"    {layers} layers: {sent} sent, {layers - sent} already in the registry; manifest {digest_of(body)}")
    return body


def _with_retries(ref: str, action, out, sleep):
    """`action()`, again on the one schedule when the registry failed it transiently (unreachable, a 5xx,
    a cut connection: what was stored stays, and a blob the registry has is not sent again); at once a
    PushFailed when it refused the credentials or said something wrong (a digest not the bytes'),
    which retrying cannot mend."""
    host = ImageRef.parse(ref).host
    last = ""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return action()
        except DigestMismatch as exc:
            said = str(exc).removeprefix(f"{ref}: ")  # it names the reference too: once is enough
            raise PushFailed(f"{ref}: {_after(said, host)}; the local image is kept, nothing was recorded") from None
        except RegistryError as exc:
            last = _after(str(exc), host)
        except _AttemptFailed as exc:
            last = str(exc)
        if is_denied(last):
            raise PushFailed(f"{ref}: the registry rejected the credentials ({_first_line(last)}); {LOGIN_HELP}")
        if attempt == ATTEMPTS or not is_transient(last):
            break
        delay = BACKOFF_S * 2 ** (attempt - 1)
        print(f"push failed ({_first_line(last)}); retry {attempt}/{ATTEMPTS - 1} in {delay:.0f}s",
              file=out, flush=True)
        sleep(delay)
    hint = f"; is a registry running at {host}?" if "connection refused" in last.lower() else ""
    raise PushFailed(f"{ref}: push failed after {attempt} attempt(s): {_first_line(last)}{hint}; "
                     "the local image is kept")


def _after(message: str, host: str) -> str:
    return message[len(host) + 2:] if message.startswith(f"{host}: ") else message


def _first_line(text: str) -> str:
    """The first line of the engine's message, which may quote the registry's words: escaped."""
    return safe(text.strip().splitlines()[0] if text.strip() else text, 300)
