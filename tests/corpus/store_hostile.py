"""The layer store (image/store.py) as `invoke push --release dev` meets it: a store damaged, linked out of
itself, holding a FIFO, or named by the environment as something no folder can be. Each push still
succeeds (the store is a cache: nothing in it is needed), says once what it passed over, in escaped words,
and pushes the tiny image's true layer; nothing the store held that was not the layer asked for reaches the
registry. The control: a store holding the tiny image whole pushes it without asking the engine for a save.

The engine and the registry are push_hostile.py's (TinyEngine, an honest FakeRegistry)."""

from __future__ import annotations

import io
import os
import tarfile

from .hostile import HostileCase, dev, setup_all
from .push_hostile import (
    _WHOLE,
    IMAGE_ID,
    SAVED,
    _keep_stored,
    _pushed,
    _recipe,
    _record,
    pushing,
    recorded_as_stored,
    release_recorded,
)


def _tiny_parts() -> tuple[bytes, bytes]:
    """(the tiny image's config, its one layer), read out of the save push_hostile.py's engine answers."""
    with tarfile.open(fileobj=io.BytesIO(SAVED)) as save:
        config = save.extractfile(f"{IMAGE_ID[7:]}.json").read()
        layer = next(save.extractfile(member).read() for member in save.getmembers() if member.name.endswith(".tar"))
    return config, layer


def _stored(damage=None, config: bool = True):
    """A setup writing OUTSIDE/layer-store as a push of the tiny image leaves it, then `damage(store, blob)`."""
    def setup(project, outside):
        from ngcbuild.image.blobs import Blob, compress
        from ngcbuild.image.store import LayerStore

        tiny_config, layer = _tiny_parts()
        store = LayerStore.open(outside / "layer-store", 1 << 30)
        path = store.root / "tmp" / "layer.gz"
        with path.open("wb") as target:
            digest, size, diff_id = compress(io.BytesIO(layer), target)
        blob = store.keep_layer(diff_id, Blob(digest, size, path))
        if config:
            store.keep_config(tiny_config)
        if damage is not None:
            damage(store, blob, diff_id)
    return setup


