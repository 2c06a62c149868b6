"""The rules that make Docker's and buildah's layers of the same steps the same after the normalising step
(issue 52 item 1): owners by number only, opaque markers that hide nothing, a build engine's mount points
(image/artefacts.py through image/layer_tar.py). Real tars, written here with tarfile, through both rewrites."""

import hashlib
import io
import tarfile
import tempfile
from pathlib import Path

from ngcbuild.image.artefacts import MOUNT_POINT_DIR, MOUNT_POINT_FILE, OPAQUE_HIDES_NOTHING
from ngcbuild.image.layer_tar import Rewritten, Times, lower_dirs_by_layer, rewrite_layer, rewrite_stream

TIMES = Times(1_767_225_600, 1_700_000_000)
STEP = 1_750_000_000  # a time a build step wrote (after the base's)


def _entry(name, kind="file", data=b"", mode=None, uid=0, gid=0, uname="", gname="", mtime=STEP, xattrs=None):
    return {"name": name, "kind": kind, "data": data, "mode": mode, "uid": uid, "gid": gid, "uname": uname,
            "gname": gname, "mtime": mtime, "xattrs": xattrs or {}}


def _tar(entries) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry["name"])
            info.uid, info.gid, info.uname, info.gname = entry["uid"], entry["gid"], entry["uname"], entry["gname"]
            info.mtime = entry["mtime"]
            info.pax_headers = {f"SCHILY.xattr.{key}": value for key, value in entry["xattrs"].items()}
            if entry["kind"] == "dir":
                info.type, info.mode = tarfile.DIRTYPE, entry["mode"] if entry["mode"] is not None else 0o40755
                tar.addfile(info)
            else:
                info.mode = entry["mode"] if entry["mode"] is not None else 0o100644
                info.size = len(entry["data"])
                tar.addfile(info, io.BytesIO(entry["data"]))
    return raw.getvalue()


def _rewrite(entries, lower_dirs=None) -> tuple[Rewritten, bytes]:
    """Both rewrites of the layer: the streamed one (the engine's save as it comes) must write the very bytes
    of the seekable one and say the same."""
    raw = _tar(entries)
    out = io.BytesIO()
    done = rewrite_layer(io.BytesIO(raw), out, TIMES, lower_dirs=lower_dirs)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "layer.tar"
        streamed, raw_diff_id = rewrite_stream(io.BytesIO(raw), target, TIMES, lower_dirs=lower_dirs)
        assert raw_diff_id == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert target.read_bytes() == out.getvalue()
        assert streamed == done
    return done, out.getvalue()


def _names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return [member.name for member in tar.getmembers()]


# --- cause 1: user and group names

def test_owner_names_are_blanked_and_the_numbers_kept():
    done, data = _rewrite([_entry("etc", "dir", uname="root", gname="root"),
                           _entry("etc/app.conf", data=b"x", uid=1000, gid=100, uname="app", gname="users")])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        found = [(m.name, m.uid, m.gid, m.uname, m.gname) for m in tar.getmembers()]
    assert found == [("etc", 0, 0, "", ""), ("etc/app.conf", 1000, 100, "", "")]


def test_dockers_named_and_buildahs_nameless_owners_give_the_same_layer():
    docker = [_entry("usr", "dir", uname="root", gname="root"), _entry("usr/x", data=b"1", uname="root", gname="root")]
    buildah = [_entry("usr", "dir"), _entry("usr/x", data=b"1")]
    assert _rewrite(docker)[0].diff_id == _rewrite(buildah)[0].diff_id


# --- cause 2: opaque markers

DOCKER_NEW_DIR = [_entry("etc", "dir"), _entry("etc/ssl", "dir"), _entry("etc/ssl/.wh..wh..opq"),
                  _entry("etc/ssl/cert.pem", data=b"pem")]
BUILDAH_NEW_DIR = [_entry("etc", "dir"), _entry("etc/ssl", "dir"), _entry("etc/ssl/cert.pem", data=b"pem")]


