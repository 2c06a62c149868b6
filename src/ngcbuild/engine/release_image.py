"""The release image, made as data where it leaves: from the engine's save of the image the build made (and the
smoke suite ran), each layer the build wrote rewritten deterministically (image/layer_tar.py), the base's layers
as they are, the config normalised (image/config.py) by the recipe the image carries (image/recipe.py). Nothing
is loaded back into the engine: the engine keeps the image it built (its local tag still runs), and the release
image's digest is a function of it, which push sends and records, and `repro` recomputes.

One pass over the save: each layer is spooled (its diff id learnt); a base layer is handed to the caller's
`keep` as it is, a build layer to the caller's `rewrites`, which rewrites it where it is kept: push streams
the rewrite into its compression on threads of its own while the save is read on (publish/layer_blobs.py,
no rewritten tar on disk), `repro` only hashes it, `diff` keeps the plain tars it compares.
"""

from __future__ import annotations

import hashlib
import itertools
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.text import safe
from ngcbuild.engine.image_save import read_save
from ngcbuild.image.config import normalised_config
from ngcbuild.image.layer_tar import LayerRewrite, Times, layer_dirs, lower_dirs_by_layer
from ngcbuild.image.recipe import Recipe
from ngcbuild.image.save import SaveUnreadable

_CHUNK = 1 << 20


@dataclass
class Made:
    """What making a release image did (said by push, kept by `repro`)."""

    config: bytes = b""
    layers: tuple = ()  # per layer of the image, in order: what `keep` returned for it
    diff_ids: tuple[str, ...] = ()  # the release image's, in order
    rewritten: int = 0
    removed: dict[str, str] = field(default_factory=dict)  # path -> why (image/volatile.py), over every layer
    pyc_clamped: int = 0
    seconds: float = 0.0

    @property
    def image_id(self) -> str:
        """The release image's id: its config's digest."""
        return "sha256:" + hashlib.sha256(self.config).hexdigest()

    def said(self) -> str:
        return (f"release image {self.image_id[:19]} made in {self.seconds:.1f}s: {self.rewritten} layers rewritten, "
                f"{len(self.removed)} volatile files removed, {self.pyc_clamped} .pyc headers set")


@dataclass
class _Layer:
    """One distinct layer of the save, once made: its release diff id, and what `keep` returned for it."""

    diff_id: str = ""
    kept: object = None
    spool: Path | None = None  # a build layer's, until its rewrite is done
    pending: object = None  # what `rewrites` handed back for it, until its result is taken


@dataclass
class BuildLayer:
    """A layer the build wrote, spooled from the save, to be rewritten by whoever keeps it, on any thread. While
    the layers below are not known (`lower_dirs` None), one whose rewrite reads them `waits`: it is not written
    and keeps its spool (make_release rewrites it at the end, given them)."""

    spool: Path
    raw: str  # the save's diff id
    lower_dirs: frozenset[str] | None
    times: Times
    image: dict

    @contextmanager
    def rewrite(self) -> Iterator[LayerRewrite]:
        """Its rewrite, its headers read (layer_tar.LayerRewrite), to be written within the block, on any
        thread (a layer that is not a tar is said as the save's fault wherever it is found); the spool removed
        when the block ends, unless it waits."""
        with self.spool.open("rb") as source:
            try:
                rewrite = LayerRewrite(source, self.times, lower_dirs=self.lower_dirs)
                yield rewrite
            except tarfile.TarError as exc:
                raise _not_a_tar(self.image, exc) from None
        if not self.waits(rewrite):
            self.spool.unlink(missing_ok=True)

    def waits(self, rewrite: LayerRewrite) -> bool:
        return self.lower_dirs is None and rewrite.done.reads_lower

    def discard(self) -> None:
        """A rewrite that will never run: its spool removed."""
        self.spool.unlink(missing_ok=True)


class _Done:
    """A rewrite done at once: its (Rewritten, kept) as result()."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def in_files(keep):
    """The `rewrites` of make_release that writes each build layer to a file beside its spool and hands it to
    `keep(path, diff_id)` at once, on the caller's thread (the file removed after, unless `keep` moved it)."""
    def rewrites(layer: BuildLayer) -> _Done:
        plain = layer.spool.with_suffix(".release.tar")
        try:
            with layer.rewrite() as rewrite:
                if layer.waits(rewrite):
                    return _Done((rewrite.done, None))
                # the rewrite writes a tar header at a time: a large buffer makes one write of many
                with plain.open("wb", buffering=_CHUNK) as out:
                    done = rewrite.write(out)
            return _Done((done, keep(plain, done.diff_id)))
        finally:
            plain.unlink(missing_ok=True)
    return rewrites


