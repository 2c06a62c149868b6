"""The layer rewriter's bounds on sparse members (issue 54 item 2; image/layer_tar.py): GNU's old sparse
members (type S, their map continued in extension blocks) and PAX sparse 1.0 (the map before the data), as
a hostile layer writes them. Measured before the bounds: a 2 KB layer declaring a 1 TB file wrote 5 GB in
25 s and went on; a 51 MB map held 622 MB; a map cut short was an IndexError, a PAX 1.0 map without its
newlines a ValueError. Now each is one LayerOutOfShape (a TarError: one line, exit 1, from the normalising
step), and a layer at the bounds (65,104 map entries, 1 GiB of holes) took 5.7 s and 44 MB. What GNU tar
writes (--sparse, gnu and pax 0.1 and 1.0) is still read whole."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile

import pytest

from ngcbuild.image import layer_tar
from ngcbuild.image.layer_tar import LayerOutOfShape, Times, rewrite_layer, rewrite_stream

TIMES = Times(1_700_000_000, 1_690_000_000)
B = tarfile.BLOCKSIZE


def _octal(number: int) -> bytes:
    return b"%011o\0" % number


def _gnu_sparse(name: str, regions: list[tuple[int, int]], realsize: int, extension: list[list[tuple[int, int]]],
                cut: bool = False) -> bytes:
    """A GNU old-style sparse member: the first four regions in its header, the rest in extension blocks of 21;
    each region's data is `x`s. `cut`: the layer ends inside the extension blocks."""
    stored = sum(size for _, size in regions) + sum(size for block in extension for _, size in block)
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = tarfile.GNUTYPE_SPARSE, stored, 0o644
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT)[-B:])
    for slot, (offset, size) in enumerate(regions[:4]):
        header[386 + 24 * slot:398 + 24 * slot] = _octal(offset)
        header[398 + 24 * slot:410 + 24 * slot] = _octal(size)
    header[482] = 1 if extension else 0
    header[483:495] = _octal(realsize)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header[:B])
    blocks = []
    for number, block in enumerate(extension):
        data = bytearray(B)
        for slot, (offset, size) in enumerate(block[:21]):
            data[24 * slot:24 * slot + 12], data[24 * slot + 12:24 * slot + 24] = _octal(offset), _octal(size)
        data[504] = 1 if number + 1 < len(extension) or cut else 0
        blocks.append(bytes(data))
    if cut:
        return bytes(header) + b"".join(blocks)
    body = b"x" * stored
    return bytes(header) + b"".join(blocks) + body + bytes(-len(body) % B) + bytes(2 * B)


def _pax_sparse_10(name: str, map_text: bytes, realsize: int, data: bytes = b"") -> bytes:
    """A PAX sparse 1.0 member: its records, then `map_text` (padded to a block) and `data`."""
    info = tarfile.TarInfo(f"GNUSparseFile.0/{name}")
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
                        "GNU.sparse.realsize": str(realsize)}
    body = map_text + bytes(-len(map_text) % B) + data
    info.size = len(body)
    return info.tobuf(format=tarfile.PAX_FORMAT) + body + bytes(-len(body) % B) + bytes(2 * B)


def _chain(blocks: int, realsize: int, name: str = "chain") -> bytes:
    regions = [(2 * i, 1) for i in range(4)]
    extension = [[(8 + 2 * (21 * n + i), 1) for i in range(21)] for n in range(blocks)]
    return _gnu_sparse(name, regions, realsize, extension)


@pytest.mark.parametrize("layer, words", [
    (_gnu_sparse("huge", [((4 << 30) - 1, 1)], 4 << 30, []), "holes are more than 1073741824 bytes"),
    (_gnu_sparse("cut", [(0, 1)], 1 << 20, [[(2, 1)], [(4, 1)]], cut=True), "the layer ends inside a sparse map"),
    (_gnu_sparse("backwards", [(100, 1), (0, 1)], 1 << 20, []), "out of order or past the file"),
    (_gnu_sparse("past-the-end", [(10, 100)], 50, []), "out of order or past the file"),
    (_chain(4000, 1 << 24), "more than 65536 entries in one layer"),
    (_chain(100_000, 1 << 30), "sparse maps of more than 2097152 bytes in one layer"),
    (_pax_sparse_10("no-newline", b"1\n" + b"9" * 5000, 1 << 20), "not numbers on lines"),
    (_pax_sparse_10("short", b"1000\n1\n2\n", 1 << 20), "not numbers on lines"),
    (_pax_sparse_10("huge", b"1\n0\n1\n", 1 << 40, b"x"), "holes are more than 1073741824 bytes"),
    (_pax_sparse_10("endless-count", b"999999999\n" + b"0\n1\n" * 600_000, 1 << 20), "more than 2097152 bytes"),
], ids=["gnu-1tb-holes", "gnu-map-cut", "gnu-map-backwards", "gnu-map-past-the-end", "gnu-map-65k-entries",
        "gnu-map-51mb", "pax10-no-newline", "pax10-count-past-the-map", "pax10-1tb-holes", "pax10-endless-count"])
