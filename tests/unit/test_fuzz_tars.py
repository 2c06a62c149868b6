"""Property-based tests (hypothesis) of the two tar readers an engine's answer reaches (issue 54 item 2):
the save reader (image/save.py) and the layer rewriter (image/layer_tar.py), fed structure-aware tars:
every member type, GNU sparse members, chains of PAX and GNU long-name headers, cut at any byte. Every
example ends in success or the one clean error (the save's SaveUnreadable; the rewriter's tarfile.TarError
or Unstreamable, which the normalising step turns into SaveUnreadable: exit 1), within a bound of thread
CPU time, never another exception; and what the rewriter writes reads the same to Python's tarfile and to
GNU tar (the names, in order, and the bytes of every file). The test_fuzz.py pattern: one warm call, a
Tally per property, the bound on the thread's CPU time."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ngcbuild.image.layer_tar import LayerOutOfShape, Times, Unstreamable, rewrite_stream
from ngcbuild.image.save import SaveUnreadable, read_members

from ..corpus.push_hostile import DIFF_ID, IMAGE_ID, SAVED
from ..helpers import FuzzTally

pytestmark = pytest.mark.reliability

EXAMPLES = max(10, int(os.environ.get("NGCBUILD_FUZZ_EXAMPLES", "300")) // 4)  # an accepted one runs GNU tar twice
BOUND_S = 2.0
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
TIMES = Times(1_700_000_000, 1_690_000_000)
NAMES = st.text(alphabet="abcdefghij0123456789._-", min_size=1, max_size=12)
KINDS = ["reg", "areg", "cont", "dir", "sym", "lnk", "chr", "blk", "fifo", "sparse", "unknown"]
FORMATS = {"gnu": tarfile.GNU_FORMAT, "pax": tarfile.PAX_FORMAT, "ustar": tarfile.USTAR_FORMAT}


def _checksum(header: bytearray) -> bytearray:
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header[:512])
    return header


def _sparse(name: str, data: bytes, hole: int) -> bytes:
    """An old GNU sparse member: `data` stored at offset `hole` of a file of hole + len(data) bytes, its map
    in the header (as GNU tar writes one)."""
    info = tarfile.TarInfo(name)
    info.size, info.type = len(data), tarfile.GNUTYPE_SPARSE
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT)[-512:])
    header[386:398] = b"%011o\0" % hole
    header[398:410] = b"%011o\0" % len(data)
    header[482] = 0
    header[483:495] = b"%011o\0" % (hole + len(data))
    padding = b"\0" * (-len(data) % 512)
    return bytes(_checksum(header)) + data + padding


def _pax_record(record: bytes, garbled: bool = False) -> bytes:
    """One PAX record, its length the whole record's (or, `garbled`, one short)."""
    length = len(record) + 2
    length += len(str(length + len(str(length))))
    return f"{length - garbled} ".encode() + record + b"\n"


