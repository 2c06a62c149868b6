"""engine/release_image.py: the release image made from an engine's save by the recipe its image carries
(image/recipe.py), nothing loaded back. The engine here answers an inspect and a save (Docker 20.10's layout)
of images made in the test; the real engines' are tests/integration/test_repro.py's and test_podman.py's."""

import hashlib
import io
import json
import tarfile

import pytest

from ngcbuild.core.errors import OperationError
from ngcbuild.engine.release_image import make_release, release_image_id
from ngcbuild.image.recipe import Recipe, base_chain
from ngcbuild.publish.layer_blobs import image_blobs

BASE_TIME = 1_700_000_000  # the base image's creation
EPOCH = 1_750_000_000


def _tar(files: dict[str, tuple[bytes, int]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, (data, mtime) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), mtime
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Engine:
    """An engine holding one image: its inspect answer and its save, made from layer tars and a config."""

    def __init__(self, layers: list[bytes], recipe: Recipe | None, config: bytes | None = None,
                 top_first: bool = False):
        diff_ids = [_digest(layer) for layer in layers]
        labels = recipe.label() if recipe is not None else {}
        document = {
            "architecture": "amd64", "os": "linux", "created": "2026-12-02T10:00:00.123Z",
            "container": "f00", "docker_version": "20.10.24",
            "config": {"Labels": labels, "Hostname": "f00"},
            "history": [{"created": "2023-11-14T22:13:20Z", "created_by": "debootstrap"},
                        {"created": "2026-12-02T10:00:00Z", "created_by": "RUN make"}],
        }
        document = {**document, "rootfs": {"type": "layers", "diff_ids": diff_ids}}
        self.config = config or json.dumps(document).encode()  # a config given: its very bytes
        self.image_id = _digest(self.config)
        numbered = list(enumerate(layers))  # the save's order of members; `top_first`: not the image's order
        files = {f"{n}/layer.tar": (layer, 0) for n, layer in (reversed(numbered) if top_first else numbered)}
        files[f"{self.image_id[7:]}.json"] = (self.config, 0)
        files["manifest.json"] = (json.dumps([{"Config": f"{self.image_id[7:]}.json", "RepoTags": None,
                                               "Layers": [f"{n}/layer.tar" for n in range(len(layers))]}]).encode(), 0)
        self.save, self.diff_ids, self.saves = _tar(files), diff_ids, 0
        self.answer = {"Id": self.image_id, "RootFS": {"Type": "layers", "Layers": diff_ids},
                       "Config": {"Labels": labels}, "Size": len(self.save)}

    def inspect_image(self, ref):
        return self.answer

    def get_image(self, image_id, chunk_size=None):
        self.saves += 1
        return (self.save[at:at + 4096] for at in range(0, len(self.save), 4096))


BASE = _tar({"etc/os-release": (b"debian\n", BASE_TIME - 500)})
RECIPE = Recipe(EPOCH, BASE_TIME, 1, base_chain([_digest(BASE)]))


def _built(when: int) -> bytes:
    """The build's layer, its files written at `when` (a step run then), with apt's log (volatile)."""
    return _tar({"opt/app": (b"the app\n", when), "var/log/apt/history.log": (b"Start-Date: %d\n" % when, when)})


def test_the_builds_layers_are_rewritten_the_bases_kept_and_the_config_normalised(tmp_path):
    engine = _Engine([BASE, _built(BASE_TIME + 3600)], RECIPE)
    kept = {}

    def keep(path, diff_id):
        kept[diff_id] = path.read_bytes()
        return diff_id

    made = make_release(engine, engine.answer, RECIPE, tmp_path / "work", keep)
    assert made.diff_ids[0] == engine.diff_ids[0]  # the base's layer as saved
    assert made.diff_ids[1] != engine.diff_ids[1] and made.rewritten == 1
    assert made.removed == {"var/log/apt/history.log": made.removed["var/log/apt/history.log"]}
    with tarfile.open(fileobj=io.BytesIO(kept[made.diff_ids[1]])) as layer:
        assert {m.name: m.mtime for m in layer} == {"opt/app": BASE_TIME}  # the build's time is the base's
    config = json.loads(made.config)
    assert config["rootfs"]["diff_ids"] == list(made.diff_ids)
    assert "container" not in config and config["config"]["Hostname"] == ""
    assert config["config"]["Labels"][next(iter(RECIPE.label()))] == RECIPE.label()[next(iter(RECIPE.label()))]
    assert made.image_id == _digest(made.config) != engine.image_id
    assert list((tmp_path / "work").iterdir()) == []  # one layer on disk at a time, none left


def test_two_engine_images_of_one_build_at_other_times_make_one_release_image(tmp_path):
    first = _Engine([BASE, _built(BASE_TIME + 60)], RECIPE)
    second = _Engine([BASE, _built(BASE_TIME + 86_400)], RECIPE)  # the same step, a day later
    assert first.image_id != second.image_id
    ids = [release_image_id(engine, engine.answer, RECIPE, tmp_path / str(n)).image_id
           for n, engine in enumerate((first, second))]
    assert ids[0] == ids[1]


def test_a_release_image_made_again_is_itself(tmp_path):
    """A release image pulled back (`repro --against` a pushed one, a build reused from a registry) carries the
    recipe too: made again, it is the same image (every rule is a fixed point)."""
    engine = _Engine([BASE, _built(BASE_TIME + 60)], RECIPE)
    layers = {}
    made = make_release(engine, engine.answer, RECIPE, tmp_path / "a",
                        lambda path, diff_id: layers.setdefault(diff_id, path.read_bytes()))
    pulled = _Engine(list(made.layers), RECIPE, config=made.config)
    assert pulled.image_id == made.image_id
    assert release_image_id(pulled, pulled.answer, RECIPE, tmp_path / "b").image_id == made.image_id


def test_an_image_whose_first_layers_are_not_its_recipes_base_is_refused_before_its_save(tmp_path):
    other = Recipe(EPOCH, BASE_TIME, 1, base_chain(["sha256:" + "0" * 64]))
    engine = _Engine([BASE, _built(BASE_TIME + 60)], other)
    with pytest.raises(OperationError, match="not the base image's its recipe names"):
        make_release(engine, engine.answer, other, tmp_path, lambda path, diff_id: diff_id)
    assert engine.saves == 0


def test_push_sends_the_release_image_and_compresses_each_layer_once(tmp_path, monkeypatch):
    from ngcbuild.image.store import LayerStore

    engine = _Engine([BASE, _built(BASE_TIME + 60)], RECIPE)
    store = LayerStore.open(tmp_path / "store", 1 << 30)
    said = []
    blobs = image_blobs(engine, engine.image_id, tmp_path / "push1", said.append, store=store)
    expected = release_image_id(engine, engine.answer, RECIPE, tmp_path / "id")
    assert blobs.image_id == expected.image_id and len(blobs.layers) == 2
    assert sum("compressed layer" in line for line in said) == 2
    assert any(line.startswith(f"release image {expected.image_id[:19]} made in") for line in said), said
    # the same build a day later: the same release layers, found in the store, nothing compressed
    later = _Engine([BASE, _built(BASE_TIME + 86_400)], RECIPE)
    said.clear()
    again = image_blobs(later, later.image_id, tmp_path / "push2", said.append, store=store)
    assert again.manifest() == blobs.manifest()
    assert not any("compressed layer" in line for line in said) and later.saves == 1


def test_an_image_without_a_recipe_is_sent_as_the_engine_holds_it(tmp_path):
    engine = _Engine([BASE, _built(BASE_TIME + 60)], None)
    blobs = image_blobs(engine, engine.image_id, tmp_path, lambda line: None, store=None)
    assert blobs.config == engine.config and blobs.image_id == engine.image_id


def test_a_damaged_recipe_is_one_line_naming_the_label(tmp_path):
    engine = _Engine([BASE, _built(BASE_TIME + 60)], RECIPE)
    engine.answer["Config"]["Labels"] = {next(iter(RECIPE.label())): "epoch=soon\x1b[2J"}
    with pytest.raises(OperationError, match="io.ngcbuild.release-image") as raised:
        image_blobs(engine, engine.image_id, tmp_path, lambda line: None, store=None)
    assert "\x1b" not in str(raised.value) and engine.saves == 0


def _entries(*entries: tuple[str, bytes | None]) -> bytes:
    """A layer tar of directories (data None: mode 0755) and files, root's, written at BASE_TIME + 60."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = BASE_TIME + 60
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_docker_and_podman_layers_of_one_step_make_one_release_layer_whatever_the_saves_order(tmp_path):
    """Docker's overlay2 marks the directories a step created opaque (`etc/ssl/.wh..wh..opq`), buildah leaves
    its /run mount point in the step's layer: each dropped only where the layers below say it changes nothing
    (image/artefacts.py), which the save, listing its layers in an order of its own, tells only once read."""
    base = _entries(("etc", None), ("etc/os-release", b"debian\n"), ("run", None))
    recipe = Recipe(EPOCH, BASE_TIME, 1, base_chain([_digest(base)]))
    docker = _entries(("etc", None), ("etc/.wh..wh..opq", b""), ("etc/ssl", None), ("etc/ssl/.wh..wh..opq", b""),
                      ("etc/ssl/cert.pem", b"pem\n"))
    podman = _entries(("etc", None), ("etc/ssl", None), ("etc/ssl/cert.pem", b"pem\n"), ("run", None))
    made = {}
    for name, layer, top_first in (("docker", docker, False), ("docker-top-first", docker, True),
                                   ("podman", podman, True)):
        engine = _Engine([base, layer], recipe, top_first=top_first)
        kept = {}
        made[name] = make_release(engine, engine.answer, recipe, tmp_path / name,
                                  lambda path, diff_id, kept=kept: kept.setdefault(diff_id, path.read_bytes()))
        assert list((tmp_path / name).iterdir()) == [], name  # no spool left behind
        with tarfile.open(fileobj=io.BytesIO(made[name].layers[1])) as tar:
            names = tar.getnames()
        assert "etc/ssl/.wh..wh..opq" not in names and "run" not in names and "etc/ssl/cert.pem" in names, name
    assert made["docker"].diff_ids == made["docker-top-first"].diff_ids
    # the marker on etc, which the base holds, hides something: Docker's layer keeps it, so it differs there only
    with tarfile.open(fileobj=io.BytesIO(made["docker"].layers[1])) as tar:
        assert "etc/.wh..wh..opq" in tar.getnames()
    without = _entries(("etc", None), ("etc/ssl", None), ("etc/ssl/.wh..wh..opq", b""), ("etc/ssl/cert.pem", b"pem\n"))
    engine = _Engine([base, without], recipe, top_first=True)
    assert release_image_id(engine, engine.answer, recipe, tmp_path / "w").diff_ids[1] == made["podman"].diff_ids[1]
    assert made["docker"].removed["etc/ssl/.wh..wh..opq"].startswith("an opaque marker")


def test_a_layer_waiting_for_the_layers_below_is_removed_when_the_save_fails(tmp_path):
    base = _entries(("etc", None), ("etc/os-release", b"debian\n"))
    recipe = Recipe(EPOCH, BASE_TIME, 1, base_chain([_digest(base)]))
    engine = _Engine([base, _entries(("opt", None), ("opt/.wh..wh..opq", b""))], recipe, top_first=True)
    engine.save = engine.save[:engine.save.index(engine.image_id[7:].encode())]  # cut after the layers
    with pytest.raises(OperationError):
        make_release(engine, engine.answer, recipe, tmp_path / "work", lambda path, diff_id: diff_id)
    assert list((tmp_path / "work").iterdir()) == []


def test_layers_compressed_beside_the_save_are_the_blobs_compressed_one_by_one(tmp_path):
    """publish/layer_blobs._Compressor: each layer compressed on its own thread while the next is read gives
    the very blobs the compression of each layer alone gives, in the image's order."""
    from ngcbuild.image.blobs import compress

    engine = _Engine([BASE, _built(BASE_TIME + 60), _entries(("srv", None), ("srv/x", b"x" * 300_000))], RECIPE)
    blobs = image_blobs(engine, engine.image_id, tmp_path / "push", lambda line: None, store=None)
    alone = make_release(engine, engine.answer, RECIPE, tmp_path / "alone",
                         lambda path, diff_id: compress(path.open("rb"), io.BytesIO())[0])
    assert [blob.digest for blob in blobs.layers] == list(alone.layers)


def test_a_compression_that_fails_beside_the_save_fails_the_push_and_leaves_no_spooled_layer(tmp_path, monkeypatch):
    from ngcbuild.image.store import LayerStore
    from ngcbuild.publish import layer_blobs

    real, calls = layer_blobs.compress, []

    def fails_second(source, target, stop=None):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(source, target, stop=stop)

    monkeypatch.setattr(layer_blobs, "compress", fails_second)
    engine = _Engine([BASE, _built(BASE_TIME + 60), _entries(("srv", None), ("srv/x", b"x" * 300_000))], RECIPE)
    store = LayerStore.open(tmp_path / "store", 1 << 30)
    with pytest.raises(OSError, match="No space left"):
        image_blobs(engine, engine.image_id, tmp_path / "push", lambda line: None, store=store)
    assert list((tmp_path / "store" / "tmp").iterdir()) == []  # the push's work folder, spooled layers and all


def test_leaving_the_compressor_stops_the_running_compression_and_drops_the_waiting_layers(tmp_path):
    import threading

    from ngcbuild.image.blobs import Stopped, compress
    from ngcbuild.publish.layer_blobs import _Compressor

    started, files = threading.Event(), [tmp_path / f"{n}.tar" for n in range(3)]
    for path in files:
        path.write_bytes(b"a" * (8 << 20))

    class Endless(io.RawIOBase):  # a layer that never ends: only the stop ends its compression
        def readable(self):
            return True

        def readinto(self, buffer):
            started.set()
            buffer[:len(buffer)] = b"b" * len(buffer)
            return len(buffer)

    pending = []
    with pytest.raises(KeyboardInterrupt):
        with _Compressor() as compressor:
            pending.append(compressor.submit(lambda stop: compress(Endless(), io.BytesIO(), stop=stop),
                                             lambda: pytest.fail("a running job was discarded")))
            pending += [compressor.submit(lambda stop: pytest.fail("a waiting layer was compressed"),
                                          lambda path=path: path.unlink())
                        for path in files[1:]]
            assert started.wait(10)
            raise KeyboardInterrupt  # as Ctrl-C raises in the main thread
    for each in pending:
        assert each.done.is_set()
        with pytest.raises(Stopped):
            each.result()
    assert files[0].exists() and not any(path.exists() for path in files[1:])  # the running job's is its own


def test_a_build_layer_cut_short_fails_the_push_where_its_rewrite_streams_into_the_compression(tmp_path):
    """The rewrite runs on a thread of its own, its output read by the compression (publish/layer_blobs.py):
    its failure is raised by the push as the rewrite raised it, and nothing of the push is left."""
    import threading

    from ngcbuild.image.save import SaveUnreadable
    from ngcbuild.image.store import LayerStore

    whole = _tar({"opt/big": (b"z" * 200_000, BASE_TIME + 60)})
    cut = whole[:512 * 3 + 100_000]  # the PAX header, the file's header, half its data: the save ends there
    cut += bytes(-len(cut) % 512)
    engine = _Engine([BASE, cut], RECIPE)
    store = LayerStore.open(tmp_path / "store", 1 << 30)
    before = threading.active_count()
    with pytest.raises(SaveUnreadable, match="a layer that is not a tar"):
        image_blobs(engine, engine.image_id, tmp_path / "push", lambda line: None, store=store)
    assert list((tmp_path / "store" / "tmp").iterdir()) == []
    assert threading.active_count() <= before  # the rewrite's thread and the compressor's have ended
    assert list((tmp_path / "store" / "rewrites" / "sha256").iterdir()) == []  # no hint of a layer not made


def test_a_layer_that_waits_for_the_layers_below_keeps_its_number_in_what_the_push_says(tmp_path):
    import re

    base = _entries(("etc", None), ("etc/os-release", b"debian\n"))
    recipe = Recipe(EPOCH, BASE_TIME, 1, base_chain([_digest(base)]))
    engine = _Engine([base, _entries(("opt", None), ("opt/.wh..wh..opq", b"")), _entries(("srv", None))], recipe)
    said: list[str] = []
    blobs = image_blobs(engine, engine.image_id, tmp_path / "push", said.append, store=None)
    numbers = sorted(re.search(r"compressed layer ([0-9]+/[0-9]+)", line)[1] for line in said if "compressed layer" in line)
    assert numbers == ["1/3", "2/3", "3/3"] and len(blobs.layers) == 3