def test_a_marker_on_a_directory_no_layer_below_holds_is_dropped_with_its_reason():
    done, data = _rewrite(DOCKER_NEW_DIR, lower_dirs={"etc", "usr"})
    assert _names(data) == ["etc", "etc/ssl", "etc/ssl/cert.pem"]
    assert done.removed == {"etc/ssl/.wh..wh..opq": OPAQUE_HIDES_NOTHING}
    assert done.opaque == set()
    assert done.diff_id == _rewrite(BUILDAH_NEW_DIR, lower_dirs={"etc", "usr"})[0].diff_id


def test_a_marker_on_a_directory_a_layer_below_holds_stays():
    done, data = _rewrite(DOCKER_NEW_DIR, lower_dirs={"etc", "etc/ssl"})
    assert "etc/ssl/.wh..wh..opq" in _names(data)
    assert done.removed == {} and done.opaque == {"etc/ssl"}


def test_without_the_lower_layers_every_marker_stays_and_is_reported():
    done, data = _rewrite(DOCKER_NEW_DIR)
    assert "etc/ssl/.wh..wh..opq" in _names(data)
    assert done.opaque == {"etc/ssl"}  # what a rewrite given lower_dirs may still drop


def test_a_marker_at_the_root_is_never_dropped():
    done, data = _rewrite([_entry(".wh..wh..opq"), _entry("a", data=b"a")], lower_dirs=set())
    assert ".wh..wh..opq" in _names(data)


def test_a_directory_named_like_a_marker_or_a_plain_whiteout_is_not_a_marker():
    entries = [_entry("etc", "dir"), _entry("etc/.wh.ssl"), _entry("opt", "dir"), _entry("opt/.wh..wh..opq", "dir")]
    done, data = _rewrite(entries, lower_dirs=set())
    assert _names(data) == ["etc", "etc/.wh.ssl", "opt", "opt/.wh..wh..opq"]


def test_dirs_are_every_directory_entry_and_every_parent():
    done, _ = _rewrite([_entry("./usr/", "dir"), _entry("usr/lib/python3/x.py", data=b"x"), _entry("var/.wh.old"),
                        _entry("opt/new/.wh..wh..opq")])
    assert done.dirs == {"usr", "usr/lib", "usr/lib/python3", "var", "opt", "opt/new"}


def test_lower_dirs_accumulated_layer_by_layer_drop_what_they_must():
    """How a caller feeds it: the union of the dirs of every layer below, the base's first, in the image's
    order (not the save's)."""
    base = [_entry("etc", "dir"), _entry("etc/passwd", data=b"root")]
    step1 = [_entry("etc", "dir"), _entry("etc/ssl", "dir"), _entry("etc/ssl/.wh..wh..opq"), _entry("etc/ssl/a")]
    step2 = [_entry("etc", "dir"), _entry("etc/ssl", "dir"), _entry("etc/ssl/.wh..wh..opq"), _entry("etc/ssl/b")]
    lower: set[str] = set()
    results = []
    for layer in (base, step1, step2):
        done, _ = _rewrite(layer, lower_dirs=frozenset(lower))
        results.append(done)
        lower |= done.dirs
    assert "etc/ssl/.wh..wh..opq" in results[1].removed  # etc/ssl is new in step 1
    assert results[2].removed == {}  # step 2's marker hides step 1's etc/ssl/a: it stays
    assert results[2].opaque == {"etc/ssl"}


def test_lower_dirs_by_layer_follows_the_images_order_and_a_twice_held_layer_takes_its_last_place():
    dirs = {"base": {"etc", "usr"}, "a": {"etc/ssl"}, "b": {"opt"}}
    assert lower_dirs_by_layer(["base", "a", "b"], dirs) == {
        "base": frozenset(), "a": frozenset({"etc", "usr"}), "b": frozenset({"etc", "usr", "etc/ssl"})}
    assert lower_dirs_by_layer(["base", "a", "b", "a"], dirs)["a"] == frozenset({"etc", "usr", "etc/ssl", "opt"})