@st.composite
def members(draw) -> bytes:
    """One member as bytes: its headers (any extended headers before it, a chain of them at times) and data."""
    kind = draw(st.sampled_from(KINDS))
    depth = draw(st.integers(1, 4))
    name = "/".join(draw(st.lists(NAMES, min_size=depth, max_size=depth)))
    if draw(st.integers(0, 5)) == 0:
        name = "long-" + "n" * draw(st.integers(90, 300)) + "/" + name  # a long name: GNU L or PAX path
    form = draw(st.sampled_from(sorted(FORMATS)))
    data = draw(st.binary(max_size=1500))
    chain = b""
    for _ in range(draw(st.integers(0, 3)) if draw(st.booleans()) else 0):  # extended headers before it
        extended = tarfile.TarInfo("././@LongLink" if form == "gnu" else "././@PaxHeader")
        record = draw(st.sampled_from([b"comment=x", b"path=elsewhere/" + name.encode()[:40], b"mtime=1.5",
                                       b"SCHILY.xattr.user.k=v", b"uname=root", b"size=3"]))
        body = _pax_record(record, garbled=draw(st.integers(0, 7)) == 0) if form != "gnu" \
            else name.encode()[:200] + b"\0"
        extended.size = len(body)
        extended.type = tarfile.GNUTYPE_LONGNAME if form == "gnu" else tarfile.XHDTYPE
        chain += extended.tobuf(format=tarfile.USTAR_FORMAT if form != "gnu" else tarfile.GNU_FORMAT) \
            + body + b"\0" * (-len(body) % 512)
    if kind == "sparse":
        return chain + _sparse(name, data, draw(st.integers(0, 4096)))
    info = tarfile.TarInfo(name)
    info.mtime = draw(st.integers(0, 1 << 33))
    info.mode = draw(st.integers(0, 0o7777))
    info.uid, info.gid = draw(st.integers(0, 70000)), draw(st.integers(0, 70000))
    types = {"reg": tarfile.REGTYPE, "areg": tarfile.AREGTYPE, "cont": tarfile.CONTTYPE, "dir": tarfile.DIRTYPE,
             "sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE, "blk": tarfile.BLKTYPE,
             "fifo": tarfile.FIFOTYPE, "unknown": b"Z"}
    info.type = types[kind]
    if kind in ("sym", "lnk"):
        info.linkname = draw(st.sampled_from(["target", "a/b", "../up", "/etc/passwd", name]))
    if kind in ("chr", "blk"):
        info.devmajor, info.devminor = draw(st.integers(0, 255)), draw(st.integers(0, 255))
    carries = kind in ("reg", "areg", "cont", "unknown")
    info.size = len(data) if carries else 0
    try:
        header = info.tobuf(format=FORMATS[form])
    except ValueError:  # what USTAR cannot hold (a long name, a large id): written as GNU does
        header = info.tobuf(format=tarfile.GNU_FORMAT)
    return chain + header + (data + b"\0" * (-len(data) % 512) if carries else b"")


