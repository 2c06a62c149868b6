"""The layer store (image/store.py) as push uses it (publish/layer_blobs.image_blobs): a layer compressed once
per machine, an image whose blobs are all stored pushed without a save, and nothing stored used unchecked."""

from __future__ import annotations

import gzip
import os
import time

import pytest

from ngcbuild.image import store as store_module
from ngcbuild.image.store import FORMAT, LayerStore
from ngcbuild.publish import layer_blobs

from ..helpers import SavingClient, docker_20_10_save


class _NoSave(SavingClient):
    def get_image(self, image_id, chunk_size=None):
        raise AssertionError("the engine was asked for a save")


def _store(tmp_path, lines, cap=1 << 30):
    return LayerStore.open(tmp_path / "store", cap, lines.append)


def _push_blobs(client, image_id, tmp_path, store, lines):
    return layer_blobs.image_blobs(client, image_id, tmp_path / f"push-{time.monotonic_ns()}", lines.append, store=store)


def test_a_second_push_of_the_image_neither_saves_nor_compresses(tmp_path):
    lines: list[str] = []
    store = _store(tmp_path, lines)
    image_id, save, layers, diff_ids = docker_20_10_save()
    first = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    assert sum("compressed layer" in line for line in lines) == 3
    lines.clear()
    again = _push_blobs(_NoSave(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    assert again.manifest() == first.manifest() and again.config == first.config
    assert [gzip.decompress(blob.path.read_bytes()) for blob in again.layers] == layers
    assert lines == ["the config and all 3 layers were compressed before (layer store, each read back whole and "
                     "checked): nothing saved or compressed"]


def test_an_image_of_the_same_layers_with_another_config_compresses_nothing(tmp_path, monkeypatch):
    lines: list[str] = []
    store = _store(tmp_path, lines)
    image_id, save, layers, diff_ids = docker_20_10_save()
    _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    (store.root / "configs" / "sha256" / image_id[7:]).unlink()  # as an image with another label would be

    def no_compression(*args, **kwargs):
        raise AssertionError("a stored layer was compressed again")

    monkeypatch.setattr(layer_blobs, "compress", no_compression)
    lines.clear()
    made = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    assert [gzip.decompress(blob.path.read_bytes()) for blob in made.layers] == layers
    assert sum("compressed before" in line for line in lines) == 3


@pytest.mark.parametrize("damage", ["flipped byte", "cut short", "another layer's blob", "entry garbage",
                                    "entry is a link", "blob is a fifo", "blob is a folder", "config not its id"])
def test_a_damaged_or_foreign_store_entry_is_passed_over_and_the_layer_compressed_again(tmp_path, damage):
    lines: list[str] = []
    store = _store(tmp_path, lines)
    image_id, save, layers, diff_ids = docker_20_10_save()
    first = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    big = first.layers[1]  # the layer of 3 MB
    entry = store.root / FORMAT / "diff" / "sha256" / diff_ids[1][7:]
    if damage == "flipped byte":
        data = bytearray(big.path.read_bytes())
        data[len(data) // 2] ^= 1
        big.path.write_bytes(bytes(data))
    elif damage == "cut short":
        big.path.write_bytes(big.path.read_bytes()[:-9])
    elif damage == "another layer's blob":
        entry.write_text(f"{first.layers[0].digest} {first.layers[0].size}\n")
    elif damage == "entry garbage":
        entry.write_bytes(b"\x1b[31m" + b"x" * 150)
    elif damage == "entry is a link":
        entry.unlink()
        entry.symlink_to("/etc/passwd")
    elif damage == "blob is a fifo":
        big.path.unlink()
        os.mkfifo(big.path)
    elif damage == "blob is a folder":
        big.path.unlink()
        big.path.mkdir()
    else:
        (store.root / "configs" / "sha256" / image_id[7:]).write_bytes(b'{"rootfs": {"diff_ids": []}}')
    lines.clear()
    started = time.monotonic()
    again = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    assert time.monotonic() - started < 30  # a FIFO is never waited on
    assert again.manifest() == first.manifest()
    assert [gzip.decompress(blob.path.read_bytes()) for blob in again.layers] == layers
    if damage == "config not its id":  # the save is read; the layers themselves are sound
        assert sum("compressed before" in line for line in lines) == 3
        return
    if damage == "blob is a folder":  # the rename over a folder fails: the layer is pushed from push's folder
        assert any("could not keep" in line for line in lines), lines
        return
    warned = [line for line in lines if "passed over" in line]
    assert len(warned) == 1 and "\x1b" not in warned[0], lines
    if damage == "entry is a link":  # never written through: the layer is pushed, the entry left as it is
        assert any("could not record" in line for line in lines), lines
    assert sum("compressed layer" in line for line in lines) == 1  # that layer alone
    assert store.layer(diff_ids[1]) is not None or damage == "entry is a link"  # kept again, whole


def test_the_environment_names_the_store_turns_it_off_or_falls_back_saying_why(tmp_path):
    lines: list[str] = []
    assert LayerStore.from_environment(lines.append, {"NGCBUILD_LAYER_STORE": "off"}) is None
    (tmp_path / "a-file").write_text("x")
    assert LayerStore.from_environment(lines.append, {"NGCBUILD_LAYER_STORE": str(tmp_path / "a-file" / "s")}) is None
    assert "cannot be used" in lines[-1] and "compressed for this push alone" in lines[-1]
    assert LayerStore.from_environment(lines.append, {"NGCBUILD_LAYER_STORE": "--rm"}) is None  # never made in the cwd
    assert "not an absolute path (--rm)" in lines[-1] and not os.path.exists("--rm")
    named = LayerStore.from_environment(lines.append, {"NGCBUILD_LAYER_STORE": str(tmp_path / "s"),
                                                       "NGCBUILD_LAYER_STORE_GB": "--5"})
    assert named is not None and named.root == tmp_path / "s" and named.cap == 20 * 10 ** 9
    assert "NGCBUILD_LAYER_STORE_GB is not a number" in lines[-1]
    cached = LayerStore.from_environment(lines.append, {"XDG_CACHE_HOME": str(tmp_path / "xdg"),
                                                        "NGCBUILD_LAYER_STORE_GB": "0.5"})
    assert cached.root == tmp_path / "xdg" / "ngcbuild" / "layers" and cached.cap == 5 * 10 ** 8


def test_trim_removes_the_least_recently_used_blobs_never_a_recent_one(tmp_path):
    lines: list[str] = []
    store = _store(tmp_path, lines)
    image_id, save, layers, diff_ids = docker_20_10_save()
    made = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    store.cap = 1  # every blob is over the bound
    store.trim()
    assert all(blob.path.exists() for blob in made.layers)  # all used just now
    old = time.time() - 2 * store_module.RECENT_S
    os.utime(made.layers[1].path, (old, old))
    os.utime(made.layers[0].path, (old - 10, old - 10))
    store.cap = made.layers[2].size + made.layers[1].size
    store.trim()
    assert not made.layers[0].path.exists() and made.layers[1].path.exists()  # the oldest went first, enough
    assert store.layer(diff_ids[0]) is None and "removed 1 blob(s)" in lines[-1]
    stale = store.root / "tmp" / "push-killed"
    stale.mkdir()
    os.utime(stale, (old - store_module.STALE_TMP_S, old - store_module.STALE_TMP_S))
    store.trim()
    assert not stale.exists()


def test_a_rewrite_hint_is_kept_until_the_layer_it_names_is_trimmed(tmp_path):
    """image/store.py's hints (the release layer a build layer's rewrite made before) are tiny, one per layer
    made: each goes when the layer it names leaves the store; one that names nothing, or is no hint, at once."""
    lines: list[str] = []
    store = _store(tmp_path, lines)
    image_id, save, layers, diff_ids = docker_20_10_save()
    made = _push_blobs(SavingClient(image_id, save, diff_ids), image_id, tmp_path, store, lines)
    keys = ["sha256:" + str(n) * 64 for n in range(4)]
    for key, diff_id in zip(keys[:3], diff_ids[:2] + ["sha256:" + "e" * 64], strict=True):
        store.keep_rewrite_hint(key, diff_id)
    hints = store.root / "rewrites" / "sha256"
    os.mkfifo(hints / keys[3][7:])  # no hint: never waited on, removed
    assert store.rewrite_hint(keys[0]) == diff_ids[0] and store.rewrite_hint(keys[3]) is None
    store.trim()
    assert sorted(path.name for path in hints.iterdir()) == sorted(key[7:] for key in keys[:2])
    old = time.time() - 2 * store_module.RECENT_S
    os.utime(made.layers[0].path, (old, old))
    store.cap = sum(blob.size for blob in made.layers[1:])
    store.trim()
    assert [path.name for path in hints.iterdir()] == [keys[1][7:]]
