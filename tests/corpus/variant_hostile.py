"""`promote --zstd` (publish/variant.py, issue 52 item 4) against a target registry that misbehaves on purpose,
and images whose layers are not what they say: a layer blob served as other bytes than its digest's, cut short,
answered with a body declared as 10 GB, a layer named at a size of 10 GB, a layer that is not gzip, a gzip stream
cut short, a tar that is not the config's diff id, a layer already zstd, the variant's upload refused. Each is
`invoke promote --release dev --from SRC --to DST --trusted-key k.pub --zstd` as a user runs it: exit 1, one
line naming what was wrong, the `dev-py3-zstd` tag never written (nor any zstd blob for the tar-level faults,
which are found before anything is sent), the promotion of `dev-py3` itself recorded (it was done) without a
variant, no scratch file left. The controls: an honest target gets its variant (the tag written after every
blob, the record naming it), and a second promote, with the record or without it, sends nothing.

The registries are fakes.py's: SRC holds the tiny image attested by the project's trusted key (trust.py's
`trusted_key`), DST holds what the copy left there (the image under `dev-py3`, its attestation). The copy itself
is skopeo's, which speaks a chunked upload the fake registry does not: a stand-in `skopeo` first on $PATH logs
its arguments and leaves DST as the copy would have left it (the tiny image already there), so that what is
under test is the variant, made from DST through ngcbuild's own registry client.
"""

from __future__ import annotations

import copy
import io
import json
import os
import stat
import tarfile

from ngcbuild.image.blobs import compress

from . import fakes
from .fakes import REPOSITORY, Content, FakeRegistry, digest_of
from .hostile import HostileCase, dev, setup_all
from .trust import trusted_key

TAG_PATH = f"/v2/{REPOSITORY}/manifests/dev-py3-zstd"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
ARGV = ("promote", "--release", "dev", "--from", "SRC", "--to", "DST", "--trusted-key", "k.pub", "--zstd")


def _tar(name: str, size: int) -> bytes:
    """A layer tar of one file of `size` bytes of text (compressible, as files are)."""
    body = (b"a line of the hostile zstd variant's layer %d\n" * (size // 40 + 1))[:size]
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mtime = len(body), 1_700_000_000
        tar.addfile(info, io.BytesIO(body))
    return layer.getvalue()


TARS = [_tar("etc/first", 300_000), _tar("usr/second", 200_000)]


def _gzip(tar: bytes) -> bytes:
    blob = io.BytesIO()
    compress(io.BytesIO(tar), blob)
    return blob.getvalue()


def _image(content: Content, blobs: list[bytes] | None = None, diff_ids: list[str] | None = None,
           media_type: str = DOCKER_LAYER, size_of=len) -> tuple[str, str]:
    """The tiny image in `content` under `dev-py3` (its layers `blobs`, gzip of TARS by default): its manifest's
    digest and its config's (the image id)."""
    blobs = blobs if blobs is not None else [_gzip(tar) for tar in TARS]
    diff_ids = diff_ids if diff_ids is not None else [digest_of(tar) for tar in TARS]
    config = json.dumps({"architecture": "amd64", "os": "linux", "created": "2026-01-01T00:00:00Z",
                         "rootfs": {"type": "layers", "diff_ids": diff_ids}}, sort_keys=True).encode()
    content.add_blob(config)
    for blob in blobs:
        content.add_blob(blob)
    body = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                       "config": {"mediaType": DOCKER_CONFIG, "digest": digest_of(config), "size": len(config)},
                       "layers": [{"mediaType": media_type, "digest": digest_of(b), "size": size_of(b)} for b in blobs]},
                      indent=3).encode()
    return content.add_manifest(body, DOCKER_MANIFEST, tag="dev-py3"), digest_of(config)


