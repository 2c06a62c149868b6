"""An engine's image as the blobs push sends: the engine's save streamed (engine/image_save.py), each layer
compressed as it passes (image/blobs.py), into push's temporary folder."""

from __future__ import annotations

import itertools
from pathlib import Path

from ngcbuild.core.errors import OperationError
from ngcbuild.engine.image_save import read_save
from ngcbuild.image.blobs import Blob, ImageBlobs, compress


def image_blobs(client, image_id: str, folder: Path, say) -> ImageBlobs:
    """The config and compressed layers of `image_id`, from the engine's save of it (one pass: each layer is
    compressed as the save streams it; a layer the image holds twice is compressed once)."""
    image = client.inspect_image(image_id)
    count = len(set(image["RootFS"]["Layers"]))
    folder.mkdir(parents=True, exist_ok=True)
    blobs: dict[str, Blob] = {}
    numbers = itertools.count()

    def keep(source) -> Blob:
        path = folder / f"{next(numbers)}.tar.gz"
        with path.open("wb") as target:
            digest, size, diff_id = compress(source, target)
        if diff_id in blobs:
            path.unlink()
            return blobs[diff_id]
        blobs[diff_id] = Blob(digest, size, path)
        say(f"compressed layer {len(blobs)}/{count}: {size / 1e6:.1f} MB ({digest[:19]})")
        return blobs[diff_id]

    saved = read_save(client, image, keep)  # the image as the save declares it, checked against the inspect
    for layer in saved.layers:  # each blob made of the whole layer the save declares, or nothing is pushed
        if blobs.get(layer.diff_id) is not layer.result:
            raise OperationError(f"the blob compressed from layer {layer.diff_id[:19]} of {image_id[:19]} is not "
                                 "that layer's bytes (the compression read other or fewer bytes): nothing pushed")
    return ImageBlobs(saved.config, tuple(layer.result for layer in saved.layers))
