"""The normalising step after the engine's build: the image the build made (the "raw" image, which
stays as the layer cache) is saved, every layer the build wrote is rewritten deterministically
(image/layer_tar.py), its config normalised (image/config.py), and the result is loaded back as the
image that is tagged, smoked, SBOM'd, pushed and attested. Same inputs, same image id, on any engine,
any day. This module is the talk with the engine (save, load, memo tag); the rules are image/'s.

The base image's layers are inputs (by digest): they are never rewritten, nor sent back to the
engine (a load skips a layer whose chain the engine holds). A raw image normalised once on an
engine is not normalised again: the result carries a memo tag naming the raw image, the epoch and
the base's time, so a build whose steps all came from the layer cache costs a lookup.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import docker

from ngcbuild.core.errors import BuildFailed
from ngcbuild.core.scratch import scratch_folder
from ngcbuild.engine.image_load import Loading, takes_partial_load
from ngcbuild.engine.image_save import read_save
from ngcbuild.image.config import normalised_config, rfc3339, seconds
from ngcbuild.image.layer_tar import Rewritten, Times, Unstreamable, rewrite_layer, rewrite_stream
from ngcbuild.image.save import SaveUnreadable

VERSION = 4  # of the rules (image/layer_tar.py, volatile.py, config.py): a change is a new memo tag, never a stale hit
_CHUNK = 1 << 20


@dataclass
class Normalised:
    image_id: str
    raw_image_id: str
    epoch: int
    made_after: int
    memo: bool = False  # found normalised already (memo tag)
    layers_rewritten: int = 0
    removed: dict[str, str] = field(default_factory=dict)  # path -> why, over every layer
    pyc_clamped: int = 0
    seconds: float = 0.0
    version: int = VERSION

    def recorded(self) -> dict:
        """Every field the record's `normalisation` keeps (workspace/sections.Normalisation): all but the id."""
        return {key: value for key, value in asdict(self).items() if key != "image_id"}


def memo_tag(prefix: str, epoch: int, made_after: int, raw_image_id: str) -> str:
    """The tag a normalised image carries to be found again from its raw image (at most 128 characters)."""
    return f"{prefix[:40]}-n{VERSION}-{epoch}.{made_after}-{raw_image_id.removeprefix('sha256:')[:32]}"


def normalise(client: docker.APIClient, raw_image_id: str, base_ref: str, epoch: int, memo_repository: str,
              memo_prefix: str, say) -> Normalised:
    """The normalised image of `raw_image_id` (built FROM `base_ref`), made or found by its memo tag."""
    started = time.monotonic()
    raw = client.inspect_image(raw_image_id)
    base = client.inspect_image(base_ref)
    made_after = seconds(base["Created"])
    tag = memo_tag(memo_prefix, epoch, made_after, raw["Id"])
    try:
        found = client.inspect_image(f"{memo_repository}:{tag}")
        return Normalised(found["Id"], raw["Id"], epoch, made_after, memo=True,
                          seconds=round(time.monotonic() - started, 1))
    except docker.errors.ImageNotFound:
        pass
    raw_ids = list(raw["RootFS"]["Layers"])
    base_ids = list(base["RootFS"]["Layers"])
    kept = len(base_ids) if raw_ids[:len(base_ids)] == base_ids else 0
    times = Times(epoch, made_after)
    tag_ref = f"{memo_repository}:{tag}"
    done = Normalised("", raw["Id"], epoch, made_after)
    say(f"normalising {raw['Id'][:19]}: {len(raw_ids) - kept} layers the build wrote, times as of {rfc3339(epoch)}")
    # an engine that refuses a load leaving out the layers it holds is sent the base's layers too, as saved
    whole = set() if takes_partial_load(client) else set(base_ids[:kept])
    with scratch_folder("ngcbuild-normalise-") as tmp:
        folder = Path(tmp)
        wanted = set(raw_ids[kept:])

        def rewrite_and_load(rewrite, subfolder: str) -> str:
            with Loading(client) as loading:  # each layer sent to the engine as soon as it is rewritten
                config, rewritten = rewrite(client, raw, wanted, folder / subfolder, times,
                                            on_rewritten=loading.send, as_saved=whole)
                return _finish(loading, config, rewritten, raw_ids, base_ids[:kept], times, tag_ref, done)

        try:
            image_id = rewrite_and_load(rewrite_as_saved, "streamed")
        except Unstreamable as exc:
            say(f"normalising: {exc}; saving the image again to rewrite it from files")
            shutil.rmtree(folder / "streamed")  # the disk holds one rewrite at a time
            image_id = rewrite_and_load(rewrite_from_files, "files")
    try:
        loaded = client.inspect_image(image_id)["Id"]
    except docker.errors.ImageNotFound:
        loaded = "nothing"
    if loaded != image_id:
        raise BuildFailed(f"the engine loaded the normalised image of {raw['Id'][:19]} as {loaded[:19]}, "
                          f"not as {image_id[:19]}")
    done.image_id, done.seconds = image_id, round(time.monotonic() - started, 1)
    return done


