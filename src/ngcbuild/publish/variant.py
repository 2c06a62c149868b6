"""`promote --zstd`: the zstd variant of a promoted image, made on the target registry from the promoted image's
own layer blobs (the format and why its bytes are deterministic: image/zstd_variant.py).

Its tag is the promoted tag with `-zstd` after it (`25.12-py3` -> `25.12-py3-zstd`): NGC's tags end with what
sets an image apart (`-py3`, `-igpu`), and so does this one, which sorts beside the gzip tag it was made from.
A tag that would be over the 128 characters a tag may have is refused before anything is promoted.

Each layer blob is read from the target registry through ngcbuild's client, its digest and size checked as it
streams (registry/client.read_blob), decompressed as it arrives and compressed again as zstd into a file of a
scratch folder (one layer at a time, never a whole layer in memory; the folder removed in every outcome); the
tar it holds must hash to the diff id the image's config names for it, else nothing is sent. The blob is then
sent unless the registry already holds it at that digest and size, read back (put_blob_file). The config blob
is the image's own, already there. A list gets each platform's variant manifest written by its digest, then an
OCI index of them. The tag is written last, after every blob and manifest it names, so an interrupt or a
failure at any moment leaves no tag naming a half-made variant (a rerun finishes).

A rerun finds the variant present: when the record says which variant was made from this very digest and the
tag still serves it, its manifests and blobs all there (read and HEAD only), nothing is read again or sent;
without that record, the same layers make the same blobs, each one the registry holds is not sent, and a tag
that already serves the variant is not written again.
"""

from __future__ import annotations

import time

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.http import ATTEMPTS, BACKOFF_S
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.outputs import printer
from ngcbuild.core.scratch import scratch_folder
from ngcbuild.core.text import safe
from ngcbuild.image.media import GZIP_LAYERS, IMAGE_CONFIGS, IMAGE_MANIFESTS, OCI_INDEX, OCI_MANIFEST
from ngcbuild.image.zstd_variant import LEVEL, GzipToZstd, LayerProblem, ZstdLayer, index, manifest
from ngcbuild.publish.push import MAX_CONFIG, is_transient
from ngcbuild.registry.client import DigestMismatch, Manifest, Registry, RegistryError, digest_of, is_digest
from ngcbuild.workspace.sections import PromotedVariant, utc_timestamp

SUFFIX = "-zstd"
MAX_TAG = 128  # the distribution spec's longest tag


class VariantFailed(OperationError):
    """The variant could not be made or written: one line, and the `-zstd` tag left as it was."""


def variant_tag(tag: str) -> str:
    """The variant's tag; a UserError when it would be longer than a tag may be."""
    made = f"{tag}{SUFFIX}"
    if len(made) > MAX_TAG:
        raise UserError(f"--zstd: the variant's tag {safe(made, 40)}... would be {len(made)} characters, over the "
                        f"{MAX_TAG} a tag may have")
    return made


def make_variant(registry: Registry, repository: str, tag: str, digest: str, recorded: PromotedVariant | None = None,
                 out=None, sleep=time.sleep) -> PromotedVariant:
    """The zstd variant of `repository@digest` (the image or list just promoted to `registry`) under
    `variant_tag(tag)`; `recorded`: the variant an earlier promote recorded for this target reference."""
    say = printer(out)
    vtag = variant_tag(tag)
    where = f"{registry.host}/{repository}:{vtag}"
    if recorded is not None and recorded.made_from == digest and is_digest(recorded.digest) \
            and _present(registry, repository, vtag, recorded.digest):
        say(f"{where} holds the zstd variant already (manifest {recorded.digest}): nothing read or sent")
        return recorded
    maker = _Maker(registry, repository, say, sleep)
    promoted = maker.retried(f"GET {digest[:19]}", lambda: registry.manifest(repository, digest))
    if promoted is None:
        raise VariantFailed(f"{registry.host}/{repository}@{digest} is not in the registry after the copy")
    started = time.monotonic()
    with scratch_folder("ngcbuild-zstd-") as folder:
        maker.folder = folder
        if promoted.is_list:
            body, media_type = maker.of_list(promoted), OCI_INDEX
        else:
            body, media_type = maker.of_image(promoted), OCI_MANIFEST
    made = digest_of(body)
    served = maker.retried(f"GET {vtag}", lambda: registry.digest(repository, vtag))
    if served == made:
        say(f"{where} serves this variant already (manifest {made}): the tag not written again")
    else:  # last: every blob and manifest it names is in the registry
        maker.retried(f"PUT {vtag}", lambda: registry.put_and_read_back(repository, vtag, body, media_type))
    gzip_bytes, zstd_bytes = maker.gzip_bytes, maker.zstd_bytes
    say(f"zstd variant {where}@{made}: layers {_shown(zstd_bytes)} against {_shown(gzip_bytes)} gzip "
        f"({zstd_bytes / max(1, gzip_bytes):.3f}x); {maker.sent} blob(s) sent, {maker.held} already in the "
        f"registry, in {time.monotonic() - started:.1f}s")
    return PromotedVariant.of(tag=vtag, digest=made, media_type=media_type, made_from=digest, level=LEVEL,
                              layer_bytes=zstd_bytes, gzip_layer_bytes=gzip_bytes, at=utc_timestamp())


