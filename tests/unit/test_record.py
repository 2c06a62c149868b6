"""record.py, sections.py, schema.py and stamp.py: the typed build record made in one place, read and
written as the same JSON, and the unchanged-release stamp."""

import json

import pytest

from ngcbuild.core.errors import RecordDamaged, UserError
from ngcbuild.core.names import ImageNames
from ngcbuild.core.project import Project
from ngcbuild.render.context import render_release
from ngcbuild.render.stamp import STAMP, current_stamp
from ngcbuild.workspace.record import Record, read_record, record_build, require
from ngcbuild.workspace.sections import BuildFacts, BuildRecord, utc_timestamp

NAMES = ImageNames(release="dev", tag="dev-py3", repository_path="nvidia/pytorch",
                   default_platform="linux/amd64", base_image="mirror.example/debian:bookworm-slim")
IMAGE = {"Id": "sha256:" + "a" * 64, "Size": 1234, "RootFS": {"Layers": ["l1", "l2", "l3"]},
         "Created": "2026-11-23T10:00:00.000Z"}
TAGS = ["nvcr.io/nvidia/pytorch:dev-py3", "nvcr.io/nvidia/pytorch:dev-py3-abababababab"]
FACTS = BuildFacts(duration_s=12.5, steps=20, cached_steps=3, step_log=[], ca_bundle_used=True,
                   wheels=["torch.whl"], source_revision="0" * 40)


def test_a_build_and_a_reuse_record_the_base_the_image_was_built_from(tmp_path):
    built = record_build(tmp_path, BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "ab" * 32, "linux/amd64",
                                                        FACTS)).to_json()
    assert built["base_image"] == "mirror.example/debian:bookworm-slim"
    assert built["duration_s"] == 12.5 and built["cached_steps"] == 3 and "reused" not in built
    reused = BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "ab" * 32, "linux/amd64")
    assert reused.to_json()["base_image"] == "mirror.example/debian:bookworm-slim"
    assert reused.to_json()["reused"] is True and reused.to_json()["built_at"] == IMAGE["Created"]


def test_reusing_the_same_image_keeps_its_build_facts_and_later_sections(tmp_path):
    record_build(tmp_path, BuildRecord.of_image(NAMES, IMAGE, TAGS[:1], "nvcr.io", "ab" * 32, "linux/amd64", FACTS))
    data = read_record(tmp_path).to_json()
    data["smoke"] = {"passed": 20, "failed": 0}
    (tmp_path / "record.json").write_text(json.dumps(data))
    again = record_build(tmp_path, BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "ab" * 32,
                                                        "linux/amd64")).to_json()
    assert again["smoke"] == {"passed": 20, "failed": 0}
    assert again["duration_s"] == 12.5 and again["reused"] is True
    assert again["tags"] == sorted(TAGS)


def test_platforms_of_the_same_context_add_up_and_others_are_dropped(tmp_path):
    arm = {**IMAGE, "Id": "sha256:" + "b" * 64}
    record_build(tmp_path, BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "ab" * 32, "linux/amd64", FACTS))
    both = record_build(tmp_path, BuildRecord.of_image(NAMES, arm, ["x:dev-py3-arm64"], "nvcr.io", "ab" * 32,
                                                       "linux/arm64", FACTS)).to_json()
    assert set(both["platforms"]) == {"linux/amd64", "linux/arm64"}
    other = record_build(tmp_path, BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "cd" * 32, "linux/amd64",
                                                        FACTS)).to_json()
    assert set(other["platforms"]) == {"linux/amd64"}


@pytest.mark.parametrize("text", ["[]", "3", '"record"', "null"])
def test_a_record_that_is_not_an_object_is_a_clean_error(tmp_path, text):
    (tmp_path / "record.json").write_text(text)
    with pytest.raises(RecordDamaged, match="expected a JSON object"):
        read_record(tmp_path)


@pytest.mark.parametrize("damage", [
    lambda path: path.write_text('{"image_id": '),  # cut short
    lambda path: path.write_text("[" * 100_000 + "]" * 100_000),  # nested too deeply
    lambda path: path.write_bytes(b'{"tags": "' + bytes([0xFF, 0xFE]) + b'"}'),  # not UTF-8
    lambda path: path.mkdir(),
    lambda path: path.symlink_to("/etc/hostname"),  # out of the project
])
def test_a_damaged_record_is_our_failure_exit_1_not_bad_input(tmp_path, damage):
    """record.json is ngcbuild's output: damage is a failure (exit 1), never a manifest error (exit 2)."""
    directory = tmp_path / "build" / "dev"
    directory.mkdir(parents=True)
    damage(directory / "record.json")
    with pytest.raises(RecordDamaged) as caught:
        read_record(directory)
    assert caught.value.exit_code == 1 and not isinstance(caught.value, UserError)
    assert str(caught.value).startswith("record.json is damaged: ")
    assert "build/dev/record.json" in str(caught.value) and "rebuild" in str(caught.value)


def test_a_record_lacking_a_key_names_it_and_exits_1(tmp_path):
    with pytest.raises(RecordDamaged, match=r"record.json is damaged: .*record.json: image_id: expected an image id") as caught:
        require(Record().build.image_id, tmp_path, "image_id", "an image id")
    assert caught.value.exit_code == 1


def test_no_record_yet_is_a_usage_error_naming_the_build_to_run(tmp_path):
    with pytest.raises(UserError, match="no build record; run `invoke build --release dev` first") as caught:
        read_record(tmp_path / "dev")
    assert caught.value.exit_code == 2


