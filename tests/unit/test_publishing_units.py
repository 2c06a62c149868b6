"""Pure parts of publishing, no engine: manifest lists, hash tags, smoke gate of promotion, the
SBOM document (validated against the CycloneDX schema), labels."""

import json

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.engine import reuse
from ngcbuild.image.media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from ngcbuild.image.recipe import RECIPE_LABEL
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.loader import load_release
from ngcbuild.publish.multiarch import PublishRefused, manifest_list, missing_platforms
from ngcbuild.publish.promote import PromoteRefused, check_smoke, source_entry
from ngcbuild.registry.client import base_url, digest_of
from ngcbuild.render.plan import plan_image
from ngcbuild.supply.sbom import document, purl_deb, purl_pypi, validate
from ngcbuild.workspace.record import Record
from ngcbuild.workspace.sections import BuildRecord

from ..conftest import REPO

HASH = "ab" * 32


@pytest.fixture(scope="module")
def dev():
    return load_release(Project.at(REPO), "dev").release


@pytest.fixture(scope="module")
def dev_names():
    return plan_image(load_release(Project.at(REPO), "dev"), Catalog.load(Project.at(REPO))).names


def test_hash_and_platform_tags(dev_names):
    dev = dev_names
    assert reuse.hash_tag(dev, HASH, "linux/amd64") == "dev-py3-abababababab"
    assert reuse.hash_tag(dev, HASH, "linux/arm64") == "dev-py3-abababababab-arm64"
    # building arm64 never moves the release tag off the default platform's image
    assert reuse.build_tags("r/x", dev, HASH, "linux/arm64") == ["r/x:dev-py3-arm64",
                                                                        "r/x:dev-py3-abababababab-arm64"]
    assert reuse.build_tags("r/x", dev, HASH, "linux/amd64")[0] == "r/x:dev-py3"


def test_an_image_matches_only_its_context_and_platform():
    labels = {reuse.CONTEXT_HASH_LABEL: HASH, RECIPE_LABEL: "epoch=1 made-after=0 base-layers=1 base=" + "0" * 16}
    image = {"Os": "linux", "Architecture": "arm64", "Config": {"Labels": labels}}
    assert reuse.matches(image, HASH, "linux/arm64")
    # an image of the context without the recipe the build writes (an older ngcbuild's, another tool's) is not
    assert not reuse.matches({**image, "Config": {"Labels": {reuse.CONTEXT_HASH_LABEL: HASH}}}, HASH, "linux/arm64")
    assert not reuse.matches(image, HASH, "linux/amd64")
    assert not reuse.matches(image, "cd" * 32, "linux/arm64")
    assert not reuse.matches({**image, "Config": {"Labels": None}}, HASH, "linux/arm64")


def test_labels_are_checked():
    assert reuse.parse_labels(["io.ngcbuild.ci.run=12-1"]) == (("io.ngcbuild.ci.run", "12-1"),)
    for bad in ("noequals", "Upper=1", f"{reuse.CONTEXT_HASH_LABEL}=x", "a=b\nc"):
        with pytest.raises(UserError):
            reuse.parse_labels([bad])


def test_manifest_list_names_every_platform():
    entries = [{"platform": "linux/arm64", "digest": "sha256:" + "2" * 64, "size": 10, "media_type": DOCKER_MANIFEST},
               {"platform": "linux/amd64", "digest": "sha256:" + "1" * 64, "size": 20, "media_type": DOCKER_MANIFEST}]
    body, media_type = manifest_list(entries)
    doc = json.loads(body)
    assert media_type == DOCKER_LIST == doc["mediaType"]
    assert [m["platform"] for m in doc["manifests"]] == [
        {"architecture": "amd64", "os": "linux"}, {"architecture": "arm64", "os": "linux", "variant": "v8"}]
    assert doc["manifests"][0]["size"] == 20
    oci = [{**e, "media_type": OCI_MANIFEST} for e in entries]
    assert manifest_list(oci)[1] == OCI_INDEX
    with pytest.raises(PublishRefused):
        manifest_list([{**entries[0], "media_type": "application/x-unknown"}])


