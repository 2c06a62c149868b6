"""The engine's save of an image (`GET /images/{name}/get`), streamed into the save's reader
(image/save.py), which reads it once as it passes and by what it declares, on any engine (docs/engines.md)."""

from __future__ import annotations

import io
import math

from ngcbuild.core.http import DEADLINE_VARIABLE, deadline_cap
from ngcbuild.core.streams import within
from ngcbuild.core.text import safe
from ngcbuild.image.save import CHUNK, ChunkReader, Saved, SaveUnreadable, read_members, too_slow

SAVE_START_S = 120  # before the first byte: an engine exports its layers first
# bytes of the inspect's Size a second, the slowest a save may come (a trickle is cut at its deadline); low,
# as an engine's Size may be its compressed content's (the containerd store), a third of what the save holds
SAVE_MIN_RATE = 2 << 20
MAX_SAVE_S = 6 * 3600  # a save of an image whose inspect answer names no size
SAVE_OVERHEAD = 1 << 30  # beside 16 times the image's Size (compressed, at worst): its layers once, tar headers


def read_save(client, image: dict, on_layer) -> Saved:
    """The engine's save of the image `image` (the engine's inspect answer), streamed: `on_layer(source)`
    for each layer member (a LayerSource: its uncompressed tar; what it leaves unread is passed over), in
    the save's order; the image as the save declares it, checked against `image`."""
    image_id = image.get("Id") if isinstance(image, dict) else None
    layers = ((image.get("RootFS") or {}).get("Layers") if isinstance(image, dict) else None)
    if not isinstance(image_id, str) or not isinstance(layers, list):
        raise SaveUnreadable("the engine's inspect answer has no image id or no RootFS layers")
    what = f"the engine's save of {safe(image_id[:19])}"
    size = image.get("Size")
    size = size if isinstance(size, int) and not isinstance(size, bool) and 0 <= size < 1 << 50 else None
    deadline = save_deadline_s(size)
    sized = f"{size} bytes: {SAVE_START_S}s and 1 s per {SAVE_MIN_RATE >> 20} MiB" if size is not None else \
        "the inspect answer names no size"
    cap = deadline_cap()  # $NGCBUILD_HTTP_DEADLINE_S: the most any one request may take, the engine's too
    if cap is not None and cap < deadline:
        deadline, sized = cap, f"${DEADLINE_VARIABLE}"
    most = 16 * size + SAVE_OVERHEAD if size is not None else None  # not a terabyte for a gigabyte
    # the request and every read on a thread of their own: an engine that sends no byte, or stalls in one
    # read (each read's own limit is the client's hour), is cut at the same deadline as one that trickles
    chunks = within(lambda: client.get_image(image_id, chunk_size=CHUNK), deadline,
                    lambda: too_slow((deadline, sized, what)))
    stream = io.BufferedReader(ChunkReader(chunks, (deadline, sized, what), most), CHUNK)
    return read_members(stream, on_layer, what, image_id, layers)


def save_deadline_s(size: int | None) -> float:
    """One deadline for a whole save, sized to the image (its inspect's Size): SAVE_START_S,
    and a second for every SAVE_MIN_RATE bytes (what is read passes through our compression or rewrite:
    the slowest of them reads several times faster); MAX_SAVE_S when the size is not known."""
    if size is None:
        return float(MAX_SAVE_S)
    return float(SAVE_START_S + math.ceil(size / SAVE_MIN_RATE))
