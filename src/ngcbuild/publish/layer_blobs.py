"""An engine's image as the blobs push sends: the engine's save streamed (engine/image_save.py), each layer
compressed as it passes (image/blobs.py), into push's temporary folder; with the layer store
(image/store.py), each layer compressed once per machine: a layer the store holds is not compressed again.

An image ngcbuild built carries its recipe (image/recipe.py): what is sent is its release image, made from
the save as it passes (release_image.py: the build's layers rewritten, the config normalised). An image
without one (built elsewhere) is sent as the engine holds it; when the store holds its config and every
layer, it is not even saved."""

from __future__ import annotations

import itertools
import queue
import shutil
import threading
from contextlib import suppress
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.core.jsonload import JsonRefused, load_json
from ngcbuild.core.pipe import Pipe
from ngcbuild.engine.image_save import read_save
from ngcbuild.engine.release_image import BuildLayer, Nowhere, make_release, recipe_of, spool
from ngcbuild.image.blobs import Blob, ImageBlobs, Stopped, compress
from ngcbuild.image.layer_tar import LayerRewrite, Rewritten
from ngcbuild.image.recipe import Recipe
from ngcbuild.image.store import LayerStore

FROM_ENVIRONMENT = object()  # the store the environment names (image/store.py); None: no store


def image_blobs(client, image_id: str, folder: Path, say, store=FROM_ENVIRONMENT, ready=None) -> ImageBlobs:
    """The config and compressed layers of `image_id`: from the layer store when it holds all of them, else
    from the engine's save of it (one pass: each layer the store lacks compressed as the save streams it; a
    layer the image holds twice is compressed once). `ready(blob)`, when given, is handed each layer's blob
    as soon as it exists, from whichever thread made it (push sends it meanwhile: blob_sender.py)."""
    ready = ready or (lambda blob: None)
    image = client.inspect_image(image_id)
    recipe = recipe_of(image)
    if store is FROM_ENVIRONMENT:
        store = LayerStore.from_environment(say)
    if recipe is not None:
        return _release_blobs(client, image, recipe, folder, say, store, ready)
    if store is None:
        return _from_save(client, image, folder, say, None, ready)
    made = _made_before(store, image, say)
    if made is not None:
        return made
    folder.mkdir(parents=True, exist_ok=True)
    with store.scratch() as work:
        blobs = _from_save(client, image, Path(work), say, store, ready, keep_in=folder)
    store.keep_config(blobs.config)
    store.trim()
    return blobs


def _release_blobs(client, image: dict, recipe: Recipe, folder: Path, say, store: LayerStore | None,
                   ready) -> ImageBlobs:
    """The release image of `image` (release_image.py), each of its layers compressed unless the store holds
    it (by the release diff id: a layer whose files did not change is compressed once per machine). A build
    layer is rewritten and compressed on threads of their own, the rewrite streamed into the compression
    (no rewritten tar on disk), while the next layers are read from the save. Which release layer a build
    layer makes is known only once it is rewritten: the store's hint (`rewrite_hint`) says which it made
    before, and when the store holds that one the rewrite is only hashed; a hint the rewrite belies is passed
    over and the layer compressed."""
    count = len(set((image.get("RootFS") or {}).get("Layers") or []))
    folder.mkdir(parents=True, exist_ok=True)
    numbered: dict[str, int] = {}  # the save's diff id -> the layer's number as said (a waiting layer keeps its own)

    def said_made(blob: Blob, number: int) -> Blob:
        say(f"compressed layer {number + 1}/{count}: {blob.size / 1e6:.1f} MB ({blob.digest[:19]})")
        ready(blob)
        return blob

    def stored_before(blob: Blob, number: int) -> Blob:
        say(f"layer {number + 1}/{count}: compressed before ({blob.digest[:19]}, layer store)")
        ready(blob)
        return blob

    def as_is(path: Path, diff_id: str, work: Path, compressor: _Compressor):
        """A base layer, the file as the save holds it."""
        number = numbered.setdefault(diff_id, len(numbered))
        stored = store.layer(diff_id) if store is not None else None
        if stored is not None:
            return stored_before(stored, number)
        owned = work / f"{number}.plain.tar"  # make_release removes its file when keep returns: moved out
        path.rename(owned)

        def job(stop) -> Blob:
            try:
                with owned.open("rb") as plain:
                    blob = _compressed(plain, work / f"{number}.tar.gz", diff_id, stop)
            finally:
                owned.unlink(missing_ok=True)
            return said_made(_kept(store, diff_id, blob, folder), number)
        return compressor.submit(job, lambda: owned.unlink(missing_ok=True))

    def rewritten(layer: BuildLayer, work: Path, compressor: _Compressor) -> _Pending:
        number = numbered.setdefault(layer.raw, len(numbered))

        def job(stop):
            with layer.rewrite() as rewrite:
                if layer.waits(rewrite):
                    return rewrite.done, None
                key = rewrite.key
                hint = store.rewrite_hint(key) if store is not None else None
                stored = store.layer(hint) if hint else None
                if stored is not None:  # hashed only: the stored blob is taken when the rewrite is what it made
                    done = rewrite.write(Nowhere())
                    if done.diff_id == hint:
                        return done, stored_before(stored, number)
                done, blob = _written_and_compressed(rewrite, work / f"{number}.tar.gz", stop)
            if store is not None:
                store.keep_rewrite_hint(key, done.diff_id)
            return done, said_made(_kept(store, done.diff_id, blob, folder), number)
        return compressor.submit(job, layer.discard)

    def made_in(work: Path) -> ImageBlobs:
        with _Compressor() as compressor:
            made = make_release(client, image, recipe, work / "layers",
                                lambda path, diff_id: as_is(path, diff_id, work, compressor),
                                lambda layer: rewritten(layer, work, compressor))
            layers = tuple(layer.result() if isinstance(layer, _Pending) else layer for layer in made.layers)
        say(made.said())
        return ImageBlobs(made.config, layers)

    if store is None:
        return made_in(folder)
    with store.scratch() as work:
        blobs_made = made_in(Path(work))
    store.keep_config(blobs_made.config)
    store.trim()
    return blobs_made