def test_missing_platforms_needs_a_build_of_this_context(scratch):
    scratch.copy_release("dev")
    scratch.manifest("multi", "extends: dev\nbuild:\n  platforms: [linux/amd64, linux/arm64]\n")
    scratch.constraints("multi", (REPO / "constraints" / "dev.txt").read_text())
    release = load_release(Project.at(scratch.root), "multi").release
    assert release.build.published_platforms == ("linux/amd64", "linux/arm64")
    record = Record.from_json({"platforms": {"linux/amd64": {"context_sha256": HASH},
                                             "linux/arm64": {"context_sha256": "0" * 64}}})
    assert missing_platforms(release, record, HASH) == ["linux/arm64"]
    assert missing_platforms(release, Record(), HASH) == ["linux/amd64", "linux/arm64"]


def test_platforms_must_be_known(scratch):
    scratch.copy_release("dev")
    scratch.manifest("bad", "extends: dev\nbuild:\n  platforms: [linux/s390x]\n")
    with pytest.raises(UserError, match="build.platforms"):
        load_release(Project.at(scratch.root), "bad")


def test_promotion_is_gated_on_a_passing_smoke_record_of_that_image():
    image = "sha256:" + "1" * 64
    passed = {"image_id": image, "passed": 20, "failed": 0, "errors": 0, "exit_code": 0}
    assert check_smoke(Record.from_json({"smoke": passed}), "dev", {image}).to_json() == passed
    with pytest.raises(PromoteRefused, match="no smoke record"):
        check_smoke(Record(), "dev", {image})
    with pytest.raises(PromoteRefused, match="failed"):
        check_smoke(Record.from_json({"smoke": {**passed, "failed": 1, "exit_code": 1}}), "dev", {image})
    with pytest.raises(PromoteRefused, match="failed"):
        check_smoke(Record.from_json({"smoke": {**passed, "exit_code": 2}}), "dev", {image})
    with pytest.raises(PromoteRefused, match="not for the image being promoted"):
        check_smoke(Record.from_json({"smoke": passed}), "dev", {"sha256:" + "2" * 64})


def test_source_entry_prefers_a_published_list():
    i1, i2, p, lst, a, b = ("sha256:" + c * 64 for c in "123456")
    record = {"image_id": i1, "platforms": {"linux/amd64": {"image_id": i1}, "linux/arm64": {"image_id": i2}},
              "pushed": {"h/r:t": {"digest": p}},
              "published": {"h/r:t": {"digest": lst, "platforms": {"linux/amd64": a, "linux/arm64": b}}}}
    entry, images = source_entry(Record.from_json(record), "h/r:t")
    assert (entry.to_json(), images) == (record["published"]["h/r:t"], {i1, i2})
    del record["published"]
    entry, images = source_entry(Record.from_json(record), "h/r:t")
    assert (entry.to_json(), images) == ({"digest": p}, {i1})
    assert source_entry(Record.from_json(record), "other/r:t") is None