def _flip(store, blob, diff_id):
    data = bytearray(blob.path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.path.write_bytes(bytes(data))


def _entry(store, diff_id):
    from ngcbuild.image.store import FORMAT

    return store.root / FORMAT / "diff" / "sha256" / diff_id[7:]


def _entry_links_out(store, blob, diff_id):
    entry = _entry(store, diff_id)
    entry.unlink()
    entry.symlink_to("/etc/passwd")


def _blob_is_a_fifo(store, blob, diff_id):
    blob.path.unlink()
    os.mkfifo(blob.path)


def _entry_names_another_blob(store, blob, diff_id):
    """The entry names a blob the store holds that is the gzip of other bytes (as a foreign tool might leave)."""
    from ngcbuild.image.blobs import compress

    other = store.root / "tmp" / "other.gz"
    with other.open("wb") as target:
        digest, size, _ = compress(io.BytesIO(b"not the tiny layer " * 100), target)
    os.replace(other, blob.path.parent / digest[7:])
    _entry(store, diff_id).write_text(f"{digest} {size}\n")


def _entry_escapes(store, blob, diff_id):
    _entry(store, diff_id).write_bytes(b"\x1b]0;owned\x07sha256:" + b"f" * 64 + b" 5\n")


def _config_is_another(store, blob, diff_id):
    (store.root / "configs" / "sha256" / IMAGE_ID[7:]).write_bytes(b'{"rootfs": {"diff_ids": ["sha256:' + b"0" * 64
                                                                   + b'"]}}')


def _release_layer() -> tuple[str, str, str]:
    """The tiny image's one layer as a release layer by the cases' recipe (_WHOLE: epoch 1700000000, no base
    layer): its rewrite's hint key, its release diff id and its blob's digest, as a clean push makes them."""
    from ngcbuild.image.blobs import compress
    from ngcbuild.image.layer_tar import LayerRewrite, Times

    _, layer = _tiny_parts()
    rewrite = LayerRewrite(io.BytesIO(layer), Times(1_700_000_000, 0))
    plain = io.BytesIO()
    done = rewrite.write(plain)
    return rewrite.key, done.diff_id, compress(io.BytesIO(plain.getvalue()), io.BytesIO())[0]


def _hinted(write_hint):
    """A setup leaving OUTSIDE/layer-store with a hint (image/store.py's `rewrites/`) for the tiny image's layer
    as `write_hint(store, path)` leaves it, and another layer stored (a hint may name it)."""
    def setup(project, outside):
        from ngcbuild.image.blobs import Blob, compress
        from ngcbuild.image.store import LayerStore

        store = LayerStore.open(outside / "layer-store", 1 << 30)
        path = store.root / "tmp" / "other.gz"
        with path.open("wb") as target:
            digest, size, diff_id = compress(io.BytesIO(b"\0" * 10240), target)  # an empty tar: another layer
        store.keep_layer(diff_id, Blob(digest, size, path))
        key = _release_layer()[0]
        write_hint(store, store.root / "rewrites" / "sha256" / key[7:], diff_id)
    return setup


def _hint_names_another_layer(store, path, other):
    path.write_text(other + "\n")


def _hint_is_a_fifo(store, path, other):
    os.mkfifo(path)


def _hint_links_out(store, path, other):
    path.symlink_to("/etc/passwd")


def _hint_escapes(store, path, other):
    path.write_bytes(b"\x1b]0;owned\x07" + other.encode() + b"\x1b[2J\n")


def _hint_names_the_layer(store, path, other):
    """The control: the store holds the release layer and the hint names it, as a push before left them."""
    from ngcbuild.image.blobs import Blob, compress
    from ngcbuild.image.layer_tar import LayerRewrite, Times

    plain = io.BytesIO()
    done = LayerRewrite(io.BytesIO(_tiny_parts()[1]), Times(1_700_000_000, 0)).write(plain)
    blob = store.root / "tmp" / "release.gz"
    with blob.open("wb") as target:
        digest, size, _ = compress(io.BytesIO(plain.getvalue()), target)
    store.keep_layer(done.diff_id, Blob(digest, size, blob))
    path.write_text(done.diff_id + "\n")


def pushed_the_release_layer(project, outside) -> str | None:
    """The release image recorded, and the one layer its manifest names is the blob a clean push makes of the
    tiny image's layer: no hint put another layer in its place."""
    import json

    wrong = release_recorded(project, outside)
    if wrong:
        return wrong
    (entry,) = _pushed(project).values()
    manifest = json.loads((outside / "stored" / entry["digest"].removeprefix("sha256:")).read_bytes())
    expected = _release_layer()[2]
    if manifest["layers"][0]["digest"] != expected:
        return f"the manifest names layer {manifest['layers'][0]['digest'][:19]}, not {expected[:19]}"
    return None


def _store_path_is_a_fifo(project, outside):
    os.mkfifo(outside / "fifo")


def store_cases(add) -> None:
    klass = "layer store (push)"
    base = setup_all(dev, _record)
    argv = ("push", "--release", "dev", "--registry", "REG")
    env = {"DOCKER_HOST": "unix://TINYENGINE"}
    passed_over = [
        ("push-layer-store-blob-flipped", _flip, ("passed over",)),
        ("push-layer-store-entry-links-out", _entry_links_out, ("passed over", "not a regular file")),
        ("push-layer-store-blob-is-a-fifo", _blob_is_a_fifo, ("passed over", "not a regular file")),
        ("push-layer-store-entry-names-another-blob", _entry_names_another_blob,
         ("passed over", "does not inflate to the layer asked for")),
        ("push-layer-store-entry-escapes", _entry_escapes, ("passed over", "not a digest and a size")),
    ]
    for name, damage, says in passed_over:
        add(HostileCase(name, klass, argv, setup_all(base, _stored(damage)), exit_status=0,
                        serve=pushing(_keep_stored), extra_env=env, after=recorded_as_stored,
                        shows=("(verified against the registry)", *says),
                        absent=("\x1b", "Traceback", "root:x:0")))
    add(HostileCase("push-layer-store-config-not-its-image", klass, argv, setup_all(base, _stored(_config_is_another)),
                    exit_status=0, serve=pushing(_keep_stored), extra_env=env, after=recorded_as_stored,
                    shows=("passed over", "(verified against the registry)"), absent=("Traceback",)))
    # a hint of what a build layer's rewrite made before (image/store.py's `rewrites/`) is a guess: one naming
    # another stored layer is belied by the rewrite and the layer compressed; a FIFO, a link or escapes there
    # are no hint; the control's names the stored release layer, which is sent without compressing it
    for name, write_hint in (("names-another-layer", _hint_names_another_layer), ("is-a-fifo", _hint_is_a_fifo),
                             ("links-out", _hint_links_out), ("escapes", _hint_escapes)):
        add(HostileCase(f"push-layer-store-rewrite-hint-{name}", klass, argv, setup_all(base, _hinted(write_hint)),
                        exit_status=0, serve=pushing(_keep_stored, labels=_recipe(_WHOLE)), extra_env=env,
                        after=pushed_the_release_layer,
                        shows=("compressed layer 1/1", "(verified against the registry)"),
                        absent=("\x1b", "Traceback", "root:x:0")))
    add(HostileCase("push-layer-store-rewrite-hint-names-the-layer", klass, argv,
                    setup_all(base, _hinted(_hint_names_the_layer)), exit_status=0,
                    serve=pushing(_keep_stored, labels=_recipe(_WHOLE)), extra_env=env, after=pushed_the_release_layer,
                    shows=("compressed before", "(verified against the registry)"), hides=("compressed layer",)))
    # the environment names something no store can be: said once, escaped; the push goes on without one
    for name, value in (("a-fifo", "OUTSIDE/fifo"), ("under-a-file", "OUTSIDE/project/README.md/\x1b]0;x\x07s"),
                        ("option-like", "--rm")):
        add(HostileCase(f"push-layer-store-env-{name}", klass, argv, setup_all(base, _store_path_is_a_fifo),
                        exit_status=0, serve=pushing(_keep_stored),
                        extra_env={**env, "NGCBUILD_LAYER_STORE": value, "NGCBUILD_LAYER_STORE_GB": "1e99; rm -rf ~"},
                        after=recorded_as_stored, shows=("(verified against the registry)",),
                        absent=("\x1b", "Traceback")))
    # the control: the store holds the tiny image whole, and the engine is not asked for its save (it would
    # answer one that is no tar: the push would fail)
    add(HostileCase("push-layer-store-holds-the-image-whole", klass, argv, setup_all(base, _stored()),
                    exit_status=0, serve=pushing(_keep_stored, saved=b"no save: this one is not a tar"),
                    extra_env=env, after=recorded_as_stored,
                    shows=("nothing saved or compressed", "(verified against the registry)"),
                    hides=("passed over", "compressed layer")))

