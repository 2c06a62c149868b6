"""The engine's save read under one deadline for the whole stream, sized to the image, and at most a bound
of bytes beside its size (issue 54 item 1): a save that trickles, or streams far more than the image holds,
is one clean error (SaveUnreadable: exit 1), never a read that runs until the process is killed."""

from __future__ import annotations

import tarfile
import time

import pytest

from ngcbuild.engine import image_save
from ngcbuild.engine.image_save import read_save, save_deadline_s
from ngcbuild.image.save import SaveUnreadable

from ..corpus.push_hostile import DIFF_ID, IMAGE_ID, SAVED


class _Engine:
    """An engine whose save of the tiny image comes as `chunks` (a generator: a trickle, an endless stream)."""

    def __init__(self, chunks, size: int | None = len(SAVED)):
        self.chunks, self.size = chunks, size

    def image(self) -> dict:
        image = {"Id": IMAGE_ID, "RootFS": {"Type": "layers", "Layers": [DIFF_ID]}}
        if self.size is not None:
            image["Size"] = self.size
        return image

    def get_image(self, image_id, chunk_size=None):
        return self.chunks


def _drain(source) -> None:
    while source.read(1 << 16):
        pass


def test_a_whole_save_is_read():
    engine = _Engine(iter([SAVED[:700], SAVED[700:]]))
    assert [layer.diff_id for layer in read_save(engine, engine.image(), _drain).layers] == [DIFF_ID]


def test_a_trickled_save_is_cut_at_its_one_deadline(monkeypatch):
    monkeypatch.setattr(image_save, "SAVE_START_S", 1)

    def trickle():
        yield SAVED[:700]
        while True:  # a byte every 10 ms: each read answers, the whole never comes
            time.sleep(0.01)
            yield b"\0"

    engine = _Engine(trickle())
    started = time.monotonic()
    with pytest.raises(SaveUnreadable, match=r"not whole within 2s \(\d+ bytes: 1s and 1 s per 2 MiB\)"):
        read_save(engine, engine.image(), _drain)
    assert time.monotonic() - started < 10


def test_a_save_of_far_more_than_the_image_holds_is_cut_by_its_size(monkeypatch):
    monkeypatch.setattr(image_save, "SAVE_OVERHEAD", 8 << 20)  # the bound beside the size, made small
    layer = tarfile.TarInfo("big/layer.tar")
    layer.size = 1 << 40  # a terabyte layer, streamed as it claims
    header = layer.tobuf(format=tarfile.GNU_FORMAT)

    def endless():
        yield header + tarfile.TarInfo("inside").tobuf()
        while True:
            yield bytes(1 << 20)

    engine = _Engine(endless(), size=1)  # an image of one byte: a save of more than 8 MiB and 16 bytes is a lie
    with pytest.raises(SaveUnreadable, match=f"more than {(8 << 20) + 16} bytes, more than the image holds"):
        read_save(engine, engine.image(), _drain)


def test_the_deadline_grows_with_the_image_and_has_a_bound_without_a_size():
    assert save_deadline_s(0) == image_save.SAVE_START_S
    assert save_deadline_s(20 << 30) == image_save.SAVE_START_S + (20 << 30) // image_save.SAVE_MIN_RATE
    assert save_deadline_s(None) == image_save.MAX_SAVE_S


class _Stalling(_Engine):
    """An engine whose save blocks: before its answer (`at_request`), or in a read after its first 700 bytes;
    each block longer than any test (the client's own per-read limit is an hour)."""

    def __init__(self, at_request: bool):
        super().__init__(None)
        self.at_request, self.released = at_request, __import__("threading").Event()

    def get_image(self, image_id, chunk_size=None):
        if self.at_request:
            self.released.wait(60)
            return iter(())

        def stalled():
            yield SAVED[:700]
            self.released.wait(60)
        return stalled()


@pytest.mark.parametrize("at_request", [True, False], ids=["no-byte-at-all", "stalls-after-700-bytes"])
def test_a_save_that_stalls_is_cut_at_its_one_deadline_not_the_per_read_hour(monkeypatch, at_request):
    monkeypatch.setattr(image_save, "SAVE_START_S", 1)
    engine = _Stalling(at_request)
    started = time.monotonic()
    try:
        with pytest.raises(SaveUnreadable, match=r"not whole within 2s \(\d+ bytes: 1s and 1 s per 2 MiB\); the engine "
                                                 "stalls"):
            read_save(engine, engine.image(), _drain)
        assert time.monotonic() - started < 5
    finally:
        engine.released.set()


def test_within_hands_on_items_and_errors_and_is_cut_at_its_deadline():
    from ngcbuild.core.streams import within

    assert list(within(lambda: iter([1, 2, 3]), 5, lambda: TimeoutError("late"))) == [1, 2, 3]

    def broken():
        yield 1
        raise OSError("cut")
    with pytest.raises(OSError, match="cut"):
        list(within(broken, 5, lambda: TimeoutError("late")))
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="late"):
        list(within(lambda: (time.sleep(30), [])[1], 0.5, lambda: TimeoutError("late")))
    assert time.monotonic() - started < 3