def _variant_of(content: Content, digest: str) -> str:
    """The variant an earlier promote --zstd left in `content` (made by the product's own code): its digest."""
    from ngcbuild.image.zstd_variant import GzipToZstd, manifest

    document = json.loads(content.manifests[digest][0])
    layers = []
    for layer in document["layers"]:
        target = io.BytesIO()
        made = GzipToZstd(target)
        made.feed(content.blobs[layer["digest"]])
        layers.append(made.finish())
        content.add_blob(target.getvalue())
    body = manifest(document["config"]["digest"], document["config"]["size"], layers)
    return content.add_manifest(body, "application/vnd.oci.image.manifest.v1+json", tag="dev-py3-zstd")


def _keeping(registry: FakeRegistry, outside) -> None:
    """Every tag the target writes also noted in OUTSIDE/tags.json (tag -> digest), its manifest in OUTSIDE/stored/."""
    add = registry.content.add_manifest
    (outside / "stored").mkdir()

    def keeping(body, media_type, tag=None):
        digest = add(body, media_type, tag)
        (outside / "stored" / digest.removeprefix("sha256:")).write_bytes(body)
        if tag and not tag.startswith("sha256:"):
            (outside / "tags.json").write_text(json.dumps(registry.content.tags))
        return digest

    registry.content.add_manifest = keeping


def promoting(image=_image, damage=None, misbehave=None, held_variant: bool = False, recorded: bool = False):
    """A case's servers: SRC with the image `image(content)` makes, attested; DST holding the same (the copy's
    work, and the attestation), then `damage(content, layer digests)` done to DST's copy and `misbehave(dst)`
    to how it answers; `held_variant`: DST holds the variant an earlier promote made, and `recorded`: the record
    says so. The record: the image pushed to SRC, its smoke run passed."""
    def serve(project, outside):
        (outside / "tmp").mkdir()  # the command's $TMPDIR, where its scratch folders go
        _stand_in_skopeo(outside)
        key = trusted_key(project)
        source = Content()
        digest, image_id = image(source)
        source.attest(digest, key)
        target = copy.deepcopy(source)
        variant = _variant_of(target, digest) if held_variant else None
        layers = [layer["digest"] for layer in json.loads(source.manifests[digest][0])["layers"]]
        if damage is not None:
            damage(target, layers)
        src = FakeRegistry(outside / "source.log", source)
        dst = FakeRegistry(outside / "target.log", target)
        _keeping(dst, outside)
        if misbehave is not None:
            misbehave(dst, layers)
        record = {"release": "dev", "platform": "linux/amd64", "image_id": image_id, "context_sha256": "0" * 64,
                  "tags": [], "pushed": {f"{src.address}/{REPOSITORY}:dev-py3": {
                      "digest": digest, "registry": src.address, "at": "2026-11-01T00:00:00Z"}},
                  "smoke": {"passed": 3, "failed": 0, "errors": 0, "skipped": 0, "exit_code": 0, "image_id": image_id,
                            "at": "2026-11-01T00:00:00Z"}}
        if recorded:
            record["promoted"] = {f"{dst.address}/{REPOSITORY}:dev-py3": {
                "digest": digest, "from": src.address, "at": "2026-11-02T00:00:00Z", "attestations": {},
                "zstd": {"tag": "dev-py3-zstd", "digest": variant, "made_from": digest, "level": 3}}}
        path = project.root / "build" / "dev" / "record.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        (outside / "promoted.json").write_text(json.dumps({"digest": digest, "variant": variant, "layers": layers}))
        return {"SRC": src.address, "DST": dst.address}, [src, dst]
    return serve


def _stand_in_skopeo(outside) -> None:
    folder = outside / "bin"
    folder.mkdir()
    script = folder / "skopeo"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{outside}/skopeo.log"\nexit 0\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


# --- what must hold afterwards -----------------------------------------------------------------------

def _log(outside, name: str = "target") -> list[dict]:
    path = outside / f"{name}.log"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def _promoted(project) -> dict:
    record = json.loads((project.root / "build" / "dev" / "record.json").read_text())
    return next(iter((record.get("promoted") or {}).values()), {})


