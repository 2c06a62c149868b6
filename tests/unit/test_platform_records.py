"""Gathering the platform jobs' records for the multi-arch list (pure logic)."""

import json
from dataclasses import replace

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.publish.platform_records import PlatformMissing, gather, load_records
from ngcbuild.publish.promote import PromoteRefused, check_every_platform
from ngcbuild.workspace.sections import Published

HOST = "staging:5000"
PLATFORMS = ("linux/amd64", "linux/arm64")


def _record(platform: str, smoke=True, context="c" * 64, pushed=True) -> dict:
    mark = "1" if platform.endswith("amd64") else "2"  # each platform its own image and digest
    image = "sha256:" + mark.rjust(64, "0")
    return {
        "release": "rel", "platform": platform, "image_id": image, "context_sha256": context, "tags": [],
        "pushed": {f"{HOST}/nvidia/pytorch:rel-py3-{platform[-5:]}": {"digest": "sha256:" + mark * 64,
                                                                      "registry": HOST}} if pushed else {},
        "smoke": {"image_id": image, "failed": 0, "errors": 0, "exit_code": 0, "passed": 9} if smoke else None,
    }


def _write(tmp_path, *records) -> list:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for record in records:
        folder = tmp_path / f"build-rel-{record['platform'][-5:]}"
        folder.mkdir()
        (folder / "record.json").write_text(json.dumps(record))
    return load_records(tmp_path)


def test_every_platform_built_smoked_and_pushed_is_gathered(tmp_path):
    records = _write(tmp_path, _record("linux/amd64"), _record("linux/arm64"))
    gathered, pushed = gather(records, "rel", PLATFORMS, "c" * 64, HOST)
    assert sorted(gathered.platforms) == list(PLATFORMS)
    assert all(entry.smoke.exit_code == 0 for entry in gathered.platforms.values())
    assert pushed["linux/arm64"] == (f"{HOST}/nvidia/pytorch:rel-py3-arm64", "sha256:" + "2" * 64)
    published = Published.of(platforms={p: "sha256:x" for p in PLATFORMS})
    assert check_every_platform(gathered, "rel", published).exit_code == 0


@pytest.mark.parametrize("broken, expected", [
    ({"platform": None}, "linux/arm64: no record"),
    ({"smoke": False}, "linux/arm64: its image sha256:000000000000 has no smoke record"),
    ({"context": "d" * 64}, "linux/arm64: "),
    ({"pushed": False}, f"linux/arm64: nothing pushed to {HOST}"),
])
def test_a_platform_without_build_smoke_or_push_refuses_and_says_which(tmp_path, broken, expected):
    arm = [] if broken.get("platform", "x") is None else [_record("linux/arm64", **broken)]
    records = _write(tmp_path, _record("linux/amd64"), *arm)
    with pytest.raises(PlatformMissing, match="cannot publish") as error:
        gather(records, "rel", PLATFORMS, "c" * 64, HOST)
    assert expected in str(error.value) and "linux/amd64:" not in str(error.value)
    assert str(error.value).endswith("Nothing was written.")


def test_a_failed_smoke_of_one_platform_stops_promotion(tmp_path):
    records = _write(tmp_path, _record("linux/amd64"), _record("linux/arm64"))
    gathered, _ = gather(records, "rel", PLATFORMS, "c" * 64, HOST)
    arm = gathered.platforms["linux/arm64"]
    gathered = replace(gathered, platforms={**gathered.platforms,
                                            "linux/arm64": replace(arm, smoke=replace(arm.smoke, failed=2))})
    with pytest.raises(PromoteRefused, match=r"rel \(linux/arm64\): .* failed its smoke run"):
        check_every_platform(gathered, "rel", Published.of(platforms={p: "sha256:x" for p in PLATFORMS}))


def test_records_of_another_release_or_twice_one_platform_are_bad_input(tmp_path):
    other = {**_record("linux/arm64"), "release": "other"}
    with pytest.raises(UserError, match="a record of release 'other', not rel"):
        gather(_write(tmp_path / "a", _record("linux/amd64"), other), "rel", PLATFORMS, "c" * 64, HOST)
    twice = _write(tmp_path / "b", _record("linux/amd64"))
    twice += twice
    with pytest.raises(UserError, match="a second record for linux/amd64"):
        gather(twice, "rel", PLATFORMS, "c" * 64, HOST)
    with pytest.raises(UserError, match="no record.json under it"):
        load_records(_empty(tmp_path))


def _empty(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("ref", [f"{HOST}/Nvidia/PyTorch:rel", "user:pw@staging:5000/x:y"])
def test_a_pushed_reference_that_is_no_image_reference_refuses_naming_the_record(tmp_path, ref):
    """Refused as the record is read (workspace/sections.py forms), before any gathering."""
    arm = _record("linux/arm64")
    arm["pushed"] = {ref: {"digest": "sha256:" + "d" * 64, "registry": HOST}}
    with pytest.raises(UserError) as error:
        _write(tmp_path, _record("linux/amd64"), arm)
    message = str(error.value)
    assert "build-rel-arm64/record.json: pushed: expected keys that are image references" in message, message
    assert ":pw@" not in message  # a credential typed into a reference is never echoed


def test_a_pushed_reference_without_a_tag_refuses_naming_the_record(tmp_path):
    arm = _record("linux/arm64")
    arm["pushed"] = {f"{HOST}/nvidia/pytorch": {"digest": "sha256:" + "d" * 64, "registry": HOST}}
    records = _write(tmp_path, _record("linux/amd64"), arm)
    with pytest.raises(PlatformMissing) as error:
        gather(records, "rel", PLATFORMS, "c" * 64, HOST)
    assert "linux/arm64: " in str(error.value) and "build-rel-arm64/record.json: a pushed reference is no image" \
        in str(error.value)


def test_each_platform_is_held_to_the_context_rendered_from_its_own_base(tmp_path):
    """A platform built FROM a mirror of the base (an arm64 base bootstrapped under its own name)
    has another FROM line, so another context: its record is checked against that one."""
    arm = {**_record("linux/arm64"), "context_sha256": "a" * 64, "base_image": "debian:bookworm-slim-arm64"}
    records = _write(tmp_path / "a", _record("linux/amd64"), arm)

    def context_of(record):
        return "a" * 64 if record.build.base_image == "debian:bookworm-slim-arm64" else "c" * 64

    gathered, pushed = gather(records, "rel", PLATFORMS, context_of, HOST)
    assert set(pushed) == set(PLATFORMS)
    with pytest.raises(PlatformMissing, match="linux/arm64: .* is of context aaaaaaaaaaaa, not cccccccccccc"):
        gather(records, "rel", PLATFORMS, "c" * 64, HOST)