def test_utc_timestamp_format():
    assert utc_timestamp(0) == "1970-01-01T00:00:00Z"


@pytest.fixture
def rendered(scratch):
    scratch.copy_release("dev")
    project = Project.at(scratch.root)
    render_release(project, "dev")
    return project


def test_the_stamp_holds_while_nothing_changed(rendered):
    stamp = current_stamp(rendered, "dev", None)
    assert stamp is not None and stamp.names.tag == "dev-py3"
    assert stamp.context_hash == render_release(rendered, "dev").context_hash


@pytest.mark.parametrize("change", [
    "manifests/dev.yaml", "manifests/parts/debian-bookworm.yaml", "constraints/dev.txt",
    "templates/image/Dockerfile.j2",
])
def test_any_changed_input_voids_the_stamp(rendered, change):
    path = rendered.root / change
    path.write_text(path.read_text() + "\n# changed\n")
    assert current_stamp(rendered, "dev", None) is None


def test_the_catalogue_voids_the_stamp_by_what_the_render_reads_of_it(rendered):
    """A comment or a field only the notes read (`short`) leaves the render as it was; a label does not."""
    path = rendered.root / "templates" / "components.yaml"
    path.write_text(path.read_text().replace("  short: cuBLAS\n", "  short: cuBLAS 13\n") + "\n# changed\n")
    assert current_stamp(rendered, "dev", None) is not None
    path.write_text(path.read_text().replace("com.nvidia.pytorch.version", "com.nvidia.torch.version"))
    assert current_stamp(rendered, "dev", None) is None


def test_another_base_or_release_voids_the_stamp(rendered):
    assert current_stamp(rendered, "dev", "mirror.example/debian:bookworm-slim") is None
    (rendered.out("other")).mkdir()
    (rendered.out("other") / STAMP).write_text((rendered.out("dev") / STAMP).read_text())
    assert current_stamp(rendered, "other", None) is None


@pytest.mark.parametrize("tamper", [
    lambda data: {**data, "inputs": ["../../etc/passwd"]},
    lambda data: {**data, "inputs": "manifests/dev.yaml"},
    lambda data: {**data, "names": {"release": "dev"}},
    lambda data: [],
    lambda data: {**data, "inputs_sha256": "0" * 64},
])
def test_a_stamp_that_does_not_add_up_is_ignored(rendered, tamper):
    path = rendered.out("dev") / STAMP
    path.write_text(json.dumps(tamper(json.loads(path.read_text()))))
    assert current_stamp(rendered, "dev", None) is None


def test_a_stamp_that_is_a_fifo_is_ignored_without_hanging(rendered):
    import os

    path = rendered.out("dev") / STAMP
    path.unlink()
    os.mkfifo(path)
    assert current_stamp(rendered, "dev", None) is None


def test_the_stamp_digest_is_the_one_existing_stamps_hold(rendered):
    """input_files reads the inputs through core/files; the digest over them is the one the stamp
    always held (the files in order, each path and its sha256), with the image fields of the component
    catalogue in front since the catalogue left templates/image/."""
    import hashlib

    from ngcbuild.render.stamp import catalog_image_fields, inputs_digest, shared_inputs

    files = json.loads((rendered.out("dev") / STAMP).read_text())["inputs"]
    digest = hashlib.sha256(json.dumps({"base": None, "files": files}).encode())
    fields = catalog_image_fields(rendered.catalog.read_text())
    digest.update(b"catalog\0" + hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).digest())
    paths = [rendered.root / rel for rel in files]
    for folder, pattern in shared_inputs(rendered):
        paths += sorted(p for p in folder.rglob(pattern) if p.is_file())
    for path in paths:
        digest.update(str(path).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    assert inputs_digest(rendered, files, None) == digest.hexdigest()


def test_the_provenance_lists_the_files_the_stamp_reads_with_the_same_hashes(rendered):
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.render.stamp import input_files, release_inputs
    from ngcbuild.supply.provenance import materials

    loaded = load_release(rendered, "dev")
    listed = {m["uri"].removeprefix("file:"): m["digest"]["sha256"] for m in materials(rendered, loaded)}
    read = {p.relative_to(rendered.root).as_posix(): sha
            for p, sha in input_files(rendered, [*release_inputs(rendered, loaded), rendered.catalog],
                                      ((rendered.image_templates, "*"),))}
    assert listed == read and "manifests/dev.yaml" in listed and "constraints/dev.txt" in listed
    assert "templates/image/Dockerfile.j2" in listed and "templates/components.yaml" in listed


def test_an_input_that_is_a_fifo_is_refused_without_hanging(rendered):
    """A FIFO where an input of the release must be: the stamp no longer holds and the provenance names
    the file (exit 2), read through core/files (never opened blocking); one among the templates is no input."""
    import os

    from ngcbuild.core.errors import ManifestError
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.supply.provenance import materials

    os.mkfifo(rendered.image_templates / "stray.j2")
    assert current_stamp(rendered, "dev", None) is not None
    loaded = load_release(rendered, "dev")
    assert "templates/image/stray.j2" not in {m["uri"].removeprefix("file:") for m in materials(rendered, loaded)}
    constraints = rendered.constraints / "dev.txt"
    constraints.unlink()
    os.mkfifo(constraints)
    assert current_stamp(rendered, "dev", None) is None  # the full path decides
    with pytest.raises(ManifestError, match="dev.txt: is a FIFO"):
        materials(rendered, loaded)
