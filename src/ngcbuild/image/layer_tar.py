"""One layer's tar rewritten deterministically: the same files, modes and owners give the same bytes.

- entries in the order of their paths taken component by component, so a folder's entries follow it
  at once: the order the engine walks a folder in, so a layer as the engine saves it is already in
  order and is rewritten as it streams (`rewrite_stream`; one that is not is sorted in a second pass);
  a hard link comes after the file it names: the first path of a group of links carries the data, the
  others link to it;
- every time by one rule (`Times`); no access or change times, no other PAX records than extended
  attributes (file capabilities live there);
- what is volatile by nature removed (volatile.py), and what an engine leaves in a layer that changes
  nothing in the image (artefacts.py: an opaque marker on a directory no lower layer holds, given the
  lower layers' directories; a build engine's mount points);
- owners by number only: the user and group names are blanked (Docker writes `root`, buildah nothing;
  a layer's files are owned by their numeric ids, the names are no part of what is unpacked);
- a `.pyc` with a timestamp header gets the time its source gets by the same rule, so it stays valid
  for that source and identical between builds (a hash-based `.pyc` is left as it is).

Numeric owners, modes, link targets, device numbers and whiteouts (`.wh.` entries) stay as the engine wrote
them. `Rewritten.dirs` names the directories a rewritten layer holds, so that a caller can hand the union of
the layers below a layer to its rewrite (`lower_dirs`; artefacts.py says why and how).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ngcbuild.core.text import safe
from ngcbuild.image.artefacts import MOUNTED_DIRS, OPAQUE, holds, plain, why_artefact
from ngcbuild.image.volatile import why_volatile

_PYC_MAGIC_TAIL = b"\r\n"  # every CPython .pyc magic number ends so
_KEPT_PAX = "SCHILY.xattr."
_CHUNK = 1 << 20


def path_order(name: str) -> list[str]:
    """The key entries are written in: a path's components, so `a/b` comes before `a.b` (as the engine
    walks folders), where plain text order would put `a.b` first."""
    return name.split("/")


# what a layer's headers may be (issue 54 item 2): tarfile reads a chain of PAX and GNU long-name headers by
# recursion, and reads each one's data whole; both bounded here, far above any engine's layer
MAX_CHAIN = 64  # extended headers (PAX x/g, GNU L/K) before one entry: an engine writes at most three
MAX_EXTENDED = 1 << 20  # bytes of one extended header's data (a path or link target of 4 KB, xattrs)
# a sparse member (GNU's old type S, or PAX sparse 0.x and 1.0) stands for a file whose holes the rewrite writes
# as zeros: a 2 KB layer declaring a 1 TB file wrote 5 GB in 25 s before it was killed, and a 51 MB map held
# 622 MB; a map cut short, or a PAX 1.0 map without its newlines, was an IndexError or ValueError. Per layer:
MAX_SPARSE_ENTRIES = 1 << 16  # map entries (data regions) of all its sparse members: about 20 MB held at most
MAX_SPARSE_HOLES = 1 << 30  # bytes of holes, written as zeros: about 20 s of the rewrite on our machines
MAX_SPARSE_MAP = 2 << 20  # bytes of maps as read (GNU's extension blocks, PAX 1.0's numbers): 3 to 5 s
_EXTENDED_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_KNOWN_TYPES = (*tarfile.REGULAR_TYPES, tarfile.LNKTYPE, tarfile.SYMTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE,
                tarfile.DIRTYPE, tarfile.FIFOTYPE)


class LayerOutOfShape(tarfile.TarError):
    """A layer whose headers are past the bounds above, or an entry of a type no engine writes: a TarError,
    which the normalising step says as one line (SaveUnreadable, exit 1)."""


class _Bounded(tarfile.TarInfo):
    """tarfile's reading of one entry's headers, bounded: at most MAX_CHAIN extended headers in a row, each
    at most MAX_EXTENDED bytes, checked before its data is read (tarfile's own `_proc_*` steps, which
    every Python from 3.8 to 3.13 has)."""

    @classmethod
    def fromtarfile(cls, tarfile_):
        depth = getattr(tarfile_, "_ngcbuild_chain", 0)
        if depth > MAX_CHAIN:
            raise LayerOutOfShape(f"more than {MAX_CHAIN} extended headers in a row (PAX or GNU long names)")
        tarfile_._ngcbuild_chain = depth + 1
        try:
            member = super().fromtarfile(tarfile_)
        finally:
            tarfile_._ngcbuild_chain = depth
        if member.sparse is not None and not getattr(member, "_ngcbuild_sparse", False):
            member._ngcbuild_sparse = True  # a PAX header's member comes back through its header's call too
            _count_sparse(member, tarfile_)
        return member

    def _proc_sparse(self, tarfile_):
        """GNU's old sparse member: its map's extension blocks read by tarfile, at most MAX_SPARSE_MAP bytes,
        and a layer ending inside them a LayerOutOfShape (tarfile: an IndexError)."""
        with _MapReads(tarfile_, self.name):
            return super()._proc_sparse(tarfile_)

    def _proc_gnusparse_10(self, next, pax_headers, tarfile_):
        """PAX sparse 1.0: the map before the data, read by tarfile, at most MAX_SPARSE_MAP bytes; one cut short
        or not of numbers on lines is a LayerOutOfShape (tarfile: a ValueError)."""
        with _MapReads(tarfile_, next.name):
            try:
                return super()._proc_gnusparse_10(next, pax_headers, tarfile_)
            except ValueError:
                raise LayerOutOfShape(f"{safe(next.name, 200)}: a PAX sparse map that is not numbers on lines") \
                    from None

    def _proc_member(self, tarfile_):
        if self.type in _EXTENDED_TYPES and self.size > MAX_EXTENDED:
            raise LayerOutOfShape(f"an extended header of {self.size} bytes (at most {MAX_EXTENDED})")
        if self.type not in _EXTENDED_TYPES and self.type not in _KNOWN_TYPES and \
                self.type != tarfile.GNUTYPE_SPARSE:
            raise LayerOutOfShape(f"{safe(self.name, 200)}: an entry of type {safe(self.type.decode('latin-1'), 8)}, "
                                  "which no engine writes")
        return super()._proc_member(tarfile_)


BoundedTarInfo = _Bounded  # tarfile's `tarinfo=` for any reader of a layer from outside (engine/compare.py)


class _MapReads:
    """tarfile's file object while a sparse map is read (read and tell, all tarfile asks then): at most
    MAX_SPARSE_MAP bytes of maps in the whole layer, and a read cut short (the layer ends inside the map) a
    LayerOutOfShape."""

    def __init__(self, tarfile_, name: str):
        self.tarfile, self.inner, self.name = tarfile_, tarfile_.fileobj, name
        self.count = getattr(tarfile_, "_ngcbuild_sparse_map", 0)

    def __enter__(self):
        self.tarfile.fileobj = self
        return self

    def __exit__(self, *exc) -> None:
        self.tarfile.fileobj = self.inner
        self.tarfile._ngcbuild_sparse_map = self.count

    def read(self, size: int) -> bytes:
        self.count += size
        if self.count > MAX_SPARSE_MAP:
            raise LayerOutOfShape(f"{safe(self.name, 200)}: sparse maps of more than {MAX_SPARSE_MAP} bytes in one "
                                  "layer")
        data = self.inner.read(size)
        if len(data) < size:
            raise LayerOutOfShape(f"{safe(self.name, 200)}: the layer ends inside a sparse map")
        return data

    def tell(self) -> int:
        return self.inner.tell()


def _count_sparse(member: tarfile.TarInfo, tarfile_) -> None:
    """A sparse member's map in order (each region after the last, within the file) and the layer's sparse
    members within MAX_SPARSE_ENTRIES entries and MAX_SPARSE_HOLES bytes of holes, all together."""
    name, end, data = safe(member.name, 200), 0, 0
    for offset, numbytes in member.sparse:
        if numbytes == 0 and isinstance(offset, int) and 0 <= offset <= member.size:
            continue  # an empty region (GNU tar ends its map with one; tarfile reads an unused slot as (0, 0))
        if not (isinstance(offset, int) and isinstance(numbytes, int)) or offset < end or numbytes < 0 \
                or offset + numbytes > member.size:
            raise LayerOutOfShape(f"{name}: a sparse map out of order or past the file's {member.size} bytes")
        end, data = offset + numbytes, data + numbytes
    entries = getattr(tarfile_, "_ngcbuild_sparse_entries", 0) + len(member.sparse)
    holes = getattr(tarfile_, "_ngcbuild_sparse_holes", 0) + member.size - data
    if entries > MAX_SPARSE_ENTRIES:
        raise LayerOutOfShape(f"{name}: sparse maps of more than {MAX_SPARSE_ENTRIES} entries in one layer")
    if holes > MAX_SPARSE_HOLES:
        raise LayerOutOfShape(f"{name}: sparse files whose holes are more than {MAX_SPARSE_HOLES} bytes in one "
                              "layer (each written as zeros)")
    tarfile_._ngcbuild_sparse_entries, tarfile_._ngcbuild_sparse_holes = entries, holes


class Unstreamable(Exception):
    """A layer the streamed rewrite cannot do as it reads: a hard link names a file it already removed
    as volatile (the file's data is gone by then; the seekable rewrite keeps such a file)."""


@dataclass(frozen=True)
class Times:
    """The one rule for every time in a normalised image's layers and history. A time later than the base
    image's creation (`made_after`) was written by the build itself (a file a step wrote, a history
    entry): it becomes the base's time, whenever the step ran (a step the layer cache gave, built days ago,
    or a cold one), so a layer depends on its files and its base alone, never on the commit or the day:
    a new epoch changes the config, not a layer. An earlier time is a file's own time as its package
    packed it: it stays. Either is clamped to the epoch (SOURCE_DATE_EPOCH's rule: nothing later)."""

    epoch: int
    made_after: int

    def __call__(self, seconds: int | float) -> int:
        seconds = int(seconds)
        if seconds > self.made_after:
            return min(self.made_after, self.epoch)
        return min(seconds, self.epoch)


@dataclass
class Rewritten:
    """What rewriting one layer did."""

    diff_id: str = ""  # sha256:<hex> of the rewritten tar
    size: int = 0
    written: bool = False  # False: not written (a rewrite that waits for the layers below: engine/release_image.py)
    entries: int = 0
    removed: dict[str, str] = field(default_factory=dict)  # path -> why (volatile.py, artefacts.py)
    pyc_clamped: int = 0
    # the directories the rewritten layer holds: its directory entries and every entry's parents (plain paths:
    # no leading `/` or `./`, no trailing `/`, the root left out): a caller's `lower_dirs` for the layers above
    dirs: set[str] = field(default_factory=set)
    # the directories whose opaque marker the rewrite kept: those a rewrite given `lower_dirs` may still drop
    opaque: set[str] = field(default_factory=set)

    @property
    def reads_lower(self) -> bool:
        """Whether a rewrite given `lower_dirs` may write this layer otherwise (artefacts.py's rules that read
        the layers below: an opaque marker below the root, an engine's mount point directory)."""
        return any(self.opaque) or bool(self.dirs & MOUNTED_DIRS)

    def held(self, member: tarfile.TarInfo) -> None:
        """`member`, written to the rewritten layer, counted in `dirs` and `opaque`."""
        self.dirs.update(holds(member))
        path = plain(member.name)
        if path.rsplit("/", 1)[-1] == OPAQUE:
            self.opaque.add(path.rpartition("/")[0])


def _why_removed(member: tarfile.TarInfo, lower_dirs: frozenset[str] | set[str] | None) -> str | None:
    """Why `member` leaves the layer (volatile.py, then artefacts.py), or None when it stays."""
    return why_volatile(member.name) or why_artefact(member, lower_dirs)


def lower_dirs_by_layer(layers: list[str], dirs: dict[str, set[str] | frozenset[str]]) -> dict[str, frozenset[str]]:
    """For each diff id of `layers` (the image's layers bottom up, the base's first: its config's order, never
    the save's), the `lower_dirs` its rewrite takes: the union of `dirs[d]` (`Rewritten.dirs`) of every layer
    below it. A layer the image holds twice takes the union below its last place: a superset of the one below
    its first, so that one rewrite is right at both (a larger set only keeps more markers)."""
    below: set[str] = set()
    found: dict[str, frozenset[str]] = {}
    for diff_id in layers:
        found[diff_id] = frozenset(below)
        below |= dirs[diff_id]
    return found


def layer_dirs(source: BinaryIO) -> set[str]:
    """The directories the layer tar `source` (seekable) holds, as `Rewritten.dirs` counts them, its headers
    read (bounded as a rewrite reads them), its data passed over: a base layer's, never rewritten, for the
    `lower_dirs` of the layers above it."""
    found: set[str] = set()
    with tarfile.open(fileobj=source, mode="r:", tarinfo=_Bounded) as raw:
        while (member := raw.next()) is not None:
            found.update(holds(member))
            raw.members.clear()  # headers read one at a time, none kept: a base of a million entries is fine
    return found


class _Hashing:
    """A writable file that counts (and, with `hashed`, hashes) what passes through it; its position is
    what it has been given (tarfile's writer asks, and pads the archive by it)."""

    def __init__(self, target: BinaryIO, hashed: bool = True):
        self.target, self.digest, self.size = target, hashlib.sha256() if hashed else None, 0

    def write(self, data) -> int:
        if self.digest is not None:
            self.digest.update(data)
        self.size += len(data)
        return self.target.write(data)

    def tell(self) -> int:
        return self.size


def clamp_pyc(data: bytes, times: Times) -> bytes:
    """A timestamp-based .pyc (PEP 552 flags 0) with its source time put through `times`; any other
    content unchanged."""
    if len(data) < 16 or data[2:4] != _PYC_MAGIC_TAIL or int.from_bytes(data[4:8], "little") != 0:
        return data
    stamp = int.from_bytes(data[8:12], "little")
    return data[:8] + (times(stamp) & 0xFFFFFFFF).to_bytes(4, "little") + data[12:]


def _carriers(members: list[tarfile.TarInfo]) -> dict[str, str]:
    """path -> the path that carries the data, for every path of a group of hard links (the group's
    first path in the order written)."""
    files = {member.name for member in members if member.isreg()}
    groups: dict[str, list[str]] = {}
    for member in members:
        if member.islnk() and member.linkname in files:
            groups.setdefault(member.linkname, [member.linkname]).append(member.name)
    carriers = {}
    for paths in groups.values():
        first = min(paths, key=path_order)
        carriers.update({path: first for path in paths})
    return carriers


def _clean(member: tarfile.TarInfo, times: Times) -> tarfile.TarInfo:
    info = tarfile.TarInfo(member.name)
    info.type, info.mode, info.uid, info.gid = member.type, member.mode, member.uid, member.gid
    if member.type == tarfile.GNUTYPE_SPARSE or member.issparse():
        # the file it stands for, holes as zeros: written back as type S without its map, Python's and GNU
        # tar's readers would disagree about it (0 bytes against the whole file)
        info.type = tarfile.REGTYPE
    # blank: Docker's tars say `root`, buildah's nothing, for the same uid 0; the numbers are what is unpacked
    info.uname, info.gname = "", ""
    info.size = member.size if member.isreg() else 0
    info.mtime = times(member.mtime)
    info.linkname = member.linkname
    info.devmajor, info.devminor = member.devmajor, member.devminor
    info.pax_headers = {key: value for key, value in sorted(member.pax_headers.items()) if key.startswith(_KEPT_PAX)}
    return info


def rewrite_layer(source: BinaryIO, target: BinaryIO, times: Times, *,
                  lower_dirs: frozenset[str] | set[str] | None = None) -> Rewritten:
    """Read the layer tar `source` (seekable) and write its normalised form to `target`. `lower_dirs`: the
    directories every layer below this one holds (the union of their `Rewritten.dirs`, the base's included);
    None when they are not known, which keeps every opaque marker (artefacts.py)."""
    return LayerRewrite(source, times, lower_dirs=lower_dirs).write(target)


class LayerRewrite:
    """A layer's rewrite, its headers read (`source` seekable, read again by each `write`): what it holds
    (`done`: its dirs, what it removes, whether it reads the layers below) and `key`, the digest of the
    headers it writes, are known before a byte of it is written."""

    def __init__(self, source: BinaryIO, times: Times, *, lower_dirs: frozenset[str] | set[str] | None = None):
        self.source, self.times, self.done = source, times, Rewritten()
        self.raw = tarfile.open(fileobj=source, mode="r:", tarinfo=_Bounded)
        members = self.raw.getmembers()
        self.by_name = {member.name: member for member in members}
        linked = {member.linkname for member in members if member.islnk()}
        self.kept = []
        for member in members:
            reason = _why_removed(member, lower_dirs)
            if reason is not None and member.name not in linked and not member.islnk():
                self.done.removed[member.name] = reason
            else:
                self.kept.append(member)
                self.done.held(member)
        self.kept.sort(key=lambda m: path_order(m.name))
        self.carriers = _carriers(self.kept)
        self.done.entries = len(self.kept)

    @property
    def key(self) -> str:
        """The digest of every header the rewrite writes, in order (the file's data left out): two layers with
        one key differ at most in their files' bytes."""
        digest = hashlib.sha256()
        for member in self.kept:
            info = _clean(member, self.times)
            digest.update(repr((member.name, info.type, info.mode, info.uid, info.gid, info.size, info.mtime,
                                info.linkname, info.devmajor, info.devminor, sorted(info.pax_headers.items()),
                                self.carriers.get(member.name))).encode("utf-8", "surrogateescape"))
        return "sha256:" + digest.hexdigest()

    def write(self, target: BinaryIO, hashed: bool = True) -> Rewritten:
        """The rewritten layer written to `target`; `hashed=False`: the diff id left to the caller (a compression
        that hashes what it reads: publish/layer_blobs.py)."""
        done = Rewritten(entries=self.done.entries, removed=dict(self.done.removed), dirs=set(self.done.dirs),
                         opaque=set(self.done.opaque))
        hashing = _Hashing(target, hashed)
        # written as a file, not a stream ("w|" cuts every write into 10 kB records): the same bytes, with each
        # file's data copied a MiB at a time (tarfile's default is 16 kB); 12% less CPU on 5 GB of /usr
        with tarfile.TarFile(fileobj=hashing, mode="w", format=tarfile.PAX_FORMAT, copybufsize=_CHUNK) as out:
            for member in self.kept:
                carrier = self.carriers.get(member.name)
                if carrier is None:
                    _copy(self.raw, member.name, member, out, self.times, done)
                elif carrier == member.name:  # the first of its group: the file, with the data
                    data = member if member.isreg() else self.by_name[member.linkname]
                    _copy(self.raw, member.name, data, out, self.times, done)
                else:  # every other path of the group links to the first
                    info = _clean(member, self.times)
                    info.type, info.size, info.linkname = tarfile.LNKTYPE, 0, carrier
                    out.addfile(info)
        done.size, done.written = hashing.size, True
        if hashing.digest is not None:
            done.diff_id = "sha256:" + hashing.digest.hexdigest()
        return done


class _HashingReader:
    """A readable file that hashes what is read through it."""

    def __init__(self, source: BinaryIO):
        self.source, self.digest = source, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        return data


def rewrite_stream(source: BinaryIO, target: Path, times: Times, *,
                   lower_dirs: frozenset[str] | set[str] | None = None) -> tuple[Rewritten, str]:
    """The layer tar `source`, read once to its end (a stream: the engine's save as it comes), written
    normalised to `target` as it is read, and the diff id of what was read. Entries that come in
    `path_order` (every layer an engine writes) go straight through; when one does not, the entries
    as read are sorted in a second pass from `target` (`rewrite_layer`): the same bytes either way.
    `lower_dirs` as rewrite_layer's. Raises Unstreamable when a hard link names a volatile file already removed."""
    done = Rewritten()
    reader = _HashingReader(source)
    dropped: set[str] = set()
    seen: set[str] = set()
    linked: set[str] = set()
    previous: list[str] | None = None
    in_order = True
    with target.open("wb") as sink:
        hashing = _Hashing(sink)
        with tarfile.open(fileobj=reader, mode="r|", tarinfo=_Bounded) as raw, \
                tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as out:
            for member in raw:
                if member.islnk() and member.linkname in dropped:
                    raise Unstreamable(f"{member.name} is a hard link to {member.linkname}, removed as volatile")
                reason = _why_removed(member, lower_dirs)
                if member.islnk():
                    linked.add(member.linkname)
                elif reason is not None and member.name not in linked:  # a link named it first: it stays
                    done.removed[member.name] = reason
                    dropped.add(member.name)
                    continue
                key = path_order(member.name)
                # a link to a path still to come: its group's first path is the link, which must carry the data
                in_order = in_order and (previous is None or previous < key) and \
                    (not member.islnk() or member.linkname in seen)
                previous = key
                seen.add(member.name)
                if member.islnk():  # in order, the first path of its group carries the data: it came first
                    out.addfile(_clean(member, times))
                else:
                    _copy(raw, member.name, member, out, times, done)
                done.held(member)
                done.entries += 1
    while reader.read(_CHUNK):  # what follows the tar's end marker is the layer's too
        pass
    raw_diff_id = "sha256:" + reader.digest.hexdigest()
    if in_order:
        done.diff_id, done.size, done.written = "sha256:" + hashing.digest.hexdigest(), hashing.size, True
        return done, raw_diff_id
    unsorted = target.with_name(target.name + ".unsorted")
    target.rename(unsorted)
    try:
        with unsorted.open("rb") as first, target.open("wb") as sink:
            sorted_pass = rewrite_layer(first, sink, times, lower_dirs=lower_dirs)
    finally:
        unsorted.unlink()
    sorted_pass.removed, sorted_pass.pyc_clamped = done.removed, done.pyc_clamped  # the first pass did them
    return sorted_pass, raw_diff_id


def _copy(raw: tarfile.TarFile, name: str, data: tarfile.TarInfo, out: tarfile.TarFile, times: Times,
          done: Rewritten) -> None:
    """`data`'s entry (and content) written under `name`."""
    info = _clean(data, times)
    info.name = name
    if not info.isreg():
        out.addfile(info)
        return
    handle = raw.extractfile(data)
    if info.name.endswith(".pyc") and info.size <= 1 << 24:
        content = handle.read()
        clamped = clamp_pyc(content, times)
        done.pyc_clamped += clamped != content
        out.addfile(info, io.BytesIO(clamped))
        return
    out.addfile(info, handle)
