"""The normalising step's pure parts: one layer's tar rewritten (image/layer_tar.py), the config's times
(image/config.py), the recipe (image/recipe.py), the epoch's sources (engine/epoch.py). The step against a real engine: tests/integration/test_repro.py."""

import hashlib
import io
import json
import random
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.engine.epoch import Epoch, parse_epoch, source_date_epoch
from ngcbuild.image.config import normalised_config, rfc3339, seconds
from ngcbuild.image.layer_tar import Times, Unstreamable, clamp_pyc, path_order, rewrite_layer, rewrite_stream
from ngcbuild.image.recipe import RECIPE_LABEL, Recipe, RecipeDamaged
from ngcbuild.image.volatile import VOLATILE, why_volatile

EPOCH = 1_767_225_600  # 2026-01-01
BASE = 1_700_000_000  # the base image's creation
TIMES = Times(EPOCH, BASE)


def _tar(entries, pax=None) -> io.BytesIO:
    """A layer tar of (name, kind, data-or-linkname, mtime) in the order given."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, payload, mtime in entries:
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.mode = mtime, 1000, 1000, 0o640
            info.pax_headers = dict(pax or {})
            if kind == "file":
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "link":
                info.type, info.linkname = tarfile.LNKTYPE, payload
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, payload
                tar.addfile(info)
    raw.seek(0)
    return raw


def _rewrite(entries, times=TIMES, pax=None, streamable=True):
    """The seekable rewrite's result, after checking that the streamed rewrite (normalise.py's way, the
    layer read once as the engine's save streams it) writes the very same bytes and says the same."""
    out = io.BytesIO()
    done = rewrite_layer(_tar(entries, pax), out, times)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "layer.tar"
        if not streamable:
            with pytest.raises(Unstreamable, match="hard link"):
                rewrite_stream(_tar(entries, pax), target, times)
        else:
            source = _tar(entries, pax)
            streamed, raw_diff_id = rewrite_stream(source, target, times)
            assert raw_diff_id == "sha256:" + hashlib.sha256(source.getvalue()).hexdigest()
            assert target.read_bytes() == out.getvalue()
            assert streamed == done
            assert [p.name for p in Path(tmp).iterdir()] == ["layer.tar"]  # no second-pass file left
    return done, out.getvalue()


def _members(data: bytes):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return [(m.name, m.type, m.mtime, m.linkname, m.uid, m.mode, dict(m.pax_headers),
                 tar.extractfile(m).read() if m.isreg() else None) for m in tar.getmembers()]


def test_times_rule():
    assert TIMES(BASE + 1) == BASE  # written by the build, before the epoch (a cached step): the base's time
    assert TIMES(EPOCH + 99) == BASE  # written by the build, after it (a cold build): the same
    assert Times(EPOCH + 86400, BASE)(EPOCH) == BASE  # another epoch (another commit): the same file time
    assert TIMES(BASE) == BASE  # a packaged file's own time stays
    assert TIMES(BASE - 50) == BASE - 50
    early = Times(epoch=1000, made_after=BASE)
    assert early(BASE - 50) == 1000  # an epoch older than the base clamps everything


def test_a_cached_steps_layer_equals_a_cold_builds():
    # the same files, written an hour after the base (a step the layer cache gave) and a day after
    # the epoch (a cold build): one layer, one diff id
    cached = [("usr", "dir", None, BASE + 3600), ("usr/a.py", "file", b"x = 1\n", BASE + 3600),
              ("usr/pkg.txt", "file", b"p", BASE - 10)]
    cold = [(name, kind, data, mtime if mtime < BASE else EPOCH + 86400) for name, kind, data, mtime in cached]
    first, data_first = _rewrite(cached)
    second, data_second = _rewrite(cold)
    assert data_first == data_second
    assert first.diff_id == second.diff_id == "sha256:" + hashlib.sha256(data_first).hexdigest()
    assert {name: mtime for name, _, mtime, *_ in _members(data_first)} == {
        "usr": BASE, "usr/a.py": BASE, "usr/pkg.txt": BASE - 10}


