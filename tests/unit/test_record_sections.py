"""The typed record (workspace/record.py, sections.py, schema.py): one reader that checks every section
and names the key of a damaged one, one writer that gives back the same JSON, and one answer to "did
the smoke suite pass on this image" for every stage that asks."""

import json
from dataclasses import dataclass, replace

import pytest

from ngcbuild.core.errors import ManifestError, RecordDamaged, UserError
from ngcbuild.core.names import ImageNames
from ngcbuild.publish.platform_records import smoke_failure
from ngcbuild.publish.promote import PromoteRefused, check_smoke
from ngcbuild.supply import provenance
from ngcbuild.workspace.record import Record, parse_record, read_record, record_build, write_record
from ngcbuild.workspace.schema import Malformed, Section
from ngcbuild.workspace.sections import (
    FAILED,
    NOT_RUN,
    OTHER_IMAGE,
    PASSED,
    BuildFacts,
    BuildRecord,
    Pushed,
    SmokeRun,
    smoke_verdict,
)

from ..conftest import REPO

# A record as the stages wrote it (a real one of `dev`: build, smoke, push, sbom, audit, attest,
# promote), trimmed: existing records must read, and write back byte for byte.
WRITTEN = REPO / "tests" / "data" / "records" / "dev.json"
IMAGE_ID = "sha256:" + "1" * 64
NAMES = ImageNames(release="dev", tag="dev-py3", repository_path="nvidia/pytorch",
                   default_platform="linux/amd64", base_image="debian:bookworm-slim")
IMAGE = {"Id": IMAGE_ID, "Size": 1234, "RootFS": {"Layers": ["l1", "l2"]}, "Created": None}
TAGS = ["nvcr.io/nvidia/pytorch:dev-py3"]


def _release_dir(tmp_path):
    directory = tmp_path / "build" / "dev"
    directory.mkdir(parents=True)
    return directory


def test_an_existing_record_reads_typed_and_writes_back_byte_for_byte(tmp_path):
    directory = _release_dir(tmp_path)
    (directory / "record.json").write_bytes(WRITTEN.read_bytes())
    record = read_record(directory)
    assert record.build.platform == "linux/amd64" and record.build.reused is True
    assert record.build.facts.duration_s == 86.8 and record.build.stages["final"] == record.build.image_id
    assert record.smoke.passed == 24 and smoke_verdict(record.smoke, record.build.image_id) == PASSED
    assert all(isinstance(entry, Pushed) and entry.digest.startswith("sha256:") for entry in record.pushed.values())
    assert record.audit.verdict == "passed" and record.sbom.image_id == record.build.image_id
    (promoted,) = record.promoted.values()
    assert promoted.source == "127.0.0.1:5000" and promoted.attestations
    assert not record.more  # every key of a record ngcbuild wrote is a known one
    write_record(directory, record)
    assert (directory / "record.json").read_bytes() == WRITTEN.read_bytes()


@pytest.mark.parametrize("facts", [None, BuildFacts(duration_s=1.5, steps=2, cached_steps=0, step_log=[],
                                                    ca_bundle_used=False, wheels=[], source_revision=None)])
def test_a_record_the_build_writes_reads_back_the_same(tmp_path, facts):
    """Nulls the build writes (no git checkout: `source_revision: null`) stay; keys it leaves out stay out."""
    directory = _release_dir(tmp_path)
    record_build(directory, BuildRecord.of_image(NAMES, IMAGE, TAGS, "nvcr.io", "ab" * 32, "linux/amd64", facts))
    written = (directory / "record.json").read_bytes()
    data = json.loads(written)
    assert data["built_at"] is None or facts is not None
    assert ("source_revision" in data) == (facts is not None) and ("reused" in data) == (facts is None)
    assert data["pushed"] == {}
    write_record(directory, read_record(directory))
    assert (directory / "record.json").read_bytes() == written


def test_keys_of_a_later_version_are_kept_as_they_were(tmp_path):
    directory = _release_dir(tmp_path)
    data = {"image_id": IMAGE_ID, "derived": {"base": {"digest": "sha256:b"}},
            "smoke": {"image_id": IMAGE_ID, "failed": 0, "errors": 0, "exit_code": 0, "flaky": ["a"]}}
    (directory / "record.json").write_text(json.dumps(data))
    record = read_record(directory)
    assert record.more == {"derived": {"base": {"digest": "sha256:b"}}} and record.smoke.more == {"flaky": ["a"]}
    write_record(directory, replace(record, smoke=replace(record.smoke, passed=3)))
    assert json.loads((directory / "record.json").read_text()) == {**data, "smoke": {**data["smoke"], "passed": 3}}