def _present(registry: Registry, repository: str, vtag: str, digest: str) -> bool:
    """Whether `vtag` serves the manifest `digest` (its bytes hash to it) and every manifest and blob it names is
    in the registry at its digest and size (GET and HEAD only)."""
    try:
        served = registry.manifest(repository, vtag)
        if served is None or served.digest != digest:
            return False
        manifests = [served]
        if served.is_list:
            manifests = [registry.manifest(repository, entry.digest) for entry in served.entries()]
        for each in manifests:
            if each is None or each.is_list:
                return False
            image = each.image()
            blobs = (image.config, *image.layers)
            if not all(registry.holds_blob(repository, blob.digest, blob.size) for blob in blobs):
                return False
    except RegistryError:
        return False
    return True


class _Maker:
    def __init__(self, registry: Registry, repository: str, say, sleep):
        self.registry, self.repository, self.say, self.sleep = registry, repository, say, sleep
        self.uploader = registry.without_retries()  # a blob body streams from its file: retried whole here
        self.folder = None
        self.made: dict[tuple[str, str], ZstdLayer] = {}  # (gzip digest, diff id) -> its zstd blob, sent
        self.sent = self.held = self.gzip_bytes = self.zstd_bytes = 0

    def of_list(self, promoted: Manifest) -> bytes:
        entries = []
        for number, entry in enumerate(promoted.entries(), 1):
            if entry.media_type not in IMAGE_MANIFESTS or entry.platform is None:
                raise VariantFailed(f"{promoted.where}: entry {number} is {safe(entry.media_type, 80)}"
                                    f"{'' if entry.platform else ' without a platform'}; the zstd variant of a list is "
                                    "made of platform image manifests only")
            child = self.retried(f"GET {entry.digest[:19]}", lambda e=entry: self.registry.manifest(self.repository,
                                                                                                  e.digest))
            if child is None:
                raise VariantFailed(f"{promoted.where}: its {entry.platform} manifest {entry.digest} is not in the "
                                    "registry")
            self.say(f"  {entry.platform}:")
            body = self.of_image(child)
            made = digest_of(body)
            if self.retried(f"GET {made[:19]}", lambda d=made: self.registry.digest(self.repository, d)) != made:
                self.retried(f"PUT {made[:19]}", lambda b=body, d=made: self.registry.put_manifest(
                    self.repository, d, b, OCI_MANIFEST))
            platform = {"architecture": entry.platform.architecture, "os": entry.platform.os}
            if entry.platform.variant:
                platform["variant"] = entry.platform.variant
            entries.append((body, platform))
        return index(entries)

    def of_image(self, promoted: Manifest) -> bytes:
        if promoted.media_type not in IMAGE_MANIFESTS:
            raise VariantFailed(f"{promoted.where} is {safe(promoted.media_type, 80)}, not an image manifest")
        image = promoted.image()
        config = image.config
        if config.media_type not in IMAGE_CONFIGS:
            raise VariantFailed(f"{promoted.where}: its config is {safe(config.media_type, 80)}, not an image config")
        if config.size > MAX_CONFIG:
            raise VariantFailed(f"{promoted.where}: its config is said to be {config.size} bytes, over the "
                                f"{MAX_CONFIG} an image config may be here")
        body = self.retried(f"GET blob {config.digest[:19]}",
                            lambda: self.registry.blob(self.repository, config.digest, MAX_CONFIG))
        if body is None or len(body) != config.size:
            raise VariantFailed(f"{promoted.where}: its config {config.digest} is "
                                f"{'not in the registry' if body is None else f'{len(body)} bytes, not {config.size}'}")
        diff_ids = _diff_ids(body, promoted.where)
        if len(diff_ids) != len(image.layers):
            raise VariantFailed(f"{promoted.where}: it names {len(image.layers)} layers and its config "
                                f"{len(diff_ids)} diff ids")
        layers = []
        for number, (layer, diff_id) in enumerate(zip(image.layers, diff_ids, strict=True), 1):
            if layer.media_type not in GZIP_LAYERS:
                raise VariantFailed(f"{promoted.where}: layer {number} is {safe(layer.media_type, 80)}, not a gzip "
                                    "layer; the zstd variant is made from gzip layers")
            layers.append(self.layer(promoted.where, number, len(image.layers), layer.digest, layer.size, diff_id))
        return manifest(config.digest, config.size, layers)

    def layer(self, where: str, number: int, count: int, digest: str, size: int, diff_id: str) -> ZstdLayer:
        """Layer `number`'s zstd blob, made from its gzip blob and in the registry."""
        key = (digest, diff_id)
        if key in self.made:  # a layer the image (or another platform) names again
            return self.made[key]
        path = self.folder / f"layer-{len(self.made) + 1}.zst"

        def recompress() -> ZstdLayer:
            with open(path, "wb") as target:
                made = GzipToZstd(target)
                self.registry.read_blob(self.repository, digest, size, made.feed)
                try:
                    return made.finish()
                except LayerProblem as exc:
                    raise VariantFailed(f"{where}: layer {number} ({digest}) {exc}") from None

        made = self.retried(f"GET blob {digest[:19]}", recompress)
        if made.diff_id != diff_id:
            raise VariantFailed(f"{where}: layer {number} ({digest}) holds the tar {made.diff_id}, not the diff id "
                                f"{diff_id} its config names")
        sent = self.retried(f"PUT blob {made.digest[:19]}",
                            lambda: self.uploader.put_blob_file(self.repository, path, made.digest, made.size))
        path.unlink()
        self.sent, self.held = self.sent + sent, self.held + (not sent)
        self.gzip_bytes, self.zstd_bytes = self.gzip_bytes + size, self.zstd_bytes + made.size
        self.say(f"    layer {number}/{count}: {_shown(size)} gzip -> {_shown(made.size)} zstd "
                 f"{made.digest[:19]} ({'sent' if sent else 'already in the registry'})")
        self.made[key] = made
        return made

    def retried(self, what: str, action):
        """`action()`, again on the one schedule (core/http's) when the registry failed it transiently; a
        VariantFailed naming the registry's words when it failed otherwise or every time."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return action()
            except DigestMismatch as exc:
                raise VariantFailed(str(exc)) from None
            except RegistryError as exc:
                said = str(exc)
                if attempt == ATTEMPTS or not is_transient(said):
                    again = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise VariantFailed(f"{said}{again}") from None
            delay = BACKOFF_S * 2 ** (attempt - 1)
            self.say(f"{what} failed ({safe(said, 200)}); retry {attempt}/{ATTEMPTS - 1} in {delay:.0f}s")
            self.sleep(delay)
        raise AssertionError("unreachable")


def _diff_ids(config: bytes, where: str) -> list[str]:
    try:
        document = load_json(config, f"{where}: its config")
    except ValueError:
        raise VariantFailed(f"{where}: its config is not JSON") from None
    rootfs = document.get("rootfs") if isinstance(document, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(is_digest(d) for d in diff_ids):
        raise VariantFailed(f"{where}: its config names no list of diff ids (rootfs.diff_ids)")
    return diff_ids


def _shown(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"