def _compressed(plain, target: Path, diff_id: str, stop) -> Blob:
    """The blob of the plain layer `diff_id` read from `plain`, written to `target`."""
    with target.open("wb") as packed:
        digest, size, inflated = compress(plain, packed, stop=stop)
    if inflated != diff_id:
        raise OperationError(f"the blob compressed from layer {diff_id[:19]} is not that layer's bytes "
                             "(the compression read other bytes): nothing pushed")
    return Blob(digest, size, target)


def _written_and_compressed(rewrite: LayerRewrite, target: Path, stop) -> tuple[Rewritten, Blob]:
    """`rewrite` written on a thread of its own into a pipe its compression reads (the two at once, on two
    cores; nothing between them on disk). The release diff id is what the compression read. A failure of the
    rewrite is raised here as it was raised there; a compression that fails or stops abandons the pipe, which
    ends the rewrite at its next write."""
    pipe = Pipe()
    result: list[Rewritten] = []

    def write() -> None:
        try:
            result.append(rewrite.write(pipe, hashed=False))
            pipe.close()
        except BaseException as exc:  # noqa: BLE001 - raised on the compression's side, as it is
            pipe.fail(exc)

    writer = threading.Thread(target=write, daemon=True, name="rewrite")
    writer.start()
    try:
        with target.open("wb") as packed:
            digest, size, inflated = compress(pipe, packed, stop=stop)
    except BaseException:
        pipe.abandon()
        writer.join(30)  # a write or two: the spool it reads is closed only once it has ended
        target.unlink(missing_ok=True)
        raise
    writer.join()
    done = result[0]
    done.diff_id = inflated
    return done, Blob(digest, size, target)


class _Pending:
    """A layer handed to the compressor: what its job made once done (result() waits), or what went wrong."""

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.failure: BaseException | None = None

    def result(self):
        self.done.wait()  # an interrupt wakes this wait at once
        if self.failure is not None:
            raise self.failure
        return self.value