def test_entries_in_path_order_owners_and_modes_kept():
    done, data = _rewrite([("b", "file", b"2", BASE + 5), ("a", "dir", None, BASE + 5),
                           ("a/z", "symlink", "../b", BASE + 5), ("a/.wh.gone", "file", b"", BASE + 5)])
    members = _members(data)
    assert [m[0] for m in members] == ["a", "a/.wh.gone", "a/z", "b"]
    assert members[2][3] == "../b"
    assert {m[4] for m in members} == {1000}
    assert members[3][5] == 0o640 and members[0][5] == 0o755
    assert done.entries == 4


def test_access_and_change_times_dropped_extended_attributes_kept():
    pax = {"atime": "1799999999.5", "ctime": "1799999999.25", "SCHILY.xattr.security.capability": "\x01cap"}
    _, data = _rewrite([("bin/ping", "file", b"elf", BASE + 5)], pax=pax)
    (member,) = _members(data)
    assert member[6] == {"SCHILY.xattr.security.capability": "\x01cap"}
    assert member[2] == BASE  # written by the build: the base's time


def test_hard_links_follow_the_first_path_of_their_group():
    # the engine wrote z first and linked a to it: sorted, a comes first and carries the data
    done, data = _rewrite([("z", "file", b"data", BASE + 5), ("a", "link", "z", BASE + 5),
                           ("m", "link", "z", BASE + 5)])
    members = _members(data)
    assert [(m[0], m[1], m[3], m[7]) for m in members] == [
        ("a", tarfile.REGTYPE, "", b"data"), ("m", tarfile.LNKTYPE, "a", None), ("z", tarfile.LNKTYPE, "a", None)]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:  # extractable: every link after its file
        assert tar.extractfile("z").read() == b"data"


def test_a_folders_entries_follow_it_at_once():
    # text order would put `a.b` and `a-c` between `a` and `a/x`; the engine walks a folder so
    _, data = _rewrite([("a", "dir", None, BASE + 5), ("a/x", "file", b"x", BASE + 5),
                        ("a-c", "file", b"c", BASE + 5), ("a.b", "file", b"b", BASE + 5)])
    assert [m[0] for m in _members(data)] == ["a", "a/x", "a-c", "a.b"]


def test_a_link_before_its_file_and_entries_out_of_order_are_sorted_in_a_second_pass():
    _, data = _rewrite([("a", "link", "z", BASE + 5), ("z", "file", b"data", BASE + 5)])
    assert [(m[0], m[1], m[7]) for m in _members(data)] == [("a", tarfile.REGTYPE, b"data"), ("z", tarfile.LNKTYPE, None)]
    _, data = _rewrite([("z", "file", b"1", BASE + 5), ("m", "dir", None, BASE + 5), ("a", "file", b"2", BASE)])
    assert [m[0] for m in _members(data)] == ["a", "m", "z"]


@pytest.mark.parametrize("seed", range(60))
def test_streamed_and_seekable_rewrites_agree_on_any_layer(seed):
    # random layers: folders, files, links (hard links at any place), volatile paths, in any order
    rng = random.Random(seed)
    names = sorted({rng.choice(["a", "a.b", "a-c", "tmp", "var/log/apt", "usr"]) + "/" +
                    rng.choice(["x", "x.y", "x/y", "z", "history.log"]) for _ in range(rng.randint(1, 9))})
    entries = [(name, "file", name.encode() * rng.randint(0, 3), BASE + rng.choice([-9, 5])) for name in names]
    for _ in range(rng.randint(0, 3)):
        entries.append((f"usr/link{rng.randint(0, 99)}", "link", rng.choice(names), BASE + 5))
    entries = list({entry[0]: entry for entry in entries}.values())
    if rng.random() < 0.5:
        rng.shuffle(entries)
    else:  # the engine's way: each file before the links to it, folders walked in order
        entries.sort(key=lambda entry: (entry[1] == "link", path_order(entry[0])))
    removed = {name for name, kind, _, _ in entries if kind == "file" and why_volatile(name)}
    files_at = {name: index for index, (name, kind, _, _) in enumerate(entries) if kind == "file"}
    links_at = [(index, target) for index, (_, kind, target, _) in enumerate(entries) if kind == "link"]
    # a volatile file goes as it streams by unless a link named it before: a link after it is then too late
    gone = {name for name in removed if not any(t == name and i < files_at[name] for i, t in links_at)}
    streamable = not any(target in gone and files_at[target] < index for index, target in links_at)
    _rewrite(entries, streamable=streamable)