def no_variant(blobs_sent: bool = False):
    """No `dev-py3-zstd` tag written (no PUT of it), the promotion recorded without a variant, no scratch left;
    unless `blobs_sent` (a fault found only as a blob is sent), no zstd blob upload opened either."""
    def check(project, outside) -> str | None:
        log = _log(outside)
        if any(r["method"] == "PUT" and r["path"] == TAG_PATH for r in log):
            return "the dev-py3-zstd tag was written"
        if not blobs_sent and any(r["method"] == "POST" for r in log):
            return "a blob upload was opened on the target"
        promoted = _promoted(project)
        if not promoted.get("digest") or "zstd" in promoted:
            return f"the record's promotion is {sorted(promoted)}, not the promotion alone"
        return _no_scratch(outside)
    return check


def _no_scratch(outside) -> str | None:
    left = sorted(path.name for path in (outside / "tmp").iterdir())
    return f"left in $TMPDIR: {left[:3]}" if left else None


def variant_made(project, outside) -> str | None:
    """The control: the tag names an OCI manifest of the image's own config and two zstd layers, written after
    every blob upload, and the record names it."""
    tags = json.loads((outside / "tags.json").read_text()) if (outside / "tags.json").exists() else {}
    made = tags.get("dev-py3-zstd")
    if made is None:
        return "no dev-py3-zstd tag"
    document = json.loads((outside / "stored" / made.removeprefix("sha256:")).read_bytes())
    gzip_digest = json.loads((outside / "promoted.json").read_text())["digest"]
    if [layer["mediaType"] for layer in document["layers"]] != [ZSTD_LAYER] * 2:
        return f"the variant's layers are {[layer['mediaType'] for layer in document['layers']]}"
    log = _log(outside)
    tag_at = next(i for i, r in enumerate(log) if r["method"] == "PUT" and r["path"] == TAG_PATH)
    if any(i > tag_at and r["method"] in ("POST", "PUT") and "/blobs/" in r["path"] for i, r in enumerate(log)):
        return "a blob was sent after the tag was written"
    zstd = _promoted(project).get("zstd") or {}
    if zstd.get("digest") != made or zstd.get("made_from") != gzip_digest or zstd.get("tag") != "dev-py3-zstd":
        return f"the record's variant is {zstd}"
    skopeo = (outside / "skopeo.log").read_text()
    if "--preserve-digests" not in skopeo or f"/{REPOSITORY}:dev-py3\n" not in skopeo:
        return f"skopeo was asked {skopeo[:200]!r}"
    return _no_scratch(outside)


def sent_nothing(project, outside) -> str | None:
    """A promote again: no blob upload opened, the variant's tag not written, the record's variant the one DST
    held."""
    log = _log(outside)
    written = [r["path"] for r in log if r["method"] in ("POST", "PATCH") or (r["method"] == "PUT" and (
        r["path"] == TAG_PATH or "/blobs/" in r["path"]))]
    if written:
        return f"sent {written[:2]}"
    variant = json.loads((outside / "promoted.json").read_text())["variant"]
    if (_promoted(project).get("zstd") or {}).get("digest") != variant:
        return f"the record's variant is {_promoted(project).get('zstd')}, not the one held ({variant[:19]})"
    return _no_scratch(outside)


def read_no_layer(project, outside) -> str | None:
    """With the record: no layer read on the target (the variant's tag, its manifest and HEADs only)."""
    layers = json.loads((outside / "promoted.json").read_text())["layers"]
    reads = [r["path"] for r in _log(outside) if r["method"] == "GET" and r["path"].rsplit("/", 1)[-1] in layers]
    return f"read {reads[:2]}" if reads else sent_nothing(project, outside)


# --- what is done to DST, or to the image ------------------------------------------------------------

def _other_bytes(content: Content, layers: list[str]) -> None:
    content.blobs[layers[0]] = bytes(len(content.blobs[layers[0]]))