class _Compressor:
    """One thread that makes the blobs of the layers handed to it, in order, while the caller reads the next
    from the save. At most AHEAD layers wait, spooled, so the disk a push uses stays a few layers. A job's
    failure is raised at the next hand-out or at result(); leaving the block stops the thread: the running
    compression ends within a block or two (blobs.Stopped), the waiting jobs never start, and each one's
    `discard` is called (its spooled layer removed)."""

    AHEAD = 2

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue(maxsize=self.AHEAD)
        self._stop = threading.Event()
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, daemon=True, name="compress")

    def __enter__(self) -> _Compressor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        with suppress(queue.Full):
            self._jobs.put_nowait(None)  # wakes a thread waiting for work
        self._thread.join(30)  # a block or two of deflate; a thread still busy then ends with the process

    def submit(self, job, discard) -> _Pending:
        """`job(stop)` run on the thread, its result the _Pending's; `discard()` called instead when it never
        runs (the job removes what it reads once it has run)."""
        if self._failed:
            raise self._failed[0]
        pending = _Pending()
        self._jobs.put((job, discard, pending))  # waits while AHEAD layers are waiting
        return pending

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._jobs.get()
            if item is None:
                break
            job, _, pending = item
            try:
                pending.value = job(self._stop.is_set)
            except BaseException as exc:  # handed to the caller, who raises it
                pending.failure = exc
                self._failed.append(exc)
            finally:
                pending.done.set()
        while True:  # what waits was never started: its spooled file goes now
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1]()
                item[2].failure = Stopped("not compressed: the push stopped")
                item[2].done.set()


def _made_before(store: LayerStore, image: dict, say) -> ImageBlobs | None:
    """The image's blobs when the store holds its config (by the image id) and every layer it names, each
    checked whole; else None."""
    config = store.config(image.get("Id", ""))
    if config is None:
        return None
    try:
        declared = (load_json(config, "a stored config").get("rootfs") or {}).get("diff_ids")
    except (JsonRefused, AttributeError):
        return None
    if not isinstance(declared, list) or declared != (image.get("RootFS") or {}).get("Layers"):
        return None
    layers: dict[str, Blob] = {}
    for diff_id in dict.fromkeys(declared):
        blob = store.layer(diff_id)
        if blob is None:
            return None
        layers[diff_id] = blob
    say(f"the config and all {len(layers)} layers were compressed before (layer store, each read back whole and "
        f"checked): nothing saved or compressed")
    return ImageBlobs(config, tuple(layers[diff_id] for diff_id in declared))


def _from_save(client, image: dict, folder: Path, say, store: LayerStore | None, ready,
               keep_in: Path | None = None):
    image_id = image["Id"]
    count = len(set((image.get("RootFS") or {}).get("Layers") or []))
    folder.mkdir(parents=True, exist_ok=True)
    blobs: dict[str, Blob] = {}
    numbers = itertools.count()

    def compressed(source, number: int) -> tuple[str, Blob]:
        path = folder / f"{number}.tar.gz"
        with path.open("wb") as target:
            digest, size, diff_id = compress(source, target)
        return diff_id, Blob(digest, size, path)

    def keep(source) -> Blob:
        number = next(numbers)
        if store is None:
            diff_id, blob = compressed(source, number)
        else:  # spooled as it is, to learn its diff id before deciding to compress it
            spooled, declared = spool(source, folder / f"{number}.tar")
            try:
                if declared in blobs:
                    return blobs[declared]
                stored = store.layer(declared)
                if stored is not None:
                    blobs[declared] = stored
                    say(f"layer {len(blobs)}/{count}: compressed before ({stored.digest[:19]}, layer store)")
                    ready(stored)
                    return stored
                with spooled.open("rb") as plain:
                    diff_id, blob = compressed(plain, number)  # keyed by what the compression read, checked below
            finally:
                spooled.unlink(missing_ok=True)
        if diff_id in blobs:
            blob.path.unlink()
            return blobs[diff_id]
        blobs[diff_id] = blob = _kept(store, diff_id, blob, keep_in)
        say(f"compressed layer {len(blobs)}/{count}: {blob.size / 1e6:.1f} MB ({blob.digest[:19]})")
        ready(blob)
        return blob

    saved = read_save(client, image, keep)  # the image as the save declares it, checked against the inspect
    for layer in saved.layers:  # each blob made of the whole layer the save declares, or nothing is pushed
        if blobs.get(layer.diff_id) is not layer.result:
            raise OperationError(f"the blob compressed from layer {layer.diff_id[:19]} of {image_id[:19]} is not "
                                 "that layer's bytes (the compression read other or fewer bytes): nothing pushed")
    return ImageBlobs(saved.config, tuple(layer.result for layer in saved.layers))


def _kept(store: LayerStore | None, diff_id: str, blob: Blob, push_folder: Path | None) -> Blob:
    """`blob` kept in the store for `diff_id`; not kept (no store, or its file system refused the rename): where
    it is, or out of the store's work folder into push's."""
    if store is None:
        return blob
    kept = store.keep_layer(diff_id, blob)
    if kept.path != blob.path:
        return kept
    return Blob(blob.digest, blob.size, Path(shutil.move(blob.path, push_folder / blob.path.name)))