def test_a_section_added_later_is_one_more_class():
    @dataclass(frozen=True)
    class BaseOfDerived(Section):
        digest: str | None = None
        release: str | None = None

    @dataclass(frozen=True)
    class Later(Record):
        derived: BaseOfDerived | None = None

    record = Later.from_json({"image_id": IMAGE_ID, "derived": {"digest": "sha256:b", "release": "25.12"}})
    assert record.derived.release == "25.12" and record.build.image_id == IMAGE_ID and not record.more
    assert record.to_json() == {"image_id": IMAGE_ID, "derived": {"digest": "sha256:b", "release": "25.12"}}
    with pytest.raises(Malformed, match="derived.digest: expected a string"):
        Later.from_json({"derived": {"digest": 5}})


@pytest.mark.parametrize("data, key", [
    ({"tags": 5}, "tags"),
    ({"tags": ["a", 5]}, "tags.1"),
    ({"layers": True}, "layers"),  # a bool is no count
    ({"duration_s": "long"}, "duration_s"),
    ({"stages": {"final": 1}}, "stages.final"),
    ({"smoke": {"failed": "none"}}, "smoke.failed"),
    ({"smoke": {"failed": False}}, "smoke.failed"),
    ({"smoke": []}, "smoke"),
    ({"pushed": [1]}, "pushed"),
    ({"pushed": {"h/r:t": {"digest": 5}}}, "pushed.'h/r:t'.digest"),
    ({"pushed": {"h/r:t": "x"}}, "pushed.'h/r:t'"),
    ({"cache_pushed": {"a": {}}}, "cache_pushed.a"),
    ({"sbom": "x"}, "sbom"),
    ({"audit": {"counts": 3}}, "audit.counts"),
    ({"attested": {"r": {"attachments": {"sbom": {"sha256": 1}}}}}, "attested.r.attachments.sbom.sha256"),
    ({"published": {"r": {"platforms": {"linux/amd64": 1}}}}, "published.r.platforms.'linux/amd64'"),
    ({"promoted": {"r": {"from": 1}}}, "promoted.r.from"),
    ({"platforms": {"linux/amd64": {"smoke": {"exit_code": "0"}}}}, "platforms.'linux/amd64'.smoke.exit_code"),
])
def test_a_damaged_section_names_its_key_and_exits_1(tmp_path, data, key):
    directory = _release_dir(tmp_path)
    (directory / "record.json").write_text(json.dumps(data))
    with pytest.raises(RecordDamaged) as caught:
        read_record(directory)
    message = str(caught.value)
    assert caught.value.exit_code == 1 and not isinstance(caught.value, UserError)
    assert message.startswith("record.json is damaged: ") and f"record.json: {key}: expected " in message, message
    assert message.endswith("rebuild to rewrite it") and "\n" not in message


D64 = "sha256:" + "a" * 64