def test_a_second_pass_over_a_rewritten_layer_drops_what_the_first_could_not():
    """A caller that streams the save in the engine's order (no lower dirs yet) may rewrite again from its
    file, once the lower layers are known: the same bytes as one pass given them."""
    _, first = _rewrite(DOCKER_NEW_DIR)
    again = io.BytesIO()
    second = rewrite_layer(io.BytesIO(first), again, TIMES, lower_dirs={"etc"})
    assert second.diff_id == _rewrite(DOCKER_NEW_DIR, lower_dirs={"etc"})[0].diff_id


# --- cause 3: a build engine's mount points

BUILDAH_HOSTS = _entry("etc/hosts", mode=0o100755, mtime=STEP)
BUILDAH_RUN = _entry("run", "dir", mode=0o40755)


def test_buildahs_empty_hosts_file_is_dropped():
    done, data = _rewrite([_entry("etc", "dir"), BUILDAH_HOSTS, _entry("etc/os-release", data=b"x")])
    assert _names(data) == ["etc", "etc/os-release"]
    assert done.removed == {"etc/hosts": MOUNT_POINT_FILE}


def test_a_hosts_file_a_step_wrote_stays():
    for kept in (_entry("etc/hosts", data=b"127.0.0.1 localhost\n", mode=0o100755),  # content
                 _entry("etc/hosts", mode=0o100644),  # a step's mode (umask)
                 _entry("etc/hosts", mode=0o100755, uid=1000),  # a step's owner
                 _entry("etc/hosts", mode=0o100755, xattrs={"user.x": "1"}),
                 _entry("etc/hosts", "dir", mode=0o40755)):  # not a file
        done, data = _rewrite([_entry("etc", "dir"), kept], lower_dirs={"etc"})
        assert "etc/hosts" in _names(data), kept
        assert done.removed == {}


def test_only_the_mounted_paths_are_mount_points():
    done, data = _rewrite([_entry("etc", "dir"), _entry("etc/hosts.allow", mode=0o100755),
                           _entry("etc/myhosts", mode=0o100755)])
    assert _names(data) == ["etc", "etc/hosts.allow", "etc/myhosts"]


def test_buildahs_run_entry_is_dropped_where_a_layer_below_holds_it():
    done, data = _rewrite([BUILDAH_RUN, _entry("usr", "dir")], lower_dirs={"run", "usr"})
    assert _names(data) == ["usr"]
    assert done.removed == {"run": MOUNT_POINT_DIR}


def test_run_stays_when_the_layers_below_are_unknown_lack_it_or_a_step_changed_it():
    assert _names(_rewrite([BUILDAH_RUN])[1]) == ["run"]
    assert _names(_rewrite([BUILDAH_RUN], lower_dirs={"usr"})[1]) == ["run"]  # a step's mkdir
    assert _names(_rewrite([_entry("run", "dir", mode=0o40700)], lower_dirs={"run"})[1]) == ["run"]  # chmod
    assert _names(_rewrite([_entry("run", "dir", mode=0o40755, gid=5)], lower_dirs={"run"})[1]) == ["run"]


def test_what_a_step_wrote_under_run_stays_without_the_engines_entry():
    done, data = _rewrite([BUILDAH_RUN, _entry("run/app", "dir"), _entry("run/app/pid", data=b"1")],
                          lower_dirs={"run"})
    assert _names(data) == ["run/app", "run/app/pid"]
    assert "run" in done.dirs  # a child's parent: the layers above still know it is there


def test_the_same_step_on_docker_and_buildah_gives_one_layer():
    """The first RUN step of dev as each engine wrote it (the entries that differed, from the live build)."""
    lower = {"etc", "run", "usr", "usr/lib"}
    docker = [_entry("etc", "dir", uname="root", gname="root"), _entry("etc/ssl", "dir", uname="root", gname="root"),
              _entry("etc/ssl/.wh..wh..opq", uname="root", gname="root"),
              _entry("etc/ssl/openssl.cnf", data=b"cnf", uname="root", gname="root"),
              _entry("usr", "dir", uname="root", gname="root")]
    buildah = [_entry("etc", "dir"), BUILDAH_HOSTS, _entry("etc/ssl", "dir"), _entry("etc/ssl/openssl.cnf", data=b"cnf"),
               BUILDAH_RUN, _entry("usr", "dir")]
    assert _rewrite(docker, lower)[0].diff_id == _rewrite(buildah, lower)[0].diff_id