def test_volatile_files_removed_with_their_reason():
    done, data = _rewrite([("var/log/apt/history.log", "file", b"Start-Date: now", BASE + 5),
                           ("var/log/apt", "dir", None, BASE + 5),
                           ("var/cache/ldconfig/aux-cache", "file", b"inodes", BASE + 5),
                           ("tmp/stray", "file", b"x", BASE + 5),
                           ("etc/ld.so.cache", "file", b"kept", BASE + 5)])
    assert [m[0] for m in _members(data)] == ["etc/ld.so.cache", "var/log/apt"]
    assert set(done.removed) == {"var/log/apt/history.log", "var/cache/ldconfig/aux-cache", "tmp/stray"}
    assert "ldconfig" in done.removed["var/cache/ldconfig/aux-cache"]


def test_a_volatile_file_another_entry_links_to_stays():
    # streamed, the file is gone when the link comes: normalise.py saves the image again for the seekable way
    _, data = _rewrite([("tmp/data", "file", b"d", BASE + 5), ("opt/data", "link", "tmp/data", BASE + 5)],
                       streamable=False)
    assert [(m[0], m[1]) for m in _members(data)] == [("opt/data", tarfile.REGTYPE), ("tmp/data", tarfile.LNKTYPE)]


def test_every_volatile_entry_has_a_reason_and_matches_what_it_names():
    assert all(pattern and reason for pattern, reason in VOLATILE)
    assert why_volatile("/var/log/dpkg.log") and why_volatile("./root/.cache/pip/http/x")
    assert why_volatile("tmp") is None and why_volatile("var/log/dpkg.log.kept") is None
    assert why_volatile("usr/lib/python3/tmp/x") is None


def _pyc(stamp: int, flags: int = 0) -> bytes:
    return b"\xa7\x0d\r\n" + flags.to_bytes(4, "little") + stamp.to_bytes(4, "little") + b"\x10\0\0\0" + b"code"


def test_pyc_header_gets_its_sources_time():
    assert clamp_pyc(_pyc(BASE + 77), TIMES) == _pyc(BASE)
    assert clamp_pyc(_pyc(BASE - 77), TIMES) == _pyc(BASE - 77)
    hashed = _pyc(BASE + 77, flags=3)  # checked-hash: no time in it
    assert clamp_pyc(hashed, TIMES) == hashed
    assert clamp_pyc(b"not a pyc", TIMES) == b"not a pyc"
    done, data = _rewrite([("m/__pycache__/a.cpython-311.pyc", "file", _pyc(BASE + 77), BASE + 77)])
    assert done.pyc_clamped == 1 and _members(data)[0][7] == _pyc(BASE)


def test_the_rewrite_is_a_fixed_point():
    first_done, first = _rewrite([("b", "file", b"2", BASE + 5), ("a", "file", b"1", BASE - 5)])
    second = io.BytesIO()
    done = rewrite_layer(io.BytesIO(first), second, TIMES)
    assert second.getvalue() == first and done.diff_id == first_done.diff_id


def _config(created: str, history: list[str]) -> dict:
    return {"architecture": "amd64", "os": "linux", "created": created, "container": "abc123",
            "docker_version": "20.10.24", "container_config": {"Hostname": "abc123"},
            "config": {"Hostname": "abc123", "Labels": {"io.ngcbuild.release": "dev"}},
            "history": [{"created": at, "created_by": f"step {i}"} for i, at in enumerate(history)],
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]}}