@st.composite
def layers(draw) -> bytes:
    """A layer tar: a few members, then (mostly) the end marker, at times cut at any byte."""
    data = b"".join(draw(st.lists(members(), min_size=1, max_size=6)))
    if draw(st.integers(0, 9)):
        data += b"\0" * 1024
    if draw(st.integers(0, 3)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return data


def _python_view(path) -> tuple[list[str], bytes]:
    with tarfile.open(path, mode="r:") as tar:
        members = tar.getmembers()
        names = [member.name.rstrip("/") for member in members]
        contents = b"".join(tar.extractfile(member).read() for member in members if member.isreg())
    return names, contents


def _gnu_view(path) -> tuple[list[str], bytes]:
    listed = subprocess.run(["tar", "--list", "--absolute-names", "--file", str(path)], capture_output=True, timeout=30)
    assert listed.returncode == 0, listed.stderr.decode(errors="replace")[:300]
    extracted = subprocess.run(["tar", "--extract", "--to-stdout", "--absolute-names", "--file", str(path)], capture_output=True,
                               timeout=30)
    assert extracted.returncode == 0, extracted.stderr.decode(errors="replace")[:300]
    names = [line.rstrip("/") for line in listed.stdout.decode().split("\n") if line]
    return names, extracted.stdout


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed")
def test_the_layer_rewriter_on_any_tar_is_a_clean_error_or_reads_the_same_to_both_readers(tmp_path, tally):
    count = tally("layer rewriter: structure-aware tars, GNU tar against tarfile")
    target = tmp_path / "out.tar"

    def rewrite(data: bytes) -> None:
        try:
            rewrite_stream(io.BytesIO(data), target, TIMES)
        except (tarfile.TarError, Unstreamable) as exc:
            raise _Clean() from exc

    count.warm(lambda: _clean_or(rewrite, b""))

    @SETTINGS
    @given(layers())
    def check(data):
        count.run(_clean_or, rewrite, data)
        if target.exists() and count.last_accepted:
            assert _python_view(target) == _gnu_view(target)
        target.unlink(missing_ok=True)

    check()


class _Clean(Exception):
    pass


def _clean_or(function, *args) -> None:
    try:
        function(*args)
    except _Clean:
        raise _Tallied() from None


class _Tallied(Exception):
    """A clean error, as the tally counts UserError."""


def test_a_long_chain_of_extended_headers_is_one_clean_error_not_a_recursion(tmp_path):
    for kind, name in ((tarfile.GNUTYPE_LONGNAME, "././@LongLink"), (tarfile.XHDTYPE, "././@PaxHeader")):
        body = b"10 path=a\n" if kind == tarfile.XHDTYPE else b"a" * 10
        one = tarfile.TarInfo(name)
        one.size, one.type = len(body), kind
        header = one.tobuf(format=tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT)
        chain = (header + body + b"\0" * (-len(body) % 512)) * 5000
        with pytest.raises(LayerOutOfShape, match="extended headers in a row"):
            rewrite_stream(io.BytesIO(chain + tarfile.TarInfo("x").tobuf() + b"\0" * 1024), tmp_path / "o", TIMES)


def test_an_extended_header_of_a_gigabyte_is_refused_before_it_is_read(tmp_path):
    huge = tarfile.TarInfo("././@PaxHeader")
    huge.size, huge.type = 1 << 30, tarfile.XHDTYPE
    with pytest.raises(LayerOutOfShape, match="extended header of 1073741824 bytes"):
        rewrite_stream(io.BytesIO(huge.tobuf(format=tarfile.GNU_FORMAT) + b"1" * 4096), tmp_path / "o", TIMES)


def test_a_sparse_member_is_written_back_as_the_file_it_stands_for(tmp_path):
    data = _sparse("sparse/file", b"the data after a hole", 10 << 20) + b"\0" * 1024
    done, _ = rewrite_stream(io.BytesIO(data), tmp_path / "out.tar", TIMES)
    python, gnu = _python_view(tmp_path / "out.tar"), _gnu_view(tmp_path / "out.tar")
    assert python == gnu and len(python[1]) == (10 << 20) + len(b"the data after a hole")
    with tarfile.open(tmp_path / "out.tar") as tar:
        assert [member.type for member in tar.getmembers()] == [tarfile.REGTYPE]


@st.composite
def saves(draw) -> bytes:
    """The tiny image's save with members of any kind put among its own, at times cut at any byte."""
    with tarfile.open(fileobj=io.BytesIO(SAVED)) as tar:
        own = []
        for member in tar.getmembers():
            data = tar.extractfile(member).read() if member.isreg() else b""
            own.append(member.tobuf(format=tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % 512))
    extra = draw(st.lists(members(), max_size=4))
    mixed = own + extra
    order = draw(st.permutations(range(len(mixed))))
    data = b"".join(mixed[i] for i in order)
    if draw(st.integers(0, 5)):
        data += b"\0" * 1024
    if draw(st.integers(0, 2)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return data


def test_the_save_reader_on_any_save_is_the_image_or_one_clean_error(tally):
    count = tally("save reader: structure-aware saves, cut anywhere")

    def read(data: bytes) -> None:
        def drain(source) -> None:
            while source.read(1 << 16):
                pass
        try:
            read_members(io.BufferedReader(io.BytesIO(data)), drain, "the fuzzed save", IMAGE_ID, [DIFF_ID])
        except SaveUnreadable as exc:
            raise _Clean() from exc

    count.warm(lambda: _clean_or(read, SAVED))

    @SETTINGS
    @given(saves())
    def check(data):
        count.run(_clean_or, read, data)

    check()


@pytest.fixture
def tally(figures):
    made = []

    def make(case: str) -> FuzzTally:
        made.append(FuzzTally(figures, case, clean=_Tallied, bound_s=BOUND_S))
        return made[-1]

    yield make
    for one in made:
        one.record()


def test_the_save_reader_reads_a_chain_of_5000_extended_headers_flat():
    """The save's own tar reader (image/save.py) is a loop, not a recursion: a chain is read in linear time."""
    for kind, name, body in ((tarfile.GNUTYPE_LONGNAME, "././@LongLink", b"a" * 10),
                             (tarfile.XHDTYPE, "././@PaxHeader", b"10 path=a\n")):
        one = tarfile.TarInfo(name)
        one.size, one.type = len(body), kind
        header = one.tobuf(format=tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT)
        chain = (header + body + b"\0" * (-len(body) % 512)) * 5000
        saved = read_members(io.BufferedReader(io.BytesIO(chain + SAVED)), lambda source: source.read(),
                             "the save", IMAGE_ID, [DIFF_ID])
        assert [layer.diff_id for layer in saved.layers] == [DIFF_ID]