def _finish(loading: Loading, config: bytes, rewritten: dict, raw_ids: list[str], base_ids: list[str],
            times: Times, tag_ref: str, done: Normalised) -> str:
    """The normalised config made from the rewritten layers and sent last, the load waited for: its id."""
    kept = len(base_ids)
    diff_ids, names = list(base_ids), [base_member_name(diff_id) for diff_id in base_ids]
    for index in range(kept, len(raw_ids)):
        layer, path = rewritten[raw_ids[index]]
        diff_ids.append(layer.diff_id)
        names.append(_member_name(path))
    for layer, _ in rewritten.values():
        done.removed.update(layer.removed)
        done.pyc_clamped += layer.pyc_clamped
        done.layers_rewritten += 1
    data = normalised_config(json.loads(config), diff_ids, times, kept)
    image_id = "sha256:" + hashlib.sha256(data).hexdigest()
    # tagged as it is loaded: never a dangling image that a prune beside the build could remove
    entry = {"Config": f"{image_id[7:]}.json", "RepoTags": [tag_ref], "Layers": names}
    loading.finish(entry["Config"], data, entry)
    return image_id


def _member_name(path: Path) -> str:
    return f"{path.stem}/layer.tar"


def base_member_name(diff_id: str) -> str:
    """A base layer's member in the load (sent only to an engine that takes no partial load)."""
    return f"base-{diff_id[7:]}/layer.tar"


class _Tee:
    """A readable file that also writes what is read through it to `target`."""

    def __init__(self, source, target):
        self.source, self.target = source, target

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.target.write(data)
        return data


def rewrite_as_saved(client, image: dict, wanted: set[str], folder: Path, times: Times,
                     on_rewritten=None, as_saved: set[str] = frozenset()) -> tuple[bytes, dict]:
    """The config's bytes and, for each layer in `wanted` (by diff id), its rewrite (image/layer_tar.py) in a file
    of `folder`: each layer rewritten as the engine's save of `image` (its inspect answer) streams it, never
    spooled first, and handed to `on_rewritten(member name, path)` as soon as it is written; each layer in
    `as_saved` is handed on as saved (base_member_name). Raises Unstreamable (image/layer_tar.py) for a layer only
    the seekable rewrite can do."""
    folder.mkdir(parents=True, exist_ok=True)
    rewritten: dict[str, tuple[Rewritten, Path]] = {}
    sent_as_saved: set[str] = set()
    numbers = itertools.count()

    def rewrite(source) -> None:
        number = next(numbers)
        path, copy = folder / f"{number}.tar", folder / f"{number}.saved.tar"
        try:
            if as_saved:
                with copy.open("wb") as target:
                    layer, raw_diff_id = rewrite_stream(_Tee(source, target), path, times)
            else:
                layer, raw_diff_id = rewrite_stream(source, path, times)
        except tarfile.TarError as exc:
            raise SaveUnreadable(f"{source.what}: a layer that is not a tar ({exc})") from None
        if raw_diff_id in as_saved and raw_diff_id not in sent_as_saved:
            sent_as_saved.add(raw_diff_id)
            if on_rewritten is not None:
                on_rewritten(base_member_name(raw_diff_id), copy)
        else:
            copy.unlink(missing_ok=True)
        if raw_diff_id in wanted and raw_diff_id not in rewritten:
            rewritten[raw_diff_id] = (layer, path)
            if on_rewritten is not None:
                on_rewritten(_member_name(path), path)
        else:  # a base layer, or one the image holds twice
            path.unlink()

    saved = read_save(client, image, rewrite)
    _require((wanted | as_saved) - set(rewritten) - sent_as_saved, image["Id"])
    return saved.config, rewritten


def rewrite_from_files(client, image: dict, wanted: set[str], folder: Path, times: Times,
                       on_rewritten=None, as_saved: set[str] = frozenset()) -> tuple[bytes, dict]:
    """As rewrite_as_saved, each layer first spooled to a file and rewritten from it (seekable)."""
    config, spooled = save_layers(client, image, wanted | as_saved, folder / "raw")
    rewritten = {}
    for diff_id in as_saved:
        if on_rewritten is not None:
            on_rewritten(base_member_name(diff_id), spooled.pop(diff_id))
    for number, (raw_diff_id, source_path) in enumerate(spooled.items()):
        path = folder / f"{number}.tar"
        with source_path.open("rb") as source, path.open("wb") as out:
            try:
                rewritten[raw_diff_id] = (rewrite_layer(source, out, times), path)
            except tarfile.TarError as exc:
                raise SaveUnreadable(f"the engine's save of {image['Id'][:19]}: a layer that is not a tar "
                                     f"({exc})") from None
        source_path.unlink()  # the disk holds one copy of a layer, not two
        if on_rewritten is not None:
            on_rewritten(_member_name(path), path)
    return config, rewritten


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
    _require(wanted - set(spooled), image["Id"])
    return saved.config, spooled


def _require(missing: set[str], image_id: str) -> None:
    if missing:  # the save's reader checked every layer it declares: a layer wanted is not among them
        raise BuildFailed(f"the engine's save of {image_id[:19]} lacked {len(missing)} of its layers")