def test_config_times_by_the_rule_and_no_trace_of_the_container():
    base_time, cached, cold = rfc3339(BASE - 100), rfc3339(BASE + 3600) + "", "2026-03-02T10:11:12.123456789Z"
    one = normalised_config(_config(cold, [base_time, cold]), ["sha256:" + "1" * 64], TIMES)
    two = normalised_config(_config("2025-12-31T00:00:00.5+01:00", [base_time, cached]), ["sha256:" + "1" * 64], TIMES)
    assert one == two
    config = json.loads(one)
    assert config["created"] == rfc3339(EPOCH)
    assert [entry["created"] for entry in config["history"]] == [base_time, rfc3339(BASE)]
    assert "container" not in config and "container_config" not in config and "docker_version" not in config
    assert config["config"]["Hostname"] == ""
    assert config["config"]["Labels"]["org.opencontainers.image.created"] == rfc3339(EPOCH)
    assert config["rootfs"]["diff_ids"] == ["sha256:" + "1" * 64]


def test_engine_times_parsed_with_their_offset():
    assert seconds("2026-01-01T00:00:00Z") == EPOCH
    assert seconds("2026-01-01T01:00:00.999999999+01:00") == EPOCH
    with pytest.raises(ValueError):
        seconds("yesterday")


def test_the_recipe_is_one_label_read_back_as_written_and_checked_against_the_layers():
    layers = ["sha256:" + "a" * 64, "sha256:" + "b" * 64]
    recipe = Recipe.of_base(EPOCH, {"Created": "2023-11-14T22:13:20.123456789Z", "RootFS": {"Layers": layers}})
    assert (recipe.made_after, recipe.base_layers) == (BASE, 2)
    image = {"Config": {"Labels": {"other": "x", **recipe.label()}}}
    assert Recipe.of_image(image) == recipe
    assert recipe.check([*layers, "sha256:" + "c" * 64]) is None
    assert "not the base image's" in recipe.check(["sha256:" + "c" * 64, *layers])  # another base below
    assert "not the base image's" in recipe.check(layers[:1])
    assert Recipe.of_image({"Config": {"Labels": {"other": "x"}}}) is None  # not built by ngcbuild: sent as it is
    assert Recipe.of_image({"Config": {"Labels": None}}) is None
    for damaged in ("epoch=1", "epoch=-1 made-after=0 base-layers=1 base=" + "0" * 16, 7, None,
                    recipe.label()[RECIPE_LABEL] + " ", "\x1b[31m" + recipe.label()[RECIPE_LABEL]):
        with pytest.raises(RecipeDamaged, match=RECIPE_LABEL) as raised:
            Recipe.of_image({"Config": {"Labels": {RECIPE_LABEL: damaged}}})
        assert "\x1b" not in str(raised.value)
    for answer in ({}, {"Created": "yesterday", "RootFS": {"Layers": layers}}, {"Created": "2023-11-14T22:13:20Z"},
                   {"Created": "2023-11-14T22:13:20Z", "RootFS": {"Layers": [1]}}):
        with pytest.raises(ValueError):
            Recipe.of_base(EPOCH, answer)


def test_epoch_sources(tmp_path):
    project = Project.at(tmp_path)  # no git checkout
    assert source_date_epoch(project, 42, {"SOURCE_DATE_EPOCH": "7"}).seconds == 42
    assert source_date_epoch(project, None, {"SOURCE_DATE_EPOCH": "7"}).seconds == 7
    assert source_date_epoch(project, None, {}).seconds == 0
    for bad in ("-1", "1e9", "9" * 11, " 5", "--help", "4294967296"):
        with pytest.raises(UserError, match="SOURCE_DATE_EPOCH"):
            source_date_epoch(project, None, {"SOURCE_DATE_EPOCH": bad})
    assert parse_epoch("4294967295", "x") == 2**32 - 1


