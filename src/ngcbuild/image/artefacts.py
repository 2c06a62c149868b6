"""What a build engine leaves in a layer that no step wrote and that changes nothing in the image: removed by
the normalising step (layer_tar.py) so that the same steps give the same layer on Docker and on Podman.
Unlike volatile.py's, these rules read an entry's kind, size, mode and owner, and some the layers below it.

- An opaque marker (`D/.wh..wh..opq`: "hide what the layers below hold in D") on a directory D that no
  layer below holds hides nothing. Docker's overlay2 diff writes one in directories a step created (46 in
  dev's apt step: etc/ssl, usr/lib/python3.11, ...); buildah writes none. Only a caller that knows the
  directories of every layer below (the base's included) can say so: `lower_dirs`, the union of those
  layers' `Rewritten.dirs` (layer_tar.py). Without it (None) every marker stays.
- A build engine's mount points: buildah (Podman's builder) creates, in the first RUN step's layer, an empty
  file where it bind-mounts the container's /etc/hosts when the image has none (mode 0755, root's), and
  leaves /run (where it mounts files of its own) as an entry of its own, nothing under it, in the layer of
  every RUN step, though the layers below hold it. Docker keeps its mount points out of a layer (its `-init`
  layer). Every engine mounts its own /etc/hosts over the empty file when a container runs; without the /run
  entry, /run is as the layers below hold it, same mode and owner: only its time differs.

What stays: a file at those paths with content, another mode or another owner (a step's COPY of a real
/etc/hosts); /run with another mode or owner (a step's chmod or chown), or where no layer below holds it
(a step's mkdir), or when the layers below are not known. A RUN step's own write to /etc/hosts goes to the
engine's mount, never to a layer, on either engine.
"""

from __future__ import annotations

import tarfile

OPAQUE = ".wh..wh..opq"  # the overlay whiteout marker of an opaque directory (the OCI image spec's name)

OPAQUE_HIDES_NOTHING = ("an opaque marker on a directory no layer below holds: it hides nothing (Docker's overlay2 "
                        "writes one in directories a step created, buildah none)")
MOUNT_POINT_FILE = ("an empty file a build engine created to bind-mount over (buildah's, mode 0755, root's): "
                    "every engine mounts this path when a container runs")
MOUNT_POINT_DIR = ("a build engine's mount point (buildah's /run), which the layers below hold with this mode "
                   "and owner: only its time would change")

# where an engine bind-mounts a file of its own in every container (buildah creates the file when the image
# has none): seen live, etc/hosts; etc/hostname and etc/resolv.conf are mounted by the same code
_MOUNTED_FILES = frozenset({"etc/hosts", "etc/hostname", "etc/resolv.conf"})
MOUNTED_DIRS = frozenset({"run"})  # seen live: buildah's /run, in the first and last RUN steps' layers of dev
_ENGINE_MODE = 0o755  # what buildah gives a mount point it creates (a step's file gets 0644 by umask)


def plain(name: str) -> str:
    """A layer entry's path as `dirs` and `lower_dirs` hold it: no leading `/` or `./`, no trailing `/`."""
    return name.lstrip("/").removeprefix("./").rstrip("/")


def holds(member: tarfile.TarInfo) -> list[str]:
    """The directories an entry says its layer holds: its parents, and itself when it is a directory (a
    whiteout `.wh.X` says its parent is a directory, not that X is one)."""
    path = plain(member.name)
    parts = path.split("/")
    found = ["/".join(parts[:end]) for end in range(1, len(parts))]
    if member.isdir() and path:
        found.append(path)
    return found


def _by_the_engine(member: tarfile.TarInfo) -> bool:
    """The mode and owner a build engine gives a mount point it creates, and nothing else on it."""
    return member.mode & 0o7777 == _ENGINE_MODE and member.uid == 0 and member.gid == 0 and \
        not any(key.startswith("SCHILY.xattr.") for key in member.pax_headers)


def why_artefact(member: tarfile.TarInfo, lower_dirs: frozenset[str] | set[str] | None) -> str | None:
    """The reason `member` is an engine's artefact that leaves the layer, or None when it stays. `lower_dirs`:
    the directories every layer below holds (None: not known, so no rule that needs them applies)."""
    path = plain(member.name)
    parent, _, base = path.rpartition("/")
    if base == OPAQUE and member.isreg():
        # the root is always held below; a marker there would hide the whole image: never dropped
        if lower_dirs is not None and parent and parent not in lower_dirs:
            return OPAQUE_HIDES_NOTHING
        return None
    if path in _MOUNTED_FILES and member.isreg() and member.size == 0 and _by_the_engine(member):
        return MOUNT_POINT_FILE
    if path in MOUNTED_DIRS and member.isdir() and lower_dirs is not None and path in lower_dirs and \
            _by_the_engine(member):
        return MOUNT_POINT_DIR
    return None