def _cut_short(content: Content, layers: list[str]) -> None:
    content.blobs[layers[1]] = content.blobs[layers[1]][: len(content.blobs[layers[1]]) // 2]


def _declares_10gb(dst: FakeRegistry, layers: list[str]) -> None:
    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(10 << 30))
        handler.end_headers()
        for _ in range(64):
            handler.wfile.write(b"\x1f\x8b" + b"x" * 65534)
        handler.close_connection = True
    dst.raw[f"GET /v2/{REPOSITORY}/blobs/{layers[0]}"] = answer


def _upload_denied(dst: FakeRegistry, layers: list[str]) -> None:
    dst.raw[f"POST /v2/{REPOSITORY}/blobs/uploads/"] = lambda handler: fakes.send(
        handler, 403, b'{"errors": [{"code": "DENIED", "message": "\\u001b[2J no zstd here"}]}',
        {"Content-Type": "application/json"})


def _named_at_10gb(content: Content) -> tuple[str, str]:
    return _image(content, size_of=lambda blob: (10 << 30) if blob == _gzip(TARS[0]) else len(blob))


def _not_gzip(content: Content) -> tuple[str, str]:
    return _image(content, blobs=[TARS[0], _gzip(TARS[1])])  # a plain tar named as a gzip layer


def _gzip_cut_short(content: Content) -> tuple[str, str]:
    return _image(content, blobs=[_gzip(TARS[0])[:-200], _gzip(TARS[1])])


def _other_tar(content: Content) -> tuple[str, str]:
    return _image(content, diff_ids=[digest_of(TARS[1]), digest_of(TARS[1])])  # the first layer is not its diff id


def _already_zstd(content: Content) -> tuple[str, str]:
    return _image(content, media_type=ZSTD_LAYER)


def variant_cases(add) -> None:
    klass = "hostile registry (zstd variant)"
    env = {"TMPDIR": "OUTSIDE/tmp", "PATH": f"OUTSIDE/bin{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"}

    def case(name: str, serve, after, status: int = 1, mentions=(), shows=()) -> None:
        add(HostileCase(name, klass, ARGV, setup_all(dev), exit_status=status, serve=serve, extra_env=env,
                        after=after, mentions=mentions, shows=shows,
                        absent=("Traceback", "\x1b", *(("dev-py3-zstd@",) if status else ()))))

    case("promote-zstd-to-an-honest-registry", promoting(), variant_made, status=0,
         shows=("zstd variant", "2 blob(s) sent, 0 already in the registry"))
    case("promote-zstd-again-with-the-record", promoting(held_variant=True, recorded=True), read_no_layer, status=0,
         shows=("holds the zstd variant already", "nothing read or sent"))
    case("promote-zstd-again-without-the-record", promoting(held_variant=True), sent_nothing, status=0,
         shows=("0 blob(s) sent, 2 already in the registry", "serves this variant already"))
    not_written = "dev-py3-zstd not written"
    for name, serve, says, sent in [
        ("promote-zstd-layer-of-other-bytes", promoting(damage=_other_bytes), ("truncated or replaced",), False),
        ("promote-zstd-layer-cut-short", promoting(damage=_cut_short), ("truncated or replaced",), True),
        ("promote-zstd-layer-answer-declares-10gb", promoting(misbehave=_declares_10gb), ("is over the",), False),
        ("promote-zstd-layer-named-at-10gb", promoting(image=_named_at_10gb), ("not the 10737418240",), False),
        ("promote-zstd-layer-not-gzip", promoting(image=_not_gzip), ("layer 1", "is not a gzip stream"), False),
        ("promote-zstd-layer-gzip-cut-short", promoting(image=_gzip_cut_short), ("layer 1", "cut short"), False),
        ("promote-zstd-layer-not-its-diff-id", promoting(image=_other_tar), ("layer 1", "not the diff id"), False),
        ("promote-zstd-layer-already-zstd", promoting(image=_already_zstd), ("not a gzip layer",), False),
        ("promote-zstd-upload-denied", promoting(misbehave=_upload_denied), ("access denied", "DENIED"), True),
    ]:
        case(name, serve, no_variant(blobs_sent=sent), mentions=(not_written, *says))
