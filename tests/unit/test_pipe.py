"""core/pipe.py: bytes from one thread to another through memory, bounded, either side able to end it."""

from __future__ import annotations

import threading

import pytest

from ngcbuild.core.pipe import CHUNK, Pipe, PipeAbandoned


def _read_all(pipe: Pipe, size: int) -> bytes:
    parts = []
    while part := pipe.read(size):
        parts.append(part)
    return b"".join(parts)


@pytest.mark.parametrize("size", [1, 511, CHUNK, 3 * CHUNK + 7])
def test_what_is_written_in_pieces_of_any_size_is_read_whole_in_order(size):
    pieces = [bytes([n % 251]) * length for n, length in enumerate([512, 3, CHUNK, 10, 2 * CHUNK + 1, 0, 700])]
    pipe = Pipe(limit=2 * CHUNK)

    def write():
        for piece in pieces:
            pipe.write(piece)
        pipe.close()

    writer = threading.Thread(target=write)
    writer.start()
    assert _read_all(pipe, size) == b"".join(pieces)
    writer.join(10)
    assert not writer.is_alive()


def test_the_writer_waits_while_the_limit_is_reached():
    pipe = Pipe(limit=CHUNK)
    wrote = []

    def write():
        for _ in range(4):
            pipe.write(b"x" * CHUNK)
            wrote.append(1)
        pipe.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(0.5)
    assert len(wrote) == 1  # the second piece waits until the first is read
    assert len(_read_all(pipe, CHUNK)) == 4 * CHUNK and len(wrote) == 4


def test_the_writers_failure_is_raised_where_the_reader_reads():
    pipe = Pipe()
    pipe.write(b"a" * CHUNK)
    pipe.fail(ValueError("the layer is not a tar"))
    with pytest.raises(ValueError, match="not a tar"):
        _read_all(pipe, CHUNK)


def test_a_reader_that_leaves_ends_the_writer_at_its_next_write():
    pipe = Pipe(limit=CHUNK)
    ended = []

    def write():
        try:
            while True:
                pipe.write(b"y" * CHUNK)
        except PipeAbandoned:
            ended.append(True)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert pipe.read(10) == b"y" * 10
    pipe.abandon()
    writer.join(10)
    assert ended == [True]
