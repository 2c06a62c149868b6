"""`python -m dev.plain_push IMAGE REGISTRY REPOSITORY`: ngcbuild's push of the engine's IMAGE as the engine
holds it, without making its release image: the save streamed, each layer compressed as push compresses it
(image/blobs.py), sent as push sends it, with the blob sender beside, no layer store. The bench's baseline for
issue 52 item 2, "the save and compression the push does anyway" (dev/bench_layers.py), run as a process
of its own; it calls push's own parts, so it cannot drift from them. Not a user's command."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from ngcbuild.engine.client import connect
from ngcbuild.publish import layer_blobs, push
from ngcbuild.publish.blob_sender import BlobSender
from ngcbuild.registry.client import Registry


def main(image_id: str, host: str, repository_path: str) -> None:
    client = connect()
    registry = Registry(host)
    say = lambda line: print(line, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="ngcbuild-plain-push-") as tmp, \
            BlobSender(registry.without_retries(), repository_path, say) as early:
        blobs = layer_blobs._from_save(client, client.inspect_image(image_id), Path(tmp), say, None, early.offer)
        push._upload(registry.without_retries(), f"{host}/{repository_path}", repository_path, ["latest"], blobs,
                     sys.stdout, time.sleep, early.finish())


if __name__ == "__main__":
    main(*sys.argv[1:4])
