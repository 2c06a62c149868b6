"""The engine's save of an image (`GET /images/{name}/get`), streamed into the save's reader
(image/save.py), which reads it once as it passes and by what it declares, on any engine (docs/engines.md)."""

from __future__ import annotations

import io

from ngcbuild.core.text import safe
from ngcbuild.image.save import CHUNK, ChunkReader, Saved, SaveUnreadable, read_members


def read_save(client, image: dict, on_layer) -> Saved:
    """The engine's save of the image `image` (the engine's inspect answer), streamed: `on_layer(source)`
    for each layer member (a LayerSource: its uncompressed tar; what it leaves unread is passed over), in
    the save's order; the image as the save declares it, checked against `image`."""
    image_id = image.get("Id") if isinstance(image, dict) else None
    layers = ((image.get("RootFS") or {}).get("Layers") if isinstance(image, dict) else None)
    if not isinstance(image_id, str) or not isinstance(layers, list):
        raise SaveUnreadable("the engine's inspect answer has no image id or no RootFS layers")
    stream = io.BufferedReader(ChunkReader(client.get_image(image_id, chunk_size=CHUNK)), CHUNK)
    return read_members(stream, on_layer, f"the engine's save of {safe(image_id[:19])}", image_id, layers)
