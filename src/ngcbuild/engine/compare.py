"""Why two images of one release differ: per layer, the files that differ and how (content, size, mode,
owner, time, link target, present in one only), and the config keys that differ. What `repro` reports
when a rebuild does not give the same image id: the first thing a maintainer needs to chase a new
source of noise (and then name it in image/volatile.py, or fix the step that writes it)."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.core.scratch import scratch_folder
from ngcbuild.core.text import safe
from ngcbuild.engine.image_save import read_save
from ngcbuild.engine.release_image import make_release, recipe_of
from ngcbuild.image.layer_tar import BoundedTarInfo

MAX_SHOWN = 40  # files named per layer; the rest counted
MAX_PATH = 600  # characters of a path shown
MAX_HOW = 600
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    kind: str
    size: int
    mode: int
    owner: str
    mtime: int
    link: str
    sha256: str


@dataclass
class LayerDifference:
    index: int
    first: str | None  # diff id, None when the image has no such layer
    second: str | None
    files: dict[str, str] = field(default_factory=dict)  # path -> how it differs


@dataclass
class Comparison:
    first: str
    second: str
    layers: list[LayerDifference] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)  # key -> how it differs

    @property
    def same(self) -> bool:
        return self.first == self.second

    def lines(self, names: tuple[str, str] = ("first", "second")) -> list[str]:
        if self.same:
            return [f"reproduced: {self.first}"]
        # ids, keys (a label's), paths and link targets come from the images: escaped, one line each
        out = [f"not reproduced: {names[0]} is {safe(self.first)}, {names[1]} is {safe(self.second)}"]
        for key, how in sorted(self.config.items()):
            out.append(f"  config {safe(key)}: {safe(how, MAX_HOW)}")
        for layer in self.layers:
            out.append(f"  layer {layer.index}: {safe(layer.first or 'none')} / {safe(layer.second or 'none')}: "
                       f"{len(layer.files)} files differ")
            for path, how in list(sorted(layer.files.items()))[:MAX_SHOWN]:
                out.append(f"    /{safe(path, MAX_PATH)}: {safe(how, MAX_HOW)}")
            if len(layer.files) > MAX_SHOWN:
                out.append(f"    ... and {len(layer.files) - MAX_SHOWN} more")
        return out


def entries(source) -> dict[str, Entry]:
    """path -> what a layer tar (seekable) says of it. A layer of `repro --against REF` is an image from
    outside: read with the rewriter's bounds (image/layer_tar.py: chains of extended headers, sparse maps and
    their holes), and one out of them, or damaged, is one OperationError (exit 1)."""
    try:
        return _entries(source)
    except tarfile.TarError as exc:
        raise OperationError(f"a layer to compare cannot be read: {safe(str(exc), 300)}") from None


def _entries(source) -> dict[str, Entry]:
    found = {}
    with tarfile.open(fileobj=source, mode="r:", tarinfo=BoundedTarInfo) as tar:
        for member in tar:
            digest = ""
            if member.isreg():
                hashing = hashlib.sha256()
                handle = tar.extractfile(member)
                while chunk := handle.read(1 << 20):
                    hashing.update(chunk)
                digest = hashing.hexdigest()
            kind = "file" if member.isreg() else "dir" if member.isdir() else "symlink" if member.issym() \
                else "hardlink" if member.islnk() else "other"
            found[member.name] = Entry(kind, member.size if member.isreg() else 0, member.mode,
                                       f"{member.uid}:{member.gid}", int(member.mtime), member.linkname, digest)
    return found


def how_differs(one: Entry | None, two: Entry | None) -> str | None:
    """In words: how one path differs between two layers; None when it does not."""
    if one is None or two is None:
        return "present in the second only" if one is None else "present in the first only"
    ways = []
    if one.kind != two.kind:
        ways.append(f"kind {one.kind} / {two.kind}")
    if one.sha256 != two.sha256:
        ways.append("content")
    if one.size != two.size:
        ways.append(f"size {one.size} / {two.size}")
    if one.mode != two.mode:
        ways.append(f"mode {one.mode:o} / {two.mode:o}")
    if one.owner != two.owner:
        ways.append(f"owner {one.owner} / {two.owner}")
    if one.mtime != two.mtime:
        ways.append(f"time {one.mtime} / {two.mtime}")
    if one.link != two.link:
        ways.append(f"link {one.link} / {two.link}")
    return ", ".join(ways) or None


def differing_files(one: dict[str, Entry], two: dict[str, Entry]) -> dict[str, str]:
    differ = {}
    for path in sorted(set(one) | set(two)):
        how = how_differs(one.get(path), two.get(path))
        if how:
            differ[path] = how
    return differ


def config_differences(one: dict, two: dict, prefix: str = "") -> dict[str, str]:
    """Dotted keys of two configs whose values differ (rootfs left out: the layers say it)."""
    differ = {}
    for key in sorted(set(one) | set(two), key=str):
        if not prefix and key == "rootfs":
            continue
        a, b, name = one.get(key), two.get(key), f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            differ.update(config_differences(a, b, name + "."))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            differ.update(config_differences(dict(enumerate(a)), dict(enumerate(b)), name + "."))
        elif a != b:
            differ[name] = f"{safe(json.dumps(a), 120)} / {safe(json.dumps(b), 120)}"
    return differ


def compare_images(client, first: str, second: str) -> Comparison:
    """The release images of two engine images (ids or references in the engine: each made by the recipe it
    carries, engine/release_image.py; an image without one as it is) compared: their ids, and when they
    differ, layer by layer and their configs. Nothing is loaded into the engine."""
    images = (client.inspect_image(first), client.inspect_image(second))
    with scratch_folder("ngcbuild-compare-") as tmp:
        one, two = (_as_released(client, image, Path(tmp) / str(number), None) for number, image in enumerate(images))
        result = Comparison(one.image_id, two.image_id)
        if result.same:
            return result
        ids_one, ids_two = one.diff_ids, two.diff_ids
        differing = [i for i in range(max(len(ids_one), len(ids_two)))
                     if (ids_one[i] if i < len(ids_one) else None) != (ids_two[i] if i < len(ids_two) else None)]
        # made again, keeping the layers that differ (a cuda-dev is 10 GB of tars: never all of them kept)
        one = _as_released(client, images[0], Path(tmp) / "1", {ids_one[i] for i in differing if i < len(ids_one)})
        two = _as_released(client, images[1], Path(tmp) / "2", {ids_two[i] for i in differing if i < len(ids_two)})
        result.config = config_differences(json.loads(one.config), json.loads(two.config))
        for index in differing:
            a = ids_one[index] if index < len(ids_one) else None
            b = ids_two[index] if index < len(ids_two) else None
            files = differing_files(_entries_of(one.kept.get(a)), _entries_of(two.kept.get(b)))
            result.layers.append(LayerDifference(index, a, b, files))
    return result


@dataclass
class _Released:
    image_id: str
    config: bytes
    diff_ids: tuple[str, ...]
    kept: dict[str, Path]  # diff id -> its plain tar, for the layers asked for


def _as_released(client, image: dict, folder: Path, wanted: set[str] | None) -> _Released:
    """An engine image as its release image (its recipe's), or as it is when it carries none; with `wanted`,
    the plain tars of those layers (by the release's diff ids) kept in `folder`."""
    recipe = recipe_of(image)
    if recipe is None:
        layers = tuple((image.get("RootFS") or {}).get("Layers") or ())
        if wanted is None:
            return _Released(image["Id"], b"", layers, {})
        config, kept = save_layers(client, image, wanted, folder)
        return _Released(image["Id"], config, layers, kept)
    kept: dict[str, Path] = {}

    def keep(path: Path, diff_id: str) -> str:
        if wanted and diff_id in wanted and diff_id not in kept:
            kept[diff_id] = Path(shutil.move(path, folder / f"{diff_id[7:]}.kept.tar"))
        return diff_id

    made = make_release(client, image, recipe, folder, keep)
    return _Released(made.image_id, made.config, made.diff_ids, kept)


def _entries_of(path: Path | None) -> dict[str, Entry]:
    if path is None:
        return {}
    with path.open("rb") as handle:
        return entries(handle)


def save_layers(client, image: dict, wanted: set[str], folder: Path) -> tuple[bytes, dict[str, Path]]:
    """An image's config (its bytes) and a file in `folder` per layer in `wanted` (by diff id), from
    the engine's save of `image` (its inspect answer)."""
    folder.mkdir(parents=True, exist_ok=True)
    spooled, numbers = {}, itertools.count()

    def spool(source) -> None:
        path = folder / f"{next(numbers)}.tar"
        digest = hashlib.sha256()
        with path.open("wb") as target:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                target.write(chunk)
        diff_id = "sha256:" + digest.hexdigest()
        if diff_id in wanted and diff_id not in spooled:
            spooled[diff_id] = path
        else:
            path.unlink()

    saved = read_save(client, image, spool)
    missing = wanted - set(spooled)
    if missing:  # the save's reader checked every layer it declares: a layer wanted is not among them
        raise OperationError(f"the engine's save of {safe(image['Id'], 19)} lacked {len(missing)} of its layers")
    return saved.config, spooled