def test_registry_urls_and_digests():
    assert base_url("127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert base_url("localhost:5000") == "http://localhost:5000"
    assert base_url("nvcr.io") == "https://nvcr.io"
    assert base_url("[::1]:5000") == "http://[::1]:5000" and base_url("127.0.0.2") == "http://127.0.0.2"
    assert base_url("[2001:db8::1]:443") == "https://[2001:db8::1]:443"
    assert digest_of(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_purls_are_encoded():
    """packageurl-python's encoding (a Debian epoch's colon stays, as the purl spec allows)."""
    assert purl_pypi("Typing_Extensions", "4.12.2").to_string() == "pkg:pypi/typing-extensions@4.12.2"
    assert purl_pypi("torch", "2.13.0+cpu").to_string() == "pkg:pypi/torch@2.13.0%2Bcpu"
    assert purl_deb({"ID": "debian", "VERSION_ID": "12"}, "libc6", "1:2.36-9+deb12u9", "amd64").to_string() == \
        "pkg:deb/debian/libc6@1:2.36-9%2Bdeb12u9?arch=amd64&distro=debian-12"
    assert purl_deb({}, "a b", "1", "all").to_string() == "pkg:deb/debian/a%20b@1?arch=all"


def test_sbom_document_is_valid_cyclonedx_with_manifest_provenance(dev):
    found = {"python": [["torch", "2.13.0+cpu"], ["numpy", "2.3.4"]],
             "dpkg": [["python3", "3.11.2-1+b1", "amd64", "python3-defaults"], ["libc6", "2.36-9", "amd64", ""]],
             "os": {"ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"},
             "python_version": "3.11.2"}
    image = {"Id": "sha256:" + "1" * 64, "Os": "linux", "Architecture": "amd64"}
    doc = document(dev, Catalog.load(Project.at(REPO)), found, image, "nvcr.io/nvidia/pytorch:dev-py3",
                   BuildRecord.of(context_sha256=HASH), "2026-01-01T00:00:00Z", "urn:uuid:" + "0" * 8 + "-0000-4000-8000-" + "0" * 12)
    assert validate(doc).startswith("valid against the CycloneDX 1.5 JSON schema")
    pytorch = next(c for c in doc["components"] if c["bom-ref"] == "manifest:pytorch")
    props = {p["name"]: p["value"] for p in pytorch["properties"]}
    assert pytorch["version"] == "2.13.0+cpu" and props["ngcbuild:provenance"] == "chosen"
    assert props["ngcbuild:version-in-image"] == "2.13.0+cpu"
    deb = next(c for c in doc["components"] if c["name"] == "python3")
    assert deb["properties"] == [{"name": "ngcbuild:source-package", "value": "python3-defaults"}]
    assert doc["metadata"]["tools"]["components"][0]["name"] == "ngcbuild"
    assert doc["metadata"]["component"]["type"] == "container" and doc["metadata"]["component"]["bom-ref"] == "image"
    assert doc["serialNumber"] == "urn:uuid:00000000-0000-4000-8000-000000000000" and doc["version"] == 1
    assert doc["metadata"]["timestamp"].startswith("2026-01-01T00:00:00")
    refs = {c["bom-ref"] for c in doc["components"]}
    assert {"manifest:pytorch", "os", "pypi:torch@2.13.0+cpu", "deb:libc6@2.36-9:amd64"} <= refs
    assert len(doc["components"]) == len(dev.components) + 1 + 2 + 2  # manifest, os, python, dpkg
    image_deps = next(d for d in doc["dependencies"] if d["ref"] == "image")
    assert set(image_deps["dependsOn"]) == refs  # the image holds each component
    broken = {**doc, "components": doc["components"] + [{"type": "not-a-type", "name": "x", "bom-ref": "x"}]}
    with pytest.raises(Exception, match="does not validate"):
        validate(broken)


def test_bench_keeps_each_release_section_between_its_markers():
    from dev.bench import _sections, _with_section

    page = "# Benchmarks\n\ndev figures\n"
    once = _with_section(page, "cuda-dev", "# Benchmarks\n\nfirst\n")
    twice = _with_section(once, "cuda-dev", "# Benchmarks\n\nsecond\n")
    assert twice.startswith(page) and "## `cuda-dev`" in twice
    assert "second" in twice and "first" not in twice and twice.count("<!-- end cuda-dev -->") == 1
    # a new dev report keeps the other releases' sections
    assert _sections(twice).strip().startswith("<!-- invoke bench --release cuda-dev -->")
    assert _sections(page) == ""


def test_bench_keeps_the_notes_written_by_hand_on_dev_figures():
    from dev.bench import NOTES_MARK, _sections, _with_section

    page = f"# Benchmarks\n\ndev figures\n\n{NOTES_MARK}\n## Where a target is missed\n\nwhy\n"
    with_cuda = _with_section(page, "cuda-dev", "# Benchmarks\n\ncuda figures\n")
    kept = _sections(with_cuda)
    assert kept.strip().startswith(NOTES_MARK) and "why" in kept and "cuda figures" in kept
    assert "dev figures" not in kept


def test_without_the_schema_extra_the_structure_is_checked_by_hand(monkeypatch):
    from cyclonedx.exception import MissingOptionalDependencyException
    from cyclonedx.validation import json as cdx_json

    def missing(self, data):
        raise MissingOptionalDependencyException("jsonschema is not installed")

    monkeypatch.setattr(cdx_json.JsonStrictValidator, "validate_str", missing)
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.5", "components": [{"type": "library", "name": "a", "bom-ref": "a"}]}
    assert validate(doc).startswith("structure checked")
    with pytest.raises(Exception, match="not a well-formed CycloneDX document"):
        validate({**doc, "components": doc["components"] * 2})