def make_release(client, image: dict, recipe: Recipe, folder: Path, keep, rewrites=None) -> Made:
    """The release image of the engine's `image` (its inspect answer) by `recipe`. A base layer is handed to
    `keep(path, diff_id)` as the save holds it (a plain tar in `folder`, removed after it returns unless
    `keep` moved it); each build layer to `rewrites(BuildLayer)`, which gives back something whose `result()`
    is (Rewritten, what stands for the layer), at once or later (push compresses it on a thread of its own
    while the save is read on: publish/layer_blobs.py). Without `rewrites`, each build layer is written to a
    file and handed to `keep` too (in_files). What `keep` or a result returned stands for that layer in
    Made.layers.

    A build layer whose rewrite reads the layers below it (an opaque marker, /run: image/artefacts.py) waits,
    spooled, until the save has been read whole: a save lists its layers in an order of its own, and the
    directories below a layer are known only in the image's order (its inspect answer's)."""
    rewrites = rewrites or in_files(keep)
    started = time.monotonic()
    declared = (image.get("RootFS") or {}).get("Layers") if isinstance(image, dict) else None
    wrong = recipe.check(declared) if isinstance(declared, list) else "its inspect answer lists no layers"
    if wrong:
        raise OperationError(f"the image {_shown_id(image)}: {wrong}; not an image its recipe makes, nothing made")
    base = set(declared[:recipe.base_layers])
    times = Times(recipe.epoch, recipe.made_after)
    folder.mkdir(parents=True, exist_ok=True)
    made = Made()
    by_raw: dict[str, _Layer] = {}  # the save's diff id -> that layer made
    dirs: dict[str, set[str]] = {}  # the save's diff id -> the directories the layer holds
    numbers = itertools.count()

    def taken(layer: _Layer, raw: str) -> bool:
        """The result of `layer`'s rewrite taken: False when it waits for the layers below."""
        done, kept = layer.pending.result()
        layer.pending = None
        if raw not in dirs:  # a rewrite done at the end is given the dirs: it does not find them again
            dirs[raw] = done.dirs
        if not done.written:
            return False
        layer.diff_id, layer.kept, layer.spool = done.diff_id, kept, None
        made.rewritten += 1
        made.removed.update(done.removed)
        made.pyc_clamped += done.pyc_clamped
        return True

    def take(source) -> _Layer:
        spooled, raw = spool(source, folder / f"{next(numbers)}.tar")
        if raw in by_raw:  # a layer the image holds twice
            spooled.unlink(missing_ok=True)
            return by_raw[raw]
        layer = by_raw[raw] = _Layer()
        if raw in base:  # kept as it is; the directories it holds are the layers' above
            try:
                dirs[raw] = _dirs_of(spooled, image)
                layer.diff_id, layer.kept = raw, keep(spooled, raw)
            finally:
                spooled.unlink(missing_ok=True)
        else:
            layer.spool = spooled
            layer.pending = rewrites(BuildLayer(spooled, raw, None, times, image))
        return layer

    try:
        saved = read_save(client, image, take)  # read by what it declares, checked against the inspect answer
        for layer in saved.layers:
            if by_raw.get(layer.diff_id) is not layer.result:
                raise OperationError(f"the release layer made from {layer.diff_id[:19]} of {_shown_id(image)} "
                                     "is not of that layer's bytes (other or fewer bytes were read): nothing made")
        waiting = [raw for raw, layer in by_raw.items() if layer.pending is not None and not taken(layer, raw)]
        below = lower_dirs_by_layer([layer.diff_id for layer in saved.layers], dirs)
        for raw in waiting:
            layer = by_raw[raw]
            layer.pending = rewrites(BuildLayer(layer.spool, raw, below[raw], times, image))
            taken(layer, raw)
    finally:
        for layer in by_raw.values():  # a spool a rewrite still reads stays open to it until that ends
            if layer.spool is not None:
                layer.spool.unlink(missing_ok=True)
    try:
        config = load_json(saved.config, "the image's config")
    except JsonRefused as exc:
        raise SaveUnreadable(f"the engine's save of {_shown_id(image)}: {exc}") from None
    if not isinstance(config, dict):
        raise SaveUnreadable(f"the engine's save of {_shown_id(image)}: its config is not an object")
    made.diff_ids = tuple(by_raw[layer.diff_id].diff_id for layer in saved.layers)
    made.layers = tuple(by_raw[layer.diff_id].kept for layer in saved.layers)
    try:
        made.config = normalised_config(config, list(made.diff_ids), times, recipe.base_layers)
    except (ValueError, TypeError, AttributeError) as exc:  # a history entry or time out of shape
        raise SaveUnreadable(f"the engine's save of {_shown_id(image)}: its config cannot be "
                             f"normalised ({safe(str(exc), 120)})") from None
    made.seconds = round(time.monotonic() - started, 1)
    return made


def release_image_id(client, image: dict, recipe: Recipe, folder: Path) -> Made:
    """The release image of `image` made without keeping a layer (none written to disk): its id and what
    rewriting did."""
    def rewrites(layer: BuildLayer) -> _Done:
        with layer.rewrite() as rewrite:
            done = rewrite.done if layer.waits(rewrite) else rewrite.write(Nowhere())
        return _Done((done, done.diff_id))
    return make_release(client, image, recipe, folder, lambda path, diff_id: diff_id, rewrites)


class Nowhere:
    """A writable file that keeps nothing (what passes is hashed on its way: layer_tar._Hashing)."""

    def write(self, data) -> int:
        return len(data)


def _dirs_of(spool: Path, image: dict) -> set[str]:
    with spool.open("rb") as source:
        try:
            return layer_dirs(source)
        except tarfile.TarError as exc:
            raise _not_a_tar(image, exc) from None


def _not_a_tar(image: dict, exc: Exception) -> SaveUnreadable:
    return SaveUnreadable(f"the engine's save of {_shown_id(image)}: a layer that is not a tar ({safe(str(exc), 200)})")


def spool(source, path: Path) -> tuple[Path, str]:
    """`source` read to its end into `path`, and the sha256 of what was read (its diff id)."""
    plain = hashlib.sha256()
    with path.open("wb") as target:
        while chunk := source.read(_CHUNK):
            plain.update(chunk)
            target.write(chunk)
    return path, "sha256:" + plain.hexdigest()


def recipe_of(image: dict) -> Recipe | None:
    """The recipe the engine's image carries, or None; a damaged one is an OperationError naming the label."""
    from ngcbuild.image.recipe import RecipeDamaged

    try:
        return Recipe.of_image(image)
    except RecipeDamaged as exc:
        raise OperationError(f"{_shown_id(image)}: {exc}; rebuild it (`invoke build --force`)") from None


def _shown_id(image: dict) -> str:
    return safe(str(image.get("Id") if isinstance(image, dict) else image), 19)