def test_a_hostile_sparse_map_is_one_clean_error_within_its_bounds(tmp_path, layer, words):
    with pytest.raises(LayerOutOfShape, match=words):
        rewrite_stream(io.BytesIO(layer), tmp_path / "out.tar", TIMES)
    with pytest.raises(LayerOutOfShape, match=words):
        rewrite_layer(io.BytesIO(layer), io.BytesIO(), TIMES)


def test_the_holes_of_a_layer_are_counted_together(tmp_path, monkeypatch):
    monkeypatch.setattr(layer_tar, "MAX_SPARSE_HOLES", 3 << 20)
    one = _gnu_sparse("one", [((2 << 20) - 1, 1)], 2 << 20, [])
    two = _gnu_sparse("two", [((2 << 20) - 1, 1)], 2 << 20, [])
    rewrite_stream(io.BytesIO(one), tmp_path / "one.tar", TIMES)  # 2 MiB of holes: within
    with pytest.raises(LayerOutOfShape, match="holes are more than 3145728 bytes"):
        rewrite_stream(io.BytesIO(one[:-2 * B] + two), tmp_path / "two.tar", TIMES)


def test_a_sparse_member_at_the_bounds_is_written_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(layer_tar, "MAX_SPARSE_HOLES", 1 << 22)
    done, _ = rewrite_stream(io.BytesIO(_chain(100, 1 << 22)), tmp_path / "out.tar", TIMES)
    with tarfile.open(tmp_path / "out.tar") as tar:
        (member,) = tar.getmembers()
        data = tar.extractfile(member).read()
    assert member.type == tarfile.REGTYPE and len(data) == 1 << 22 and data.count(b"x") == 4 + 21 * 100


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed")
@pytest.mark.parametrize("form", [["--format=gnu"], ["--format=pax", "--sparse-version=0.1"],
                                  ["--format=pax", "--sparse-version=1.0"]], ids=["gnu", "pax-0.1", "pax-1.0"])
def test_what_gnu_tar_writes_as_sparse_is_read_whole(tmp_path, form):
    source = tmp_path / "src"
    source.mkdir()
    with (source / "holes.img").open("wb") as image:
        image.truncate(8 << 20)
        image.seek(3 << 20)
        image.write(b"data in the middle")
    layer = tmp_path / "layer.tar"
    subprocess.run(["tar", "--sparse", *form, "-cf", str(layer), "-C", str(source), "holes.img"], check=True)
    rewrite_stream(io.BytesIO(layer.read_bytes()), tmp_path / "out.tar", TIMES)
    with tarfile.open(tmp_path / "out.tar") as tar:
        assert tar.extractfile("holes.img").read() == (source / "holes.img").read_bytes()


def test_the_maps_of_a_layer_are_counted_together(tmp_path, monkeypatch):
    monkeypatch.setattr(layer_tar, "MAX_SPARSE_MAP", 8 << 10)
    one = _chain(10, 1 << 20)  # 5 KB of extension blocks each: one is within, two are not
    rewrite_stream(io.BytesIO(one), tmp_path / "one.tar", TIMES)
    with pytest.raises(LayerOutOfShape, match="sparse maps of more than 8192 bytes in one layer"):
        rewrite_stream(io.BytesIO(one[:-2 * B] + _chain(10, 1 << 20, "other")), tmp_path / "two.tar", TIMES)


def test_repro_s_comparison_reads_a_layer_from_outside_within_the_same_bounds():
    """`repro --against REF` compares the layers of an image from outside (engine/compare.entries): a sparse
    file of a terabyte is one OperationError, not a terabyte of zeros hashed."""
    from ngcbuild.core.errors import OperationError
    from ngcbuild.engine.compare import entries

    with pytest.raises(OperationError, match="a layer to compare cannot be read: .*holes are more than"):
        entries(io.BytesIO(_pax_sparse_10("huge", b"1\n0\n1\n", 1 << 40, b"x")))
    found = entries(io.BytesIO(_gnu_sparse("small", [(100, 1)], 101, [])))
    assert found["small"].size == 101
