"""ngcbuild's own push (publish/push.py, issue 41) against a registry that misbehaves on purpose: an
upload sent to another host or to no address at all, a manifest the registry says is another digest, a
tag read back as other bytes, error bodies nested 100 000 deep or full of escape sequences, an answer
declaring 10 GB. Each is `invoke push --release dev` as a user runs it: exit 1, one line naming what the
registry did, nothing recorded, nothing sent where it was not asked for; and a control case, the
same push to an honest fake, which must succeed (else the cases prove nothing).

The engine is a fake of its own (`TinyEngine`: a recorded image of one small layer, answered on a Unix
socket as the engine's API answers ping, version, inspect, save, tag and untag): the corpus runs with
no engine, and what is under test is the push's reading of the registry, not the engine's save.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import io
import json
import shutil
import socketserver
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ngcbuild.image.blobs import Blob, ImageBlobs, compress
from ngcbuild.image.media import DOCKER_CONFIG, DOCKER_LAYER, DOCKER_MANIFEST
from ngcbuild.image.recipe import RECIPE_LABEL, Recipe, base_chain

from . import fakes
from .fakes import REPOSITORY, Content, FakeRegistry, FakeServer, digest_of, other_host_available
from .hostile import HostileCase, dev, setup_all, write

RELEASE_TAG = "nvcr.io/nvidia/pytorch:dev-py3"
UPLOADS = f"/v2/{REPOSITORY}/blobs/uploads/"
TAG_PATH = f"/v2/{REPOSITORY}/manifests/dev-py3"
DEEP = b'{"errors": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _tiny_image() -> tuple[str, str, bytes]:
    """(image id, diff id, the engine's save of it): one layer holding one file, a config naming it."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        body = b"a tiny image of the hostile push cases\n"
        info = tarfile.TarInfo("etc/ngcbuild-tiny")
        info.size, info.mtime = len(body), 1_700_000_000
        tar.addfile(info, io.BytesIO(body))
    diff_id = "sha256:" + hashlib.sha256(layer.getvalue()).hexdigest()
    config = json.dumps({"architecture": "amd64", "os": "linux", "created": "2026-01-01T00:00:00Z",
                         "config": {"Labels": {"io.ngcbuild.release": "dev"}},
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]}}, sort_keys=True).encode()
    image_id = "sha256:" + hashlib.sha256(config).hexdigest()
    saved = io.BytesIO()
    with tarfile.open(fileobj=saved, mode="w") as tar:  # as docker 20.10 lays a save out
        for name, data in ((f"{'1' * 64}/VERSION", b"1.0"), (f"{'1' * 64}/layer.tar", layer.getvalue()),
                           (f"{image_id[7:]}.json", config),
                           ("manifest.json", json.dumps([{"Config": f"{image_id[7:]}.json", "RepoTags": [RELEASE_TAG],
                                                          "Layers": [f"{'1' * 64}/layer.tar"]}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return image_id, diff_id, saved.getvalue()


IMAGE_ID, DIFF_ID, SAVED = _tiny_image()


def _ours(layer: bytes) -> tuple[bytes, bytes]:
    """(the layer blob our push compresses `layer` to, the manifest it writes naming the tiny config and it)."""
    blob = io.BytesIO()
    digest, size, _ = compress(io.BytesIO(layer), blob)
    return blob.getvalue(), ImageBlobs(_CONFIG, (Blob(digest, size, None),)).manifest()


def _held(content: Content, config_digest: str = IMAGE_ID) -> str:
    """What an earlier push of the tiny image left in `content` (the config, the layer blob, the manifest our
    push writes, byte for byte), or, with another config digest, the same manifest of another image."""
    blob, body = _ours(_LAYER)
    content.add_blob(blob)
    content.blobs[IMAGE_ID] = _CONFIG
    body = body.replace(IMAGE_ID.encode(), config_digest.encode())
    return content.add_manifest(body, DOCKER_MANIFEST)


def _held_as(layers: list[bytes], indent: int = 3, size_of=len) -> callable:
    """A manifest of the tiny image's config (stored too) in `content`, naming `layers` as blobs (each
    stored, gzipped our way): no layers, another image's, two: each not the image held whole."""
    def before(content: Content) -> str:
        content.blobs[IMAGE_ID] = _CONFIG
        named = []
        for layer in layers:
            blob = io.BytesIO()
            digest, size, _ = compress(io.BytesIO(layer), blob)
            content.add_blob(blob.getvalue())
            named.append({"mediaType": DOCKER_LAYER, "size": size_of(blob.getvalue()), "digest": digest})
        body = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                           "config": {"mediaType": DOCKER_CONFIG, "size": len(_CONFIG), "digest": IMAGE_ID},
                           "layers": named}, indent=indent).encode()
        return content.add_manifest(body, DOCKER_MANIFEST)
    return before


def _held_but(damage) -> callable:
    """The image held whole (`_held`), then `damage(content, layer_digest)` done to the registry's copy."""
    def before(content: Content) -> str:
        digest = _held(content)
        damage(content, digest_of(_ours(_LAYER)[0]))
        return digest
    return before


def _layer_gone(content: Content, layer: str) -> None:
    del content.blobs[layer]


def _layer_other_bytes(content: Content, layer: str) -> None:
    """The layer blob replaced by bytes of its size that are not it (a HEAD cannot tell: only reading can)."""
    content.blobs[layer] = bytes(len(content.blobs[layer]))


def _config_other_bytes(content: Content, layer: str) -> None:
    content.blobs[IMAGE_ID] = _CONFIG.replace(b'"os": "linux"', b'"os": "other"')


class TinyEngine:
    """The engine's API for one image, on a Unix socket in a short folder of its own (a socket's path has
    at most 107 characters): what a push asks of it, and 404 for anything else."""

    def __init__(self, saved: bytes = SAVED, labels: dict | None = None):
        self.saved = saved
        self.labels = labels or {}  # the inspect answer's labels: a recipe (image/recipe.py), whole or damaged
        self.folder = Path(tempfile.mkdtemp(prefix="ngcbuild-tiny-", dir="/tmp"))
        self.socket = self.folder / "engine.sock"
        self.tags: set[str] = {RELEASE_TAG}
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                try:
                    engine.answer(self)
                except OSError:
                    self.close_connection = True

            do_GET = do_HEAD = do_POST = do_DELETE = _any

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(str(self.socket), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def known(self, ref: str) -> bool:
        return ref in (IMAGE_ID, IMAGE_ID[7:]) or ref in self.tags

    def answer(self, handler) -> None:
        url = urlsplit(handler.path)
        parts = url.path.strip("/").split("/")
        if parts and parts[0].startswith("v1."):
            parts = parts[1:]
        json_of = {"Content-Type": "application/json"}
        if parts == ["_ping"]:
            return fakes.send(handler, 200, b"OK", {"Api-Version": "1.41"})
        if parts == ["version"]:
            return fakes.send(handler, 200, json.dumps({"ApiVersion": "1.41", "MinAPIVersion": "1.12",
                                                        "Version": "20.10.24"}).encode(), json_of)
        if len(parts) >= 3 and parts[0] == "images":
            ref, action = unquote("/".join(parts[1:-1])), parts[-1]
            if handler.command == "DELETE":
                ref = unquote("/".join(parts[1:]))
                self.tags.discard(ref)
                return fakes.send(handler, 200, b"[]", json_of)
            if not self.known(ref):
                return fakes.send(handler, 404, json.dumps({"message": f"No such image: {ref}"}).encode(), json_of)
            if action == "json":
                return fakes.send(handler, 200, json.dumps({
                    "Id": IMAGE_ID, "RepoTags": sorted(self.tags), "Created": "2026-01-01T00:00:00Z",
                    "Config": {"Labels": self.labels}, "RootFS": {"Type": "layers", "Layers": [DIFF_ID]}}).encode(), json_of)
            if action == "get":
                if callable(self.saved):  # a save answered otherwise: stalled, trickled
                    return self.saved(handler)
                return fakes.send(handler, 200, self.saved, {"Content-Type": "application/x-tar"})
            if action == "tag" and handler.command == "POST":
                query = dict(pair.split("=", 1) for pair in url.query.split("&") if "=" in pair)
                self.tags.add(f"{unquote(query.get('repo', ''))}:{unquote(query.get('tag', 'latest'))}")
                return fakes.send(handler, 201, b"", json_of)
        return fakes.send(handler, 404, b'{"message": "not in this engine"}', json_of)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _record(project, outside, pushed: dict | None = None):
    write("build/dev/record.json", json.dumps({
        "release": "dev", "platform": "linux/amd64", "image_id": IMAGE_ID, "context_sha256": "0" * 64,
        "tags": [RELEASE_TAG], "pushed": pushed or {}}))(project, outside)


def pushing(misbehave=None, before=None, saved: bytes = SAVED, labels: dict | None = None):
    """A case's servers: the tiny engine, the fake registry REG (storing what is pushed), and, for
    `misbehave(registry, outside) -> [servers]`, what it does otherwise and any server it points at.
    `before(content) -> digest`: what an earlier push left in the registry, and the record says so.
    `saved`: what the engine's save of the image is (the tiny image's own, or a broken one); `labels`: the
    labels its inspect answer shows (a release-image recipe)."""
    def serve(project, outside):
        (outside / "tmp").mkdir()  # the push's $TMPDIR, where its scratch folders go
        engine = TinyEngine(saved, labels)
        registry = FakeRegistry(outside / "registry.log", Content())
        others = misbehave(registry, outside) if misbehave is not None else []
        if before is not None:  # the record of that push names the registry, whose address is known only now
            digest = before(registry.content)
            _record(project, outside, {f"{registry.address}/{REPOSITORY}:dev-py3": {
                "digest": digest, "registry": registry.address, "at": "2026-11-01T00:00:00Z"}})
        return {"REG": registry.address, "TINYENGINE": str(engine.socket)}, [engine, registry, *others]
    return serve


def _pushed(project) -> dict:
    return json.loads((project.root / "build" / "dev" / "record.json").read_text()).get("pushed") or {}


def nothing_recorded(project, outside) -> str | None:
    pushed = _pushed(project)
    return f"the record lists a push: {sorted(pushed)}" if pushed else None


def recorded_as_stored(project, outside) -> str | None:
    """The control: the record's digest is the manifest the registry stored under the tag, which names the
    tiny image's config and one layer blob the registry holds."""
    requests = [line for line in (outside / "registry.log").read_text().splitlines() if '"PUT"' in line]
    pushed = _pushed(project)
    if len(pushed) != 1 or len(requests) < 3:
        return f"recorded {sorted(pushed)} after {len(requests)} PUTs"
    (entry,) = pushed.values()
    stored = outside / "stored" / entry["digest"].removeprefix("sha256:")
    if not stored.exists():
        return f"the record's digest {entry['digest'][:19]} is no manifest the registry stored"
    manifest = json.loads(stored.read_bytes())
    if manifest["config"]["digest"] != IMAGE_ID or len(manifest["layers"]) != 1:
        return f"the manifest pushed names {manifest['config']['digest'][:19]} and {len(manifest['layers'])} layers"
    return None


def _keep_stored(registry, outside):
    """The control's registry, honest; each manifest it stores also written to OUTSIDE/stored/ (by digest)."""
    folder = outside / "stored"
    folder.mkdir()
    add = registry.content.add_manifest

    def keeping(body, media_type, tag=None):
        digest = add(body, media_type, tag)
        (folder / digest.removeprefix("sha256:")).write_bytes(body)
        return digest

    registry.content.add_manifest = keeping
    return []


def _swap_held(registry, outside):
    """The manifest an earlier push left, read by its digest, served as other bytes."""
    registry.swap_all = True
    return []


def sent_nothing(project, outside) -> str | None:
    log = (outside / "registry.log").read_text()
    if '"POST"' in log:
        return "a blob upload was opened"
    pushed = _pushed(project)
    if len(pushed) != 1:
        return f"recorded {sorted(pushed)}"
    return None


def pushed_as(digest: str):
    """After a push that did not take the shortcut: the record's digest is the manifest our push writes."""
    def after(project, outside) -> str | None:
        digests = {entry.get("digest") for entry in _pushed(project).values()}
        return None if digests == {digest} else f"recorded {sorted(map(str, digests))}, not our manifest {digest[:19]}"
    return after


def _elsewhere(registry, outside):
    """Uploads sent to a server on 127.0.0.2, which logs whatever reaches it."""
    other = FakeServer(outside / "elsewhere.log", "127.0.0.2")
    registry.raw[f"POST {UPLOADS}"] = lambda handler: fakes.send(handler, 202, b"", {
        "Location": f"http://{other.address}{UPLOADS}stolen"})
    return [other]


def nothing_elsewhere(project, outside) -> str | None:
    log = outside / "elsewhere.log"
    if log.exists() and log.read_text().strip():
        return "a request reached the other host: " + log.read_text().splitlines()[0][:120]
    return nothing_recorded(project, outside)


def _answer(key: str, status: int, body: bytes = b"", headers: dict | None = None):
    def misbehave(registry, outside):
        registry.raw[key] = lambda handler: fakes.send(handler, status, body, headers or {})
        return []
    return misbehave


def _lie(registry, outside):
    registry.lie = "sha256:" + "0" * 64
    return []


def _serve_other(registry, outside):
    """The tag's manifest stored as written, but read back as other bytes."""
    other = json.dumps({"schemaVersion": 2, "layers": []}).encode()
    registry.raw[f"GET {TAG_PATH}"] = lambda handler: fakes.send(handler, 200, other, {
        "Content-Type": "application/vnd.docker.distribution.manifest.v2+json"})
    registry.raw[f"HEAD {TAG_PATH}"] = registry.raw[f"GET {TAG_PATH}"]
    return []


def _huge(registry, outside):
    """The upload's opening answered with a body declared as 10 GB (a few megabytes of it sent)."""
    def answer(handler):
        handler.send_response(202)
        handler.send_header("Location", UPLOADS + "huge")
        handler.send_header("Content-Length", str(10 << 30))
        handler.end_headers()
        for _ in range(64):
            handler.wfile.write(b"x" * 65536)
        handler.close_connection = True
    registry.raw[f"POST {UPLOADS}"] = answer
    return []


def _claims_layer(keeps_lying: bool):
    """The registry already "holds" the layer blob our push writes: a HEAD answers its digest and size, but
    its bytes are zeros of that size (only reading can tell); with `keeps_lying`, served so even after the
    push sends the blob."""
    def misbehave(registry, outside):
        blob = _ours(_LAYER)[0]
        registry.content.blobs[digest_of(blob)] = bytes(len(blob))
        if keeps_lying:
            registry.swap[digest_of(blob)] = bytes(len(blob))
        return _keep_stored(registry, outside)
    return misbehave


def _save_stalled(after: int):
    """The engine's save answered with its headers and `after` bytes of the tiny image's save (None: no
    answer at all, not even its headers), then nothing for longer than any case runs (a read that blocks:
    the client's own limit for one read is an hour)."""
    def answer(handler):
        if after is not None:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/x-tar")
            handler.send_header("Content-Length", str(len(SAVED)))
            handler.end_headers()
            handler.wfile.write(SAVED[:after])
            handler.wfile.flush()
        time.sleep(120)
        handler.close_connection = True
    return answer


def _refuses_first_upload(registry, outside):
    """The registry answers the push's first blob upload (the one sent while the image is still being made:
    publish/blob_sender.py) with a 503, and takes every later one: the upload after sends that blob."""
    upload, refused = registry.upload, []

    def once(handler, prefix):
        if handler.command == "POST" and not refused:
            refused.append(handler.path)
            return fakes.send(handler, 503, b'{"errors": [{"code": "UNAVAILABLE"}]}')
        return upload(handler, prefix)

    registry.upload = once
    return _keep_stored(registry, outside)


def sent_after_a_refusal(check):
    """`check` (the case's control), and the blob upload opened again after the registry refused the first."""
    def after(project, outside) -> str | None:
        posts = (outside / "registry.log").read_text().count('"POST"')
        if posts < 2:
            return f"{posts} blob upload(s) opened: the refused one was not sent again"
        return check(project, outside)
    return after


def layer_sent(project, outside) -> str | None:
    """The layer blob a lying registry claimed was sent after all (a blob upload opened, our manifest recorded)."""
    if '"POST"' not in (outside / "registry.log").read_text():
        return "no blob upload was opened: the claimed layer was taken on the registry's word"
    return recorded_as_stored(project, outside)


def _member(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.GNU_FORMAT)  # base-256 sizes: any size can be claimed


def _damaged_checksum() -> bytes:
    saved = bytearray(SAVED)
    saved[150] ^= 0x55
    return bytes(saved)


# The engine's save as the push reads it (image/save.py): cut short, damaged, or claiming sizes no
# save has. Each: exit 1, one line, nothing sent, nothing recorded.
BROKEN_SAVES = [
    ("push-engine-save-cut-short", SAVED[:len(SAVED) // 2 + 7], ("the save ended",)),
    ("push-engine-save-empty", b"", ("the save ended",)),
    ("push-engine-save-damaged-header", _damaged_checksum(), ("damaged tar header",)),
    ("push-engine-save-config-of-10gb", _member(f"{IMAGE_ID[7:]}.json", 10 << 30), ("says 10737418240 bytes",)),
    ("push-engine-save-pax-header-of-1gb", _member("././@PaxHeader", 1 << 30, tarfile.XHDTYPE),
     ("extended header",)),
    ("push-engine-save-pax-garbage", _member("././@PaxHeader", 8, tarfile.XHDTYPE) + b"99 a=b\n\x1b" + bytes(504),
     ("damaged PAX header",)),
    ("push-engine-save-not-a-tar", b"<html>\x1b[2J502 Bad Gateway</html>" + bytes(2048), ("damaged tar header",)),
    ("push-engine-save-no-config", SAVED[:SAVED.index(IMAGE_ID[7:].encode())], ("the save ended",)),
]


def _save_of(entries: list[tuple[str, bytes | str]]) -> bytes:
    """A save of the given members: bytes are a file's, a str a symbolic link's target."""
    saved = io.BytesIO()
    with tarfile.open(fileobj=saved, mode="w") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if isinstance(data, str):
                info.type, info.linkname = tarfile.SYMTYPE, data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return saved.getvalue()


def _layer_of(saved: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(saved)) as tar:
        return tar.extractfile(f"{'1' * 64}/layer.tar").read()


def _config_of(saved: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(saved)) as tar:
        return tar.extractfile(f"{IMAGE_ID[7:]}.json").read()


def _declaring(config_name: str, layers: list[str]) -> tuple[str, bytes]:
    return ("manifest.json", json.dumps([{"Config": config_name, "RepoTags": [RELEASE_TAG], "Layers": layers}]).encode())


_LAYER = _layer_of(SAVED)
_CONFIG = _config_of(SAVED)
_OTHER_CONFIG = b'{"rootfs": {"type": "layers", "diff_ids": ["' + DIFF_ID.encode() + b'"]}, "os": "other"}'
# A save that declares what it holds (image/save.py) and lies about it, or lays it out as Podman does.
# Each lie: exit 1, one line, nothing sent, nothing recorded.
DECLARING_SAVES = [
    ("push-engine-save-of-another-image", _save_of([
        ("1/layer.tar", _LAYER), ("other.json", _OTHER_CONFIG), _declaring("other.json", ["1/layer.tar"])]),
     ("no image whose config is the inspected image's",)),
    ("push-engine-save-layer-link-out-of-it", _save_of([
        ("1/layer.tar", "../../../etc/passwd"), (f"{IMAGE_ID[7:]}.json", _config_of(SAVED)),
        _declaring(f"{IMAGE_ID[7:]}.json", ["1/layer.tar"])]), ("leads out of the save",)),
    ("push-engine-save-layer-of-other-bytes", _save_of([
        ("1/layer.tar", _LAYER[:-1024] + bytes(1024) + bytes(1024)), (f"{IMAGE_ID[7:]}.json", _config_of(SAVED)),
        _declaring(f"{IMAGE_ID[7:]}.json", ["1/layer.tar"])]), ("not the layer",)),
    ("push-engine-save-declares-nothing", _save_of([
        ("1/layer.tar", _LAYER), (f"{IMAGE_ID[7:]}.json", _config_of(SAVED))]), ("declares no image",)),
    ("push-engine-save-link-loop", _save_of([
        ("a", "b"), ("b", "a"), (f"{IMAGE_ID[7:]}.json", _config_of(SAVED)),
        _declaring(f"{IMAGE_ID[7:]}.json", ["a"])]), ("hops",)),
]
def _chained(kind: bytes, count: int) -> bytes:
    """The tiny image's save behind `count` extended headers in a row (PAX records or GNU long names), each
    naming the first member: a reader that recurses on them, or keeps each, fails; the save reader goes on."""
    body = b"14 path=chain\n" if kind == tarfile.XHDTYPE else b"chain\0"
    header = tarfile.TarInfo("././@PaxHeader" if kind == tarfile.XHDTYPE else "././@LongLink")
    header.size, header.type = len(body), kind
    one = header.tobuf(format=tarfile.USTAR_FORMAT if kind == tarfile.XHDTYPE else tarfile.GNU_FORMAT)
    return (one + body + bytes(-len(body) % 512)) * count + SAVED


# saves whose headers come in chains (issue 54 item 2): read flat, the push goes on (exit 0)
CHAINED_SAVES = [
    ("push-engine-save-2000-pax-headers-in-a-row", _chained(tarfile.XHDTYPE, 2000)),
    ("push-engine-save-2000-gnu-long-names-in-a-row", _chained(tarfile.GNUTYPE_LONGNAME, 2000)),
]
# Podman's layout: each layer a file named by its diff id, `<id>/layer.tar` a link to it (pushed as any other)
PODMAN_SAVE = _save_of([(f"{DIFF_ID[7:]}.tar", _LAYER), (f"{IMAGE_ID[7:]}.json", _config_of(SAVED)),
                        (f"{'1' * 64}/layer.tar", f"../{DIFF_ID[7:]}.tar"),
                        _declaring(f"{IMAGE_ID[7:]}.json", [f"{DIFF_ID[7:]}.tar"])])


def release_recorded(project, outside) -> str | None:
    """The control of the recipe cases: the record binds the engine's image to a release image of its own (its
    `image_id`, not the engine's), and the manifest stored under that digest names it and one layer."""
    pushed = _pushed(project)
    if len(pushed) != 1:
        return f"recorded {sorted(pushed)}"
    (entry,) = pushed.values()
    made = entry.get("image_id")
    if not isinstance(made, str) or made == IMAGE_ID:
        return f"the record's release image is {made!r}, not one made from the engine's {IMAGE_ID[:19]}"
    stored = outside / "stored" / str(entry.get("digest")).removeprefix("sha256:")
    if not stored.exists():
        return "the record's digest is no manifest the registry stored"
    manifest = json.loads(stored.read_bytes())
    if manifest["config"]["digest"] != made or len(manifest["layers"]) != 1:
        return f"the manifest names {manifest['config']['digest'][:19]} and {len(manifest['layers'])} layers"
    return None


def sent_and_recorded_nothing(project, outside) -> str | None:
    if '"POST"' in (outside / "registry.log").read_text():
        return "a blob upload was opened"
    return nothing_recorded(project, outside)


def _recipe(text) -> dict:
    return {RECIPE_LABEL: text}


_WHOLE = Recipe(1_700_000_000, 0, 0, base_chain([])).label()[RECIPE_LABEL]
# A recipe label (image/recipe.py) the engine's inspect answer shows damaged, escaped, huge, of another type, or
# naming layers the image does not have: each exit 1, one line naming the label, nothing sent, nothing recorded.
DAMAGED_RECIPES = [
    ("push-recipe-label-with-escapes", _recipe(_WHOLE.replace("epoch=", "epoch=\x1b[2J\x1b]0;owned\x07")),
     (RECIPE_LABEL,)),
    ("push-recipe-label-with-a-newline", _recipe(_WHOLE + "\nbase=ffffffffffffffff"), (RECIPE_LABEL,)),
    ("push-recipe-label-of-a-megabyte", _recipe("epoch=" + "9" * (1 << 20)), (RECIPE_LABEL,)),
    ("push-recipe-label-option-like", _recipe("--epoch=1 --base-layers=0"), (RECIPE_LABEL,)),
    ("push-recipe-label-a-number", _recipe(1_700_000_000), (RECIPE_LABEL,)),
    ("push-recipe-label-empty", _recipe(""), (RECIPE_LABEL,)),
    ("push-recipe-of-another-base", _recipe(Recipe(1, 0, 1, "f" * 16).label()[RECIPE_LABEL]),
     ("not the base image's", RECIPE_LABEL)),
    ("push-recipe-of-more-base-layers-than-the-image", _recipe(Recipe(1, 0, 9999, base_chain([])).label()[RECIPE_LABEL]),
     ("not the base image's",)),
]


def no_scratch_left(after):
    """`after`, and the case's private $TMPDIR (OUTSIDE/tmp) as empty as before: no scratch folder of the
    push (its save, its compressed layers) outlives it, whether it failed or not."""
    def check(project, outside) -> str | None:
        left = sorted(path.name for path in (outside / "tmp").iterdir())
        if left:
            return f"left in $TMPDIR: {left[:3]}"
        return after(project, outside)
    return check


def push_cases(add_case) -> None:
    klass = "hostile registry (push)"
    setup = setup_all(dev, _record)
    argv = ("push", "--release", "dev", "--registry", "REG")
    env = {"DOCKER_HOST": "unix://TINYENGINE", "TMPDIR": "OUTSIDE/tmp"}

    def add(case: HostileCase) -> None:
        add_case(dataclasses.replace(case, after=no_scratch_left(case.after)))

    add(HostileCase("push-to-an-honest-registry", klass, argv, setup, exit_status=0, serve=pushing(_keep_stored),
                    extra_env=env, after=recorded_as_stored, shows=("(verified against the registry)",)))
    # a retried push: the record names the manifest an earlier push wrote to this registry
    add(HostileCase("push-again-to-a-registry-holding-it-whole", klass, argv, setup, exit_status=0,
                    serve=pushing(before=_held), extra_env=env, after=sent_nothing,
                    shows=("holds this image already",), hides=("compressed layer",)))
    add(HostileCase("push-again-the-manifest-is-another-images", klass, argv, setup, exit_status=0,
                    serve=pushing(before=lambda content: _held(content, "sha256:" + "e" * 64)), extra_env=env,
                    after=pushed_as(digest_of(_ours(_LAYER)[1])), shows=("compressed layer 1/1",), hides=("holds this image already",)))
    # a retried push: what the record names is not the image held whole (its config with no layers, with
    # another image's layer, with this one's twice; a form ours never writes; a layer blob gone, or other
    # bytes of its size; the config other bytes): each pushed again as any push, never "holds this image"
    _, ours = _ours(_LAYER)
    not_held = [
        ("push-again-held-config-but-no-layers", _held_as([])),
        ("push-again-held-config-and-another-images-layer", _held_as([_LAYER[:512] + bytes(len(_LAYER) - 512)])),
        ("push-again-held-config-and-its-layer-twice", _held_as([_LAYER, _LAYER])),
        ("push-again-held-in-another-form", _held_as([_LAYER], indent=2)),
        ("push-again-held-layer-of-another-size", _held_as([_LAYER], size_of=lambda blob: len(blob) + 1)),
        ("push-again-held-layer-blob-gone", _held_but(_layer_gone)),
        ("push-again-held-layer-blob-other-bytes", _held_but(_layer_other_bytes)),
        ("push-again-held-config-other-bytes", _held_but(_config_other_bytes)),
    ]
    for name, before in not_held:
        add(HostileCase(name, klass, argv, setup, exit_status=0, serve=pushing(before=before), extra_env=env,
                        after=pushed_as(digest_of(ours)), shows=("compressed layer 1/1",),
                        hides=("holds this image already",)))
    add(HostileCase("push-again-the-manifest-served-is-other-bytes", klass, argv, setup, exit_status=1,
                    serve=pushing(_swap_held, before=_held), extra_env=env, mentions=("refused",),
                    after=lambda project, outside: None if len(_pushed(project)) == 1 else "the record changed"))
    cases = [
        ("push-upload-location-file", _answer(f"POST {UPLOADS}", 202, b"", {"Location": "file:///etc/passwd"}),
         ("sent elsewhere",)),
        ("push-upload-no-location", _answer(f"POST {UPLOADS}", 202), ("no Location",)),
        ("push-upload-location-option-like", _answer(f"POST {UPLOADS}", 202, b"", {"Location": "--upload-file=/x"}),
         ("sent elsewhere",)),
        ("push-manifest-digest-lie", _lie, ("says the manifest is", "refused")),
        ("push-reads-back-other-bytes", _serve_other, ("the registry serves",)),
        ("push-error-body-deep", _answer(f"PUT {TAG_PATH}", 400, DEEP, {"Content-Type": "application/json"}),
         ("PUT",)),
        ("push-error-body-escapes", _answer(f"PUT {TAG_PATH}", 400, json.dumps(
            {"errors": [{"code": "DENIED\x1b[2J", "message": "\x1b]0;owned\x07 push here instead"}]}).encode(),
            {"Content-Type": "application/json"}), ("PUT",)),
        ("push-upload-answer-10gb", _huge, ("POST blob upload",)),
    ]
    if other_host_available():
        cases.append(("push-upload-to-another-host", _elsewhere, ("sent elsewhere",)))
    for name, saved, says in BROKEN_SAVES:
        add(HostileCase(name, klass, argv, setup, exit_status=1, serve=pushing(_keep_stored, saved=saved),
                        extra_env=env, mentions=says, absent=("\x1b", "Traceback", "compressed layer"),
                        after=nothing_recorded, hides=("retry",)))
    for name, saved, says in DECLARING_SAVES:  # its layers may be compressed before the lie is found: never sent
        add(HostileCase(name, klass, argv, setup, exit_status=1, serve=pushing(_keep_stored, saved=saved),
                        extra_env=env, mentions=says, absent=("\x1b", "Traceback"),
                        after=nothing_recorded, hides=("retry",)))
    for name, saved in CHAINED_SAVES:
        add(HostileCase(name, klass, argv, setup, exit_status=0, serve=pushing(_keep_stored, saved=saved),
                        extra_env=env, after=recorded_as_stored, absent=("Traceback", "RecursionError"),
                        shows=("(verified against the registry)",)))
    add(HostileCase("push-from-a-podman-save", klass, argv, setup, exit_status=0,
                    serve=pushing(_keep_stored, saved=PODMAN_SAVE), extra_env=env, after=recorded_as_stored,
                    shows=("(verified against the registry)",)))
    # the release image made where it leaves (issue 52): a whole recipe is the control, the rest one line each
    add(HostileCase("push-a-recipe-image-sends-its-release-image", klass, argv, setup, exit_status=0,
                    serve=pushing(_keep_stored, labels=_recipe(_WHOLE)), extra_env=env, after=release_recorded,
                    shows=("(verified against the registry)",)))
    for name, labels, says in DAMAGED_RECIPES:
        add(HostileCase(name, klass, argv, setup, exit_status=1, serve=pushing(_keep_stored, labels=labels),
                        extra_env=env, mentions=says, absent=("\x1b", "Traceback"),
                        after=sent_and_recorded_nothing, hides=("retry",)))
    # the fallback push (no earlier push recorded): a layer the registry claims at its digest and size is
    # read back before it is skipped; other bytes get it sent, and a registry that keeps them is a failure
    add(HostileCase("push-layer-claimed-with-other-bytes-is-sent", klass, argv, setup, exit_status=0,
                    serve=pushing(_claims_layer(False)), extra_env=env, after=layer_sent,
                    shows=("1 sent, 0 already in the registry",)))
    # a blob sent while the image is made (publish/blob_sender.py) that the registry refuses is sent by the
    # upload after, on its first attempt: no retry shown, the push recorded
    add(HostileCase("push-first-upload-refused-is-sent-by-the-upload-after", klass, argv, setup, exit_status=0,
                    serve=pushing(_refuses_first_upload), extra_env=env, hides=("retry", "Traceback"),
                    after=sent_after_a_refusal(recorded_as_stored), shows=("(verified against the registry)",)))
    add(HostileCase("push-first-upload-refused-of-a-release-image", klass, argv, setup, exit_status=0,
                    serve=pushing(_refuses_first_upload, labels=_recipe(_WHOLE)), extra_env=env,
                    hides=("retry", "Traceback"), after=sent_after_a_refusal(release_recorded),
                    shows=("(verified against the registry)",)))
    add(HostileCase("push-layer-claimed-with-other-bytes-after-sending", klass, argv, setup, exit_status=1,
                    serve=pushing(_claims_layer(True)), extra_env=env, mentions=("before and after it was sent",),
                    absent=("Traceback",), after=nothing_recorded, hides=("retry",)))
    # a save the engine never answers, or stalls in after 700 bytes: cut by the save's one deadline (here
    # $NGCBUILD_HTTP_DEADLINE_S, the most any one request may take), not by the client's hour per read
    for name, after in (("push-save-never-answered", None), ("push-save-stalls-after-700-bytes", 700)):
        add(HostileCase(name, klass, argv, setup, exit_status=1, serve=pushing(_keep_stored, saved=_save_stalled(after)),
                        extra_env={**env, "NGCBUILD_HTTP_DEADLINE_S": "4"}, time_bound=40,
                        mentions=("not whole within 4s", "NGCBUILD_HTTP_DEADLINE_S"), absent=("Traceback",),
                        after=nothing_recorded, hides=("retry",)))
    for name, misbehave, says in cases:
        check = nothing_elsewhere if misbehave is _elsewhere else nothing_recorded
        add(HostileCase(name, klass, argv, setup, exit_status=1, serve=pushing(misbehave), extra_env=env,
                        mentions=says, absent=("\x1b", "RecursionError", "Traceback", "dev-py3: 127.0.0.1"),
                        after=check,
                        hides=("retry",) if misbehave in (_lie, _serve_other) else ()))