@pytest.mark.parametrize("data, key, expected", [
    ({"image_id": "sha256:" + "a" * 63}, "image_id", "sha256:<64 hex digits>"),
    ({"image_id": D64 + "\nFROM evil"}, "image_id", "sha256:<64 hex digits>"),
    ({"tags": ["nvcr.io/nvidia/pytorch:dev-py3", 'h/r:t" \\\nRUN curl evil']}, "tags.1", "an image reference"),
    ({"pushed": {"h/r:t\nX": {"digest": D64}}}, "pushed", "keys that are image references, got 'h/r:t\\nX'"),
    ({"pushed": {"h/r:t": {"digest": "sha256:x'"}}}, "pushed.'h/r:t'.digest", "sha256:<64 hex digits>"),
    ({"base_image": "debian:bookworm\nRUN x"}, "base_image", "an image reference or an image id"),
    ({"registry": "evil.example/path"}, "registry", "a registry HOST[:PORT]"),
    ({"platform": "linux/amd64 --privileged"}, "platform", "a platform"),
    ({"context_sha256": "../../x"}, "context_sha256", "a sha256 of 64 hex digits"),
    ({"cache_pushed": {"h/r-cache:t": "latest"}}, "cache_pushed.'h/r-cache:t'", "sha256:<64 hex digits>"),
    ({"attested": {"u:pw@h/r@" + D64: {}}}, "attested", "keys that are image references, got a value that may "
                                                        "hold credentials (not shown)"),
    ({"sbom": {"sha256": "ab"}}, "sbom.sha256", "a sha256 of 64"),
    ({"published": {"h/r:t": {"platforms": {"linux/amd64": "x"}}}}, "published.'h/r:t'.platforms.'linux/amd64'",
     "sha256:"),
    ({"promoted": {"h/r:t": {"from": "u:p@h"}}}, "promoted.'h/r:t'.from", "a registry HOST"),
    ({"platforms": {"linux/amd64": {"tags": ["-x"]}}}, "platforms.'linux/amd64'.tags.0", "an image reference"),
    ({"smoke": {"image_id": "latest"}}, "smoke.image_id", "sha256:"),
])
def test_a_value_of_its_type_in_another_form_is_refused_as_bad_input(tmp_path, data, key, expected):
    """build/ may be another job's artifact: a digest, id, reference, host or platform that is not one
    never reaches a Dockerfile, a command line or a label: one line naming the file and key, exit 2."""
    directory = _release_dir(tmp_path)
    (directory / "record.json").write_text(json.dumps(data))
    with pytest.raises(ManifestError) as caught:
        read_record(directory)
    message = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in message
    assert f"record.json: {key}: expected {expected}" in message and "remove the file" in message, message
    with pytest.raises(ManifestError, match="r.json: .*got "):  # a platform job's record: the same check
        parse_record(REPO / "r.json", data, ManifestError, "")


def test_the_same_reader_checks_a_record_handed_in_as_bad_input():
    with pytest.raises(ManifestError, match=r"r.json: smoke.failed: expected a whole number$") as caught:
        parse_record(REPO / "r.json", {"smoke": {"failed": "none"}}, ManifestError, "")
    assert caught.value.exit_code == 2


PASSING = {"image_id": IMAGE_ID, "passed": 3, "failed": 0, "errors": 0, "exit_code": 0}


@pytest.mark.parametrize("smoke, verdict", [
    (None, NOT_RUN),
    (PASSING, PASSED),
    ({**PASSING, "image_id": "sha256:" + "2" * 64}, OTHER_IMAGE),
    ({**PASSING, "failed": 1}, FAILED),
    ({**PASSING, "errors": 2}, FAILED),
    ({**PASSING, "exit_code": 1}, FAILED),
    # a count or status the record does not hold: a failure (fails closed), wherever it is asked
    ({k: v for k, v in PASSING.items() if k != "failed"}, FAILED),
    ({k: v for k, v in PASSING.items() if k != "errors"}, FAILED),
    ({k: v for k, v in PASSING.items() if k != "exit_code"}, FAILED),
    ({}, FAILED),
])
def test_every_stage_gets_one_answer_to_did_the_smoke_suite_pass(smoke, verdict):
    """promote, the platform records of publish and the signed provenance ask the one function: a
    statement can never say "passed" for an image that promote refuses."""
    record = Record.from_json({"image_id": IMAGE_ID, **({"smoke": smoke} if smoke is not None else {})})
    assert smoke_verdict(record.smoke, IMAGE_ID) == verdict
    assert (smoke_failure(record.smoke, IMAGE_ID) is None) == (verdict == PASSED)
    if verdict == PASSED:
        assert check_smoke(record, "dev", {IMAGE_ID}) == record.smoke
    else:
        with pytest.raises(PromoteRefused):
            check_smoke(record, "dev", {IMAGE_ID})
    signed = provenance.statement(subject_name="h/r", digest="sha256:" + "e" * 64, release="dev", record=record,
                                  files=[], base={}, registry="h", checkout=None, byproducts=[], attached=[],
                                  environ={}, now="now")
    said = signed["predicate"]["runDetails"]["byproducts"][0]["annotations"]["verdict"]
    assert said == {PASSED: "passed", NOT_RUN: "not run"}.get(verdict, "failed")


def test_a_platform_entry_with_its_own_smoke_run_is_judged_by_it():
    record = Record.from_json({"smoke": PASSING, "platforms": {
        "linux/amd64": {"image_id": IMAGE_ID},
        "linux/arm64": {"image_id": IMAGE_ID, "smoke": None}}})
    assert record.platforms["linux/amd64"].own_smoke(record.smoke) == SmokeRun.from_json(PASSING)
    assert record.platforms["linux/arm64"].own_smoke(record.smoke) is None  # its job ran none: not proven