# --- cause 5: what made two Podman builds of one commit differ (the config; their layers were the same)

def _podman_config(parent_ids: list[str], label_order: list[str]) -> dict:
    """A config as buildah writes it (the fields that matter here), the ids of its intermediate images given."""
    history = [{"created": "2026-01-01T00:00:00Z", "created_by": "/bin/sh -c #(nop) ADD file:abc in /"},
               {"created": "2030-01-01T00:00:00Z", "created_by": "/bin/sh -c apt-get install -y python3",
                "comment": "FROM docker.io/library/debian:bookworm-slim"},
               {"created": "2030-01-01T00:00:00Z", "created_by": "/bin/sh -c #(nop) COPY dir:x in /",
                "comment": f"FROM {parent_ids[0]}"},
               {"created": "2030-01-01T00:00:00Z", "created_by": "/bin/sh -c #(nop) WORKDIR /workspace",
                "comment": f"FROM {parent_ids[1]}", "empty_layer": True}]
    for name in label_order:
        history.append({"created": "2030-01-01T00:00:00Z", "created_by": f'/bin/sh -c #(nop) LABEL "{name}"="1"',
                        "comment": f"FROM {parent_ids[2]}", "empty_layer": True})
    return {"architecture": "amd64", "os": "linux", "parent": "sha256:" + parent_ids[2] * 4, "history": history,
            "config": {"Labels": {name: "1" for name in label_order}}}


def _normalised(config: dict) -> dict:
    import json

    from ngcbuild.image.config import normalised_config

    return json.loads(normalised_config(config, ["sha256:" + "1" * 64, "sha256:" + "2" * 64, "sha256:" + "3" * 64],
                                        TIMES, kept=1))


def test_two_podman_builds_configs_are_the_same_once_normalised():
    first = _normalised(_podman_config(["b3cb13d4454f", "3f68e94645bb", "10c1d6661f27"],
                                       ["io.ngcbuild.context.sha256", "io.ngcbuild.release"]))
    second = _normalised(_podman_config(["fb47a2e3992f", "c69eddd61ff2", "9dfd4a0a9878"],
                                        ["io.ngcbuild.release", "io.ngcbuild.context.sha256"]))
    assert first == second
    assert "parent" not in first
    comments = [entry.get("comment") for entry in first["history"]]
    assert comments == [None] * 6  # Docker writes none: buildah's FROM comments, by id or by name, go


def test_labels_are_sorted_only_within_a_run_of_label_entries_that_wrote_no_layer():
    config = {"history": [{"created_by": "/bin/sh -c #(nop) LABEL b=1", "empty_layer": True},
                          {"created_by": "/bin/sh -c #(nop) LABEL a=1", "empty_layer": True},
                          {"created_by": "/bin/sh -c #(nop) COPY dir:x in /"},
                          {"created_by": "/bin/sh -c #(nop) LABEL d=1", "empty_layer": True},
                          {"created_by": "/bin/sh -c #(nop) ENV X=1", "empty_layer": True},
                          {"created_by": "/bin/sh -c #(nop) LABEL c=1", "empty_layer": True}]}
    import json

    from ngcbuild.image.config import normalised_config

    history = json.loads(normalised_config(config, ["sha256:" + "1" * 64], TIMES))["history"]
    assert [entry["created_by"][-3:] for entry in history] == ["a=1", "b=1", "n /", "d=1", "X=1", "c=1"]


# --- cause 6: what made Docker's and Podman's configs of one build differ (live, dev at 1110be9: the same layers)

_BASE_HISTORY = [{"created": "2023-11-14T22:13:20Z", "created_by": "/bin/sh -c #(nop) ADD file:abc in / "},
                 {"created": "2023-11-14T22:13:20Z", "created_by": "/bin/sh -c #(nop)  CMD [\"bash\"]",
                  "empty_layer": True}]
