"""Layers compressed once per machine: the blobs ngcbuild's pushes made, kept by the diff id of the layer each
one compresses, with the configs that name them. A push of an image whose layers were all compressed before
(the same image to a second registry, a release whose commit changed nothing its steps read, a release built
again with another label) neither saves the image from the engine nor compresses anything; a push of an
image with one changed layer compresses that layer alone.

Where: $NGCBUILD_LAYER_STORE (a folder; `off` for none), else $XDG_CACHE_HOME/ngcbuild/layers, else
~/.cache/ngcbuild/layers. Its bound: $NGCBUILD_LAYER_STORE_GB gigabytes (default 20), the least recently used
blobs removed first once a push has added its own.

Layout: `<format>/blobs/sha256/<hex>` (a compressed layer), `<format>/diff/sha256/<hex>` (the layer of that
diff id: "sha256:<blob hex> <size>"), `configs/sha256/<hex>` (an image's config), `rewrites/sha256/<hex>`
(a hint: the release diff id a build layer's rewrite made before, by the key of what it was made from:
engine/release_image.BuildLayer.key), `tmp/` (a push's work, renamed into place when whole). `<format>`
names the compression (image/blobs.py's level, memory level, block and zlib's version): a blob another
compression made is never taken for ours.

Nothing stored is trusted: a layer is used only after its blob is read whole, its bytes hashing to the
digest its entry records and the bytes they inflate to hashing to the diff id asked for; a config only when
its bytes hash to the image id; a hint only as a guess, which the rewrite it names confirms or belies.
Anything else there (a link, a FIFO, a damaged or foreign file) is passed over, said once, and the layer
compressed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
import zlib
from pathlib import Path

from ngcbuild.core.outputs import short_path, write_file
from ngcbuild.core.text import safe
from ngcbuild.image.blobs import BLOCK, LEVEL, MEMORY_LEVEL, Blob

DEFAULT_GB = 20
FORMAT = f"gzip{LEVEL}-m{MEMORY_LEVEL}-b{BLOCK}-zlib{zlib.ZLIB_VERSION}"
RECENT_S = 600  # a blob used this recently is never removed to make room (a push may be about to send it)
STALE_TMP_S = 86400  # a push's work folder this old was left by a run that was killed
_CHUNK = 1 << 20
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
_ENTRY = re.compile(r"sha256:([0-9a-f]{64}) ([0-9]{1,15})\n")
_MAX_CONFIG = 8 << 20  # an image config: a few kB (history and labels), never megabytes


class LayerStore:
    def __init__(self, root: Path, cap_bytes: int, say=lambda line: None):
        self.root, self.cap, self.say = root, cap_bytes, say
        self.layers_root = root / FORMAT
        self._passed: set[str] = set()

    @classmethod
    def from_environment(cls, say, environ=os.environ) -> LayerStore | None:
        """The store the environment names, made if need be; None (said once) when it is `off` or cannot
        be made: the push then compresses every layer in its temporary folder, as without a store."""
        named = environ.get("NGCBUILD_LAYER_STORE", "").strip()
        if named.lower() == "off":
            return None
        if named:
            root = Path(named)
            if not root.is_absolute():  # never a folder made wherever the command happens to run
                say(f"warning: NGCBUILD_LAYER_STORE is not an absolute path ({safe(named, 80)}); every layer is "
                    "compressed for this push alone")
                return None
        else:
            cache = environ.get("XDG_CACHE_HOME", "").strip()
            base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
            root = base / "ngcbuild" / "layers"
        gigabytes = environ.get("NGCBUILD_LAYER_STORE_GB", "").strip() or str(DEFAULT_GB)
        if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,3})?", gigabytes):
            say(f"warning: NGCBUILD_LAYER_STORE_GB is not a number of gigabytes; using {DEFAULT_GB}")
            gigabytes = str(DEFAULT_GB)
        return cls.open(root, int(float(gigabytes) * 1e9), say)

    @classmethod
    def open(cls, root: Path, cap_bytes: int, say=lambda line: None) -> LayerStore | None:
        """The store at `root`, its folders made if need be; None (said) when they cannot be."""
        try:
            root = Path(os.path.realpath(root))
            for folder in (root / FORMAT / "blobs" / "sha256", root / FORMAT / "diff" / "sha256",
                           root / "configs" / "sha256", root / "rewrites" / "sha256", root / "tmp"):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            say(f"warning: the layer store {_shown(root)} cannot be used ({exc.strerror or exc}); every layer is "
                "compressed for this push alone")
            return None
        return cls(root, cap_bytes, say)

    def scratch(self) -> tempfile.TemporaryDirectory:
        """A work folder inside the store (the same file system: a finished blob is renamed into place)."""
        return tempfile.TemporaryDirectory(prefix="push-", dir=self.root / "tmp")

    # --- reading: nothing used unchecked -------------------------------------------------------------

    def layer(self, diff_id: str) -> Blob | None:
        """The stored blob of the layer `diff_id`, read whole and checked, or None."""
        found = _DIGEST.fullmatch(diff_id or "")
        if not found:
            return None
        entry = self.layers_root / "diff" / "sha256" / found.group(1)
        text = _small_file(entry, 200)
        if text is None:
            return self._pass_over(entry, "not a regular file") if os.path.lexists(entry) else None
        recorded = _ENTRY.fullmatch(text.decode("ascii", "replace"))
        if not recorded:
            return self._pass_over(entry, "its entry is not a digest and a size")
        path = self.layers_root / "blobs" / "sha256" / recorded.group(1)
        if not os.path.lexists(path):  # removed to make room, its entry with it but for a race: not damage
            return None
        problem = _check_blob(path, "sha256:" + recorded.group(1), int(recorded.group(2)), diff_id)
        if problem:
            return self._pass_over(path, problem)
        _touch(path)
        return Blob("sha256:" + recorded.group(1), int(recorded.group(2)), path)

    def config(self, image_id: str) -> bytes | None:
        """The config whose bytes hash to `image_id`, when one was kept (an engine whose image ids are config
        digests: Docker's legacy store, Podman), or None."""
        found = _DIGEST.fullmatch(image_id or "")
        if not found:
            return None
        path = self.root / "configs" / "sha256" / found.group(1)
        data = _small_file(path, _MAX_CONFIG)
        if data is None:
            return self._pass_over(path, "not a regular file") if os.path.lexists(path) else None
        if hashlib.sha256(data).hexdigest() != found.group(1):
            return self._pass_over(path, "its bytes are not the image id's")
        return data

    def rewrite_hint(self, key: str) -> str | None:
        """The release diff id a rewrite of `key` made before, as recorded (a guess: never checked here), or
        None."""
        found = _DIGEST.fullmatch(key or "")
        text = _small_file(self.root / "rewrites" / "sha256" / found.group(1), 100) if found else None
        named = _DIGEST.fullmatch((text or b"").decode("ascii", "replace").strip())
        return named.group(0) if named else None

    def _pass_over(self, path: Path, why: str) -> None:
        if str(path) not in self._passed:
            self._passed.add(str(path))
            self.say(f"warning: passed over {_shown(path)} in the layer store ({why}); "
                     "made again from the engine's save")
        return None

    # --- keeping: whole or not at all ----------------------------------------------------------------

    def keep_layer(self, diff_id: str, blob: Blob) -> Blob:
        """`blob` (a file in this store's scratch folder) kept for `diff_id`: renamed into place, then its
        entry written; the stored Blob. Anything that fails leaves the store as it was, and the blob where
        it is (the push goes on with it)."""
        found, named = _DIGEST.fullmatch(diff_id or ""), _DIGEST.fullmatch(blob.digest)
        if not found or not named:
            return blob
        target = self.layers_root / "blobs" / "sha256" / named.group(1)
        try:
            os.replace(blob.path, target)
        except OSError as exc:
            self.say(f"warning: the layer store could not keep {blob.digest[:19]} ({exc.strerror or exc})")
            return blob
        try:
            write_file(self.layers_root / "diff" / "sha256" / found.group(1), f"{blob.digest} {blob.size}\n",
                       within=self.root)
        except Exception as exc:  # OSError or the one writer's refusal (a link or FIFO where the entry goes)
            self.say(f"warning: the layer store could not record {blob.digest[:19]} ({exc})")
        return Blob(blob.digest, blob.size, target)

    def keep_rewrite_hint(self, key: str, diff_id: str) -> None:
        found = _DIGEST.fullmatch(key or "")
        if not found or not _DIGEST.fullmatch(diff_id or ""):
            return
        try:
            write_file(self.root / "rewrites" / "sha256" / found.group(1), diff_id + "\n", within=self.root)
        except Exception as exc:  # OSError or the one writer's refusal: the next push compresses it again
            self.say(f"warning: the layer store could not record a rewrite of {diff_id[:19]} ({exc})")

    def keep_config(self, config: bytes) -> None:
        try:
            write_file(self.root / "configs" / "sha256" / hashlib.sha256(config).hexdigest(), config,
                       within=self.root)
        except Exception as exc:  # OSError or the one writer's refusal: the push does not depend on it
            self.say(f"warning: the layer store could not keep the image's config ({exc})")

    def trim(self) -> None:
        """Least recently used blobs removed (with their entries) until the store is under its bound; none
        used in the last RECENT_S seconds; work folders of killed runs removed, and hints that name a layer
        the store no longer holds."""
        now = time.time()
        for work in _entries(self.root / "tmp"):
            if now - work.stat(follow_symlinks=False).st_mtime > STALE_TMP_S:
                shutil.rmtree(work.path, ignore_errors=True)
        self._trim_blobs(now)
        for hint in _entries(self.root / "rewrites" / "sha256"):
            named = _DIGEST.fullmatch((_small_file(Path(hint.path), 100) or b"").decode("ascii", "replace").strip())
            if not named or not os.path.lexists(self.layers_root / "diff" / "sha256" / named.group(1)):
                with contextlib.suppress(OSError):
                    os.unlink(hint.path)

    def _trim_blobs(self, now: float) -> None:
        blobs = [(entry.stat(follow_symlinks=False), entry)
                 for entry in _entries(self.layers_root / "blobs" / "sha256")]
        total = sum(info.st_size for info, _ in blobs)
        if total <= self.cap:
            return
        naming: dict[str, list[str]] = {}  # blob hex -> the entries (diff ids) that name it
        for entry in _entries(self.layers_root / "diff" / "sha256"):
            recorded = _ENTRY.fullmatch((_small_file(Path(entry.path), 200) or b"").decode("ascii", "replace"))
            if recorded:
                naming.setdefault(recorded.group(1), []).append(entry.path)
        removed = 0
        for info, entry in sorted(blobs, key=lambda pair: pair[0].st_mtime):
            if total <= self.cap:
                break
            if now - info.st_mtime < RECENT_S:
                continue
            for name in (*naming.get(entry.name, ()), entry.path):
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass
            total -= info.st_size
            removed += 1
        if removed:
            self.say(f"layer store: removed {removed} blob(s) used least recently; {total / 1e9:.1f} GB kept "
                     f"(bound {self.cap / 1e9:.0f} GB, $NGCBUILD_LAYER_STORE_GB)")


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as listing:
            return [entry for entry in listing if not entry.name.startswith(".")]
    except OSError:
        return []


def _open_regular(path: Path) -> int | None:
    """A descriptor of `path` when it is a regular file (never through a link, never a FIFO's wait)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _small_file(path: Path, limit: int) -> bytes | None:
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        if os.fstat(fd).st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _check_blob(path: Path, digest: str, size: int, diff_id: str) -> str | None:
    """Why the blob at `path` is not the gzip of the layer `diff_id` with that digest and size; None when it is."""
    fd = _open_regular(path)
    if fd is None:
        return "not a regular file"
    try:
        if os.fstat(fd).st_size != size:
            return f"{os.fstat(fd).st_size} bytes where its entry says {size}"
        packed, plain = hashlib.sha256(), hashlib.sha256()
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)  # one gzip member, as image/blobs.py writes
        while chunk := os.read(fd, _CHUNK):
            packed.update(chunk)
            plain.update(inflate.decompress(chunk, _CHUNK * 64))  # bounded: a layer of zeros inflates 1000-fold
            while inflate.unconsumed_tail:
                plain.update(inflate.decompress(inflate.unconsumed_tail, _CHUNK * 64))
        plain.update(inflate.flush())
        if "sha256:" + packed.hexdigest() != digest:
            return "its bytes are not the digest its entry records"
        if not inflate.eof or inflate.unused_data:
            return "not one whole gzip member"
        if "sha256:" + plain.hexdigest() != diff_id:
            return "it does not inflate to the layer asked for"
        return None
    except (OSError, zlib.error) as exc:
        return f"unreadable ({exc})"
    finally:
        os.close(fd)


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _shown(path: Path) -> str:
    """A path of the store as a line may print it: the project's short form, escaped (the folder is the
    environment's)."""
    return safe(short_path(path), 300)