def test_a_derived_epoch_is_not_before_the_base_and_two_commits_older_than_the_base_give_one_layer(tmp_path):
    # a base made after the release's last commit (bootstrapped today, a newer pull): a commit's epoch would
    # clamp every time the build wrote, so the next commit would change every layer (cuda-dev, 19 of 20)
    derived = source_date_epoch(Project.at(tmp_path), None, {})  # no checkout: 0
    raised = derived.not_before(BASE)
    assert raised.seconds == BASE and "the base image's time" in raised.source and derived.source in raised.source
    later = Epoch(BASE + 5, "the time of commit x")
    assert later.not_before(BASE) is later  # a commit after the base: kept
    for given in (source_date_epoch(Project.at(tmp_path), 1000, {}),
                  source_date_epoch(Project.at(tmp_path), None, {"SOURCE_DATE_EPOCH": "1000"})):
        assert given.given and given.not_before(BASE).seconds == 1000  # the user's: honoured, it does not move
    written = [("etc", "dir", None, BASE + 60), ("etc/x.conf", "file", b"x", BASE + 60),
               ("usr/pkg.txt", "file", b"p", BASE - 10)]
    layers = {_rewrite(written, Times(Epoch(commit, "c").not_before(BASE).seconds, BASE))[1]
              for commit in (BASE - 86400, BASE - 60, BASE, BASE + 86400)}
    assert len(layers) == 1  # two commits older than the base, the base's own second, one after it


def test_epoch_of_a_commit(tmp_path):
    import subprocess

    env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
    epoch = source_date_epoch(Project.at(tmp_path), None, {})
    assert epoch.seconds == EPOCH and "commit" in epoch.source
    assert time.gmtime(epoch.seconds).tm_year == 2026


def test_epoch_of_the_newest_commit_to_touch_the_release_s_inputs(tmp_path):
    # a later commit that touches only README.md leaves the release's epoch where its inputs' commit put it
    import subprocess

    def commit(day: str, path: str) -> None:
        env = {"GIT_AUTHOR_DATE": f"{day}T00:00:00Z", "GIT_COMMITTER_DATE": f"{day}T00:00:00Z",
               "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(day)
        subprocess.run(["git", "-C", str(tmp_path), "add", path], check=True, env=env)
        subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "-m", path], check=True, env=env)

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    commit("2026-01-01", "manifests/dev.yaml")
    commit("2026-02-01", "templates/image/Dockerfile.j2")
    commit("2026-03-01", "README.md")
    commit("2026-04-01", "manifests/other.yaml")
    project = Project.at(tmp_path)
    inputs = [tmp_path / "manifests" / "dev.yaml", tmp_path / "templates"]
    epoch = source_date_epoch(project, None, {}, inputs=inputs)
    assert time.strftime("%Y-%m-%d", time.gmtime(epoch.seconds)) == "2026-02-01"
    assert "newest commit to touch the release's inputs" in epoch.source
    assert time.strftime("%Y-%m-%d", time.gmtime(source_date_epoch(project, None, {}).seconds)) == "2026-04-01"
    assert source_date_epoch(project, None, {"SOURCE_DATE_EPOCH": "7"}, inputs=inputs).seconds == 7


def test_copy_steps_name_their_layer_not_the_engines_hash_of_the_source():
    # the classic builder names what COPY copied by its hash of the files, times included: two cold
    # builds give one layer and two hashes
    raw = _config("2026-03-02T10:11:12Z", [rfc3339(BASE - 100), "2026-03-02T10:11:12Z", "2026-03-02T10:11:13Z"])
    raw["history"][0]["created_by"] = "ADD file:" + "a" * 64 + " in / "
    raw["history"][1]["created_by"] = "COPY dir:" + "b" * 64 + " in / "
    raw["history"][2].update(created_by="LABEL x=1", empty_layer=True)
    raw["config"]["Image"] = "sha256:" + "c" * 64
    diff_ids = ["sha256:" + "1" * 64, "sha256:" + "2" * 64]
    config = json.loads(normalised_config(raw, diff_ids, TIMES, kept=1))
    assert [entry["created_by"] for entry in config["history"]] == [
        "ADD file:" + "a" * 64 + " in / ", "COPY dir:" + "2" * 64 + " in / ", "LABEL x=1"]
    assert config["config"]["Image"] == ""
