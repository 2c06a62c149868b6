"""The release image, made as data where it leaves: from the engine's save of the image the build made (and the
smoke suite ran), each layer the build wrote rewritten deterministically (image/layer_tar.py), the base's layers
as they are, the config normalised (image/config.py) by the recipe the image carries (image/recipe.py). Nothing
is loaded back into the engine: the engine keeps the image it built (its local tag still runs), and the release
image's digest is a function of it, which push sends and records, and `repro` recomputes.

One pass over the save: each layer is spooled (its diff id learnt), rewritten when it is the build's, and
handed to the caller's `keep` as a plain tar with its release diff id (push compresses it, with the layer
store: image/store.py; `repro` compares it).
"""

from __future__ import annotations

import hashlib
import itertools
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.text import safe
from ngcbuild.engine.image_save import read_save
from ngcbuild.image.config import normalised_config
from ngcbuild.image.layer_tar import Rewritten, Times, layer_dirs, lower_dirs_by_layer, rewrite_layer
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


def make_release(client, image: dict, recipe: Recipe, folder: Path, keep) -> Made:
    """The release image of the engine's `image` (its inspect answer) by `recipe`: `keep(path, diff_id)` is
    called once per distinct layer with a plain tar in `folder` (removed after it returns, unless `keep`
    moved it) and its release diff id; what it returns stands for that layer in Made.layers.

    A build layer whose rewrite reads the layers below it (an opaque marker, /run: image/artefacts.py) waits,
    spooled, until the save has been read whole: a save lists its layers in an order of its own, and the
    directories below a layer are known only in the image's order (its inspect answer's)."""
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
    waiting: dict[str, Path] = {}  # the save's diff id -> its spool, rewritten once the layers below are known
    numbers = itertools.count()

    def release(layer: _Layer, spooled: Path, lower_dirs, raw: str | None = None) -> bool:
        """`spooled` rewritten (given the directories below it) and kept as `layer`; with `raw` (nothing known
        below yet), False and nothing kept when its rewrite would read the layers below (it waits)."""
        plain = spooled.with_suffix(".release.tar")
        try:
            done = _rewritten(spooled, plain, times, image, lower_dirs)
            if raw is not None:
                dirs[raw] = done.dirs
                if done.reads_lower:
                    return False
            layer.diff_id, layer.kept = done.diff_id, keep(plain, done.diff_id)
        finally:
            plain.unlink(missing_ok=True)
        made.rewritten += 1
        made.removed.update(done.removed)
        made.pyc_clamped += done.pyc_clamped
        return True

    def take(source) -> _Layer:
        spooled, raw = spool(source, folder / f"{next(numbers)}.tar")
        try:
            if raw in by_raw:  # a layer the image holds twice
                return by_raw[raw]
            layer = by_raw[raw] = _Layer()
            if raw in base:  # kept as it is; the directories it holds are the layers' above
                dirs[raw] = _dirs_of(spooled, image)
                layer.diff_id, layer.kept = raw, keep(spooled, raw)
            elif not release(layer, spooled, None, raw):
                waiting[raw], spooled = spooled, None  # kept on disk until the save is read
            return layer
        finally:
            if spooled is not None:
                spooled.unlink(missing_ok=True)

    try:
        saved = read_save(client, image, take)  # read by what it declares, checked against the inspect answer
        for layer in saved.layers:
            if by_raw.get(layer.diff_id) is not layer.result:
                raise OperationError(f"the release layer made from {layer.diff_id[:19]} of {_shown_id(image)} "
                                     "is not of that layer's bytes (other or fewer bytes were read): nothing made")
        below = lower_dirs_by_layer([layer.diff_id for layer in saved.layers], dirs)
        for raw, spooled in waiting.items():
            release(by_raw[raw], spooled, below[raw])
    finally:
        for spooled in waiting.values():
            spooled.unlink(missing_ok=True)
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
    """The release image of `image` made without keeping a layer: its id and what rewriting did."""
    return make_release(client, image, recipe, folder, lambda path, diff_id: diff_id)


def _rewritten(spool: Path, target: Path, times: Times, image: dict, lower_dirs) -> Rewritten:
    # the rewrite writes a tar record (10 kB) at a time: a larger buffer makes one write of many (16% less CPU
    # on 5 GB of /usr; a larger read buffer costs more, the tar reader seeks from member to member)
    with spool.open("rb") as source, target.open("wb", buffering=_CHUNK) as out:
        try:
            return rewrite_layer(source, out, times, lower_dirs=lower_dirs)
        except tarfile.TarError as exc:
            raise _not_a_tar(image, exc) from None


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
