"""Pull and push progress on recorded event streams (tests/data/streams/transfer.json: a real pull of
the dev runtime cache image into an empty engine and its push to an empty registry)."""

import io
import json
from itertools import count

from ngcbuild.engine.transfer import TransferProgress, human_bytes

from ..conftest import REPO

STREAMS = json.loads((REPO / "tests" / "data" / "streams" / "transfer.json").read_text())


def _follow(events, tty: bool, verb: str) -> tuple[TransferProgress, str]:
    out = io.StringIO()
    ticks = count()
    progress = TransferProgress(out, verb=verb, clock=lambda: next(ticks) * 0.25, tty=tty)  # 4 events a second
    for event in events:
        progress.feed(event)
    progress.done()
    return progress, out.getvalue()


def test_a_log_gets_one_line_per_layer_with_its_size():
    progress, text = _follow(STREAMS["pull"], tty=False, verb="pulling")
    assert text.splitlines() == ["    3d7ee792222d: Pull complete (46.4 MB)", "    1fe89e3bda5a: Pull complete (57.5 MB)"]
    assert progress.moved() == 46437888 + 57540566
    assert progress.error is None
    assert progress.summary().startswith("2 layers, 0 already there, 104.0 MB moved in ")


def test_a_terminal_gets_one_line_rewritten_with_bytes_total_and_rate():
    progress, text = _follow(STREAMS["push"], tty=True, verb="pushing")
    frames = text.split("\r\x1b[K")[1:]
    assert len(frames) > 3  # redrawn as it goes, at most twice a second of the (fake) clock
    assert "\n" not in "".join(frames[:-1])  # in place until the end
    assert frames[-1].endswith("\n")
    last = frames[-1].strip()
    assert last.startswith("pushing: 244.9 MB of 244.9 MB, ")
    assert last.endswith("/s, 2/2 layers done")
    middle = frames[len(frames) // 2]
    done, total = middle.split(": ")[1].split(", ")[0].split(" of ")
    assert done != total and total == "244.9 MB"  # the total is known while bytes are still moving


def test_an_error_in_the_stream_is_kept_and_shown_by_the_caller():
    progress = TransferProgress(io.StringIO(), tty=False)
    progress.feed({"errorDetail": {"message": "manifest unknown"}, "error": "manifest unknown"})
    assert progress.error == "manifest unknown"


def test_human_bytes():
    assert [human_bytes(n) for n in (5, 1500, 2_500_000, 6.6e9, 12e12)] == ["5 B", "1.5 kB", "2.5 MB", "6.6 GB",
                                                                         "12000.0 GB"]
