"""Reproducible images on real engines (docs/reproducible.md): `dev` rebuilt by `repro` without the layer cache
on a second engine, with its own data root, gives the release image the session's build gives on the shared
engine (`repro --against` that engine image says "reproduced": each engine image made into its release image
from its save, as push makes it, nothing loaded back); pushed by ngcbuild from each engine, it is one manifest;
a planted source of noise is caught and named, file by file, while the times every step writes are not noise."""

import re
import shutil

import pytest

pytestmark = pytest.mark.engine


def test_dev_rebuilt_without_cache_on_a_second_engine_is_the_shared_engines_image(dev_build, repro_run):
    # on the second engine (its own data root, the base image and the shared engine's dev loaded in it):
    # `repro --against` that dev (a cold build there, compared file by file): one image
    status, output, rebuilt = repro_run.result()
    assert status == 0, output[-6000:]
    image_id = dev_build["record"]["image_id"]
    normalisation = dev_build["record"]["normalisation"]
    assert normalisation["epoch"] == repro_run.epoch == rebuilt["normalisation"]["epoch"]
    assert normalisation["base_layers"] == rebuilt["normalisation"]["base_layers"] >= 1
    assert len(re.findall(r"\b0/\d+ steps cached", output)) == 1, output[-6000:]  # one cold build, whatever its steps
    reproduced = re.findall(r"reproduced: (sha256:[0-9a-f]{64})", output)
    assert len(reproduced) == 1, output[-6000:]
    # other engine images (each engine's own times), one release image: neither engine's id
    assert len({image_id, rebuilt["image_id"], reproduced[0]}) == 3


def test_dev_pushed_by_ngcbuild_from_each_engine_is_one_manifest_and_a_second_push_sends_nothing(
        dev_build, repro_run, engine, second_engine):
    """ngcbuild's own push (publish/layer_blobs.py) of the shared engine's dev and of the second engine's
    cold rebuild, each to an empty registry of its own: the same manifest digest and the same blobs,
    whatever each engine would have compressed; pushed again (from the first), nothing is sent and the
    digest stays; pushed again knowing the digest it was pushed as (a retried push), nothing is even
    compressed."""
    import io
    import time

    from ngcbuild.publish.push import push_and_read_back
    from ngcbuild.registry.client import Registry

    from .private import PrivateRegistry

    status, output, rebuilt = repro_run.result()
    assert status == 0, output[-3000:]
    release_id = re.findall(r"reproduced: (sha256:[0-9a-f]{64})", output)[0]
    pushed, outputs = [], []
    # the shared engine's dev, and the second engine's own cold rebuild of it
    for number, (client, image_id) in enumerate(((engine, dev_build["record"]["image_id"]),
                                                 (second_engine.client(timeout=600), rebuilt["image_id"]))):
        registry = PrivateRegistry()
        registry.start()
        try:
            out = io.StringIO()
            uploaded = push_and_read_back(client, Registry(registry.address), "nvidia/pytorch", ["dev-py3"],
                                          image_id, out, time.sleep)
            manifest = Registry(registry.address).manifest("nvidia/pytorch", "dev-py3")
            again = io.StringIO()  # not knowing it was pushed (the first engine's only: 20 s of compressing)
            repeated = uploaded if number else push_and_read_back(
                client, Registry(registry.address), "nvidia/pytorch", ["dev-py3"], image_id, again, time.sleep)
            # as `push` does with the record's digests: one the registry lacks is passed over, the next used
            retried = io.StringIO()
            third = push_and_read_back(client, Registry(registry.address), "nvidia/pytorch", ["dev-py3", "again"],
                                       image_id, retried, time.sleep, ["sha256:" + "0" * 64, uploaded.digest])
        finally:
            registry.close()
        assert repeated.digest == uploaded.digest
        assert uploaded.image_id == release_id == manifest.image().config.digest  # what repro said
        layers = [layer.digest for layer in manifest.image().layers]
        if not number:
            assert f"{len(set(layers))} layers: 0 sent, {len(set(layers))} already in the registry" in again.getvalue()
        assert third.digest == uploaded.digest
        assert f"holds this image already (manifest {uploaded.digest})" in retried.getvalue()
        assert "compressed layer" not in retried.getvalue(), retried.getvalue()  # each found in the layer store
        pushed.append((uploaded.digest, layers))
        outputs.append(out.getvalue())
    print(f"dev {release_id} pushed by ngcbuild from two engines: manifest {pushed[0][0]} / {pushed[1][0]}")  # -s
    assert pushed[0] == pushed[1], outputs
    assert "sent " in outputs[1]  # the second registry was empty: every blob was compressed and sent there


def test_planted_noise_is_named_and_the_times_of_steps_are_not_noise(second_engine, tmp_path):
    from ngcbuild.engine.compare import compare_images
    from ngcbuild.engine.release_image import release_image_id
    from ngcbuild.image.recipe import Recipe

    client = second_engine.client(timeout=600)
    recipe = Recipe.of_base(1_767_225_600, client.inspect_image(second_engine.base))
    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(
        f"FROM {second_engine.base}\n"
        "RUN mkdir -p /opt/same && echo same > /opt/same/file && date +%s%N > /etc/noise "
        "&& mkdir -p /tmp/x && date > /tmp/x/stray\n")
    ids = []
    for _ in range(2):
        raw = None
        for event in client.build(path=str(context), nocache=True, rm=True, forcerm=True, decode=True,
                                  labels=recipe.label()):
            assert "error" not in event, event
            raw = event.get("aux", {}).get("ID") or raw
        assert raw, "the engine reported no image id"
        made = release_image_id(client, client.inspect_image(raw), recipe, tmp_path / "made")
        assert made.removed == dict.fromkeys(("tmp/x", "tmp/x/stray"), "a step's stray temporary files")
        assert made.rewritten == 1 and made.image_id != raw
        ids.append(raw)
    comparison = compare_images(client, *ids)
    assert not comparison.same
    assert len(comparison.layers) == 1
    (layer,) = comparison.layers
    assert layer.files == {"etc/noise": "content"}  # opt/same's times and the stray file are no difference
    assert comparison.config == {}  # the same step, the same history: the config differs by its layer only
    lines = "\n".join(comparison.lines())
    assert "/etc/noise: content" in lines and "not reproduced" in lines
    for image in ids:
        client.remove_image(image, force=True)
    shutil.rmtree(context)