_SETTINGS = {"Env": ["PATH=/usr/bin", "NVIDIA_PRODUCT_NAME=PyTorch", "LD_LIBRARY_PATH=/usr/local/lib/torch/lib"],
             "Entrypoint": ["/opt/nvidia/nvidia_entrypoint.sh"], "WorkingDir": "/workspace",
             "Labels": {"org.opencontainers.image.description": "CPU-only release with a PyTorch wheel",
                        "io.ngcbuild.release-image": "epoch=1 made-after=2 base-layers=1 base=0d17313eaa379987"}}


def _engines_config(steps: list[str], settings: dict, comment: str | None = None) -> dict:
    history = [dict(entry) for entry in _BASE_HISTORY]
    history.append({"created": "2030-01-01T00:00:00Z", "created_by": "/bin/sh -c apt-get install -y python3"})
    for text in steps:
        history.append({"created": "2030-01-01T00:00:01Z", "created_by": text, "empty_layer": True})
    if comment:
        history[2]["comment"] = comment
    return {"architecture": "amd64", "os": "linux", "history": history, "config": settings}


def test_dockers_and_buildahs_configs_of_one_build_are_the_same_once_normalised():
    """Docker writes a metadata step's words evaluated and unquoted after two spaces, empty settings as null;
    buildah the Dockerfile's words as written (quotes, continuation spaces, `${VAR:+...}`), empty settings as
    [] or {}, its version as a label and the base's name as a comment: the same image, once normalised."""
    docker = _engines_config([
        "/bin/sh -c #(nop)  ENV NVIDIA_PRODUCT_NAME=PyTorch LD_LIBRARY_PATH=/usr/local/lib/torch/lib",
        "/bin/sh -c #(nop)  LABEL org.opencontainers.image.description=CPU-only release with a PyTorch wheel",
        "/bin/sh -c #(nop) WORKDIR /workspace",
        '/bin/sh -c #(nop)  ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]',
        "/bin/sh -c #(nop)  LABEL io.ngcbuild.release-image=epoch=1 made-after=2 base-layers=1 base=0d17313eaa379987",
    ], {**_SETTINGS, "Cmd": None, "OnBuild": None, "Volumes": None})
    buildah = _engines_config([
        '/bin/sh -c #(nop) ENV NVIDIA_PRODUCT_NAME="PyTorch"     LD_LIBRARY_PATH="/usr/local/lib/torch/lib'
        '${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"',
        '/bin/sh -c #(nop) LABEL org.opencontainers.image.description="CPU-only release with a PyTorch wheel"',
        "/bin/sh -c #(nop) WORKDIR /workspace",
        '/bin/sh -c #(nop) ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]',
        '/bin/sh -c #(nop) LABEL "io.ngcbuild.release-image"="epoch=1 made-after=2 base-layers=1 base=0d17313eaa379987"',
    ], {**_SETTINGS, "Cmd": [], "OnBuild": [], "Volumes": {},
        "Labels": {**_SETTINGS["Labels"], "io.buildah.version": "1.28.2"}},
        comment="FROM localhost/debian:bookworm-slim")
    ours = _normalised(docker)
    assert ours == _normalised(buildah)
    texts = [entry["created_by"] for entry in ours["history"]]
    assert texts[0] == _BASE_HISTORY[0]["created_by"] and texts[1] == _BASE_HISTORY[1]["created_by"]  # the base's
    assert texts[3] == "/bin/sh -c #(nop) ENV NVIDIA_PRODUCT_NAME=PyTorch LD_LIBRARY_PATH=/usr/local/lib/torch/lib"
    assert texts[-1].endswith("LABEL io.ngcbuild.release-image=epoch=1 made-after=2 base-layers=1 base=0d17313eaa379987")
    assert ours["config"]["Cmd"] is None and "io.buildah.version" not in ours["config"]["Labels"]
    assert _normalised(ours) == ours  # a release image made again is itself


def test_a_setting_steps_words_that_are_no_key_of_the_image_are_left_as_written():
    config = _engines_config(["/bin/sh -c #(nop)  ENV GONE=1"], {"Env": ["PATH=/usr/bin"]})
    assert _normalised(config)["history"][-1]["created_by"] == "/bin/sh -c #(nop) ENV GONE=1"
