"""engine/image_save.py: the engine's save read as it streams, against tars made by tarfile in every
format it writes, cut into chunks of any size, and against saves that are cut short or damaged."""

from __future__ import annotations

import io
import random
import tarfile

import pytest

from ngcbuild.engine.image_save import ChunkReader, SaveUnreadable, read_members

CONFIG = "c" * 64 + ".json"
LONG = "d" * 120 + "/layer.tar"  # over the 100 bytes of a tar header's name


def _save(members: list[tuple[str, bytes]], fmt=tarfile.USTAR_FORMAT) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for name, data in members:
            if name.endswith("/"):
                info = tarfile.TarInfo(name.rstrip("/"))
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _read(saved: bytes, chunk: int = 7919, take=None):
    """(config, [layer bytes]) as read_members reads `saved` served in chunks of `chunk` bytes."""
    chunks = [saved[i:i + chunk] for i in range(0, len(saved), chunk)]
    stream = io.BufferedReader(ChunkReader(chunks), 1 << 16)
    layers = []
    config = read_members(stream, CONFIG, lambda source: layers.append(source.read() if take is None
                                                                        else source.read(take)), "the save")
    return config, layers


MEMBERS = [("1" * 64 + "/", b""), ("1" * 64 + "/VERSION", b"1.0"), ("1" * 64 + "/json", b"{}"),
           ("1" * 64 + "/layer.tar", bytes(range(256)) * 40 + b"x"), ("2" * 64 + "/layer.tar", b""),
           (CONFIG, b'{"rootfs": {}}'), ("manifest.json", b"[]"), ("repositories", b"{}")]


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
@pytest.mark.parametrize("chunk", [1, 511, 512, 7919, 1 << 20])
def test_every_format_and_chunking_reads_as_tarfile_reads_it(fmt, chunk):
    members = MEMBERS + ([(LONG, b"long" * 300)] if fmt != tarfile.USTAR_FORMAT else [])
    config, layers = _read(_save(members, fmt), chunk)
    assert config == b'{"rootfs": {}}'
    assert layers == [data for name, data in members if name.endswith("/layer.tar")]


def test_what_a_layer_leaves_unread_is_passed_over():
    config, layers = _read(_save(MEMBERS), take=100)
    assert config == b'{"rootfs": {}}'
    assert layers == [(bytes(range(256)) * 40)[:100], b""]


def test_pax_size_and_path_records_are_applied():
    data = b"z" * 2000
    info = tarfile.TarInfo("short")
    info.size = len(data)
    info.pax_headers = {"path": "9" * 64 + "/layer.tar", "size": str(len(data))}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    assert _read(out.getvalue()) == (b"", [data])


@pytest.mark.parametrize("seed", range(40))
def test_a_save_cut_anywhere_is_refused_as_unreadable(seed):
    saved = _save(MEMBERS + [(LONG, b"q" * 3000)], tarfile.PAX_FORMAT)
    end = saved.index(bytes(1024), len(saved) - 10240 - 1024)  # where the end marker starts
    cut = random.Random(seed).randrange(0, end)
    with pytest.raises(SaveUnreadable, match="the save"):
        _read(saved[:cut])


def test_a_damaged_header_is_refused():
    saved = bytearray(_save(MEMBERS))
    saved[150] ^= 0x55  # inside the first header's checksum
    with pytest.raises(SaveUnreadable, match="damaged tar header"):
        _read(bytes(saved))


def test_a_config_that_says_more_than_a_config_holds_is_refused_before_it_is_read():
    info = tarfile.TarInfo(CONFIG)
    info.size = 10 << 30
    with pytest.raises(SaveUnreadable, match="says 10737418240 bytes"):
        _read(info.tobuf(format=tarfile.GNU_FORMAT) + b"{}")


@pytest.mark.parametrize("records", [b"x" * 600, b"99999 path=a\n", b"12 path=a\n", b"0 =\n", b"6 path\n",
                                     b"-5 path=a\n", b" 9 path=a\n"])
def test_a_damaged_pax_header_is_refused(records):
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, len(records)
    block = info.tobuf(format=tarfile.USTAR_FORMAT) + records + bytes(-len(records) % 512) + bytes(1024)
    with pytest.raises(SaveUnreadable, match="PAX"):
        _read(block)


def test_an_extended_header_of_megabytes_is_refused_unread():
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, 50 << 20
    with pytest.raises(SaveUnreadable, match="extended header of 52428800 bytes"):
        _read(info.tobuf(format=tarfile.USTAR_FORMAT))


def test_a_pax_size_that_is_not_a_number_is_refused():
    info = tarfile.TarInfo("x")
    info.pax_headers = {"size": "ten"}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(info)
    with pytest.raises(SaveUnreadable, match="PAX size"):
        _read(out.getvalue())
