"""Every apt source file the base carries is accounted for (base.apt_lists, issue 53): the manifest declares
them from evidence or says not known; the build removes those the image does not need and fails on one it does
not name (the rendered step run against a stand-in /etc/apt); verify reports each with the key that signs it,
from recorded repositories served here (tests/data/apt-key), never a failure for 20.12 and 20.02."""

import functools
import http.server
import shutil
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.model import AptKey, AptLists, BaseImage
from ngcbuild.render.context import render_files
from ngcbuild.verify import report
from ngcbuild.verify.apt_lists import apt_list_rows
from ngcbuild.verify.web import Web

from ..conftest import REPO

DATA = Path(__file__).resolve().parent.parent / "data" / "apt-key"
NEW = "C1195ABBDC89F6CE469EC1DAEDEE7B7AB9E283A4"  # the recorded keys (test_verify_apt_keys.py)
OLD = "12CBF43E88440EFE3F2DFFD528A74563DB41F2D6"


def _load(release: str):
    return load_release(Project.at(REPO), release)


@pytest.mark.parametrize("release", ["20.02", "20.12"])
def test_the_2020_bases_declare_their_lists_and_remove_nvidias_machine_learning_repository(release):
    base = _load(release).release.base
    lists = {item.path: item for item in base.apt_lists.lists}
    assert sorted(lists) == ["/etc/apt/sources.list", "/etc/apt/sources.list.d/cuda.list",
                             "/etc/apt/sources.list.d/nvidia-ml.list"]
    assert lists["/etc/apt/sources.list.d/nvidia-ml.list"].use == "remove"
    assert "/machine-learning/" in lists["/etc/apt/sources.list.d/nvidia-ml.list"].repository
    (key,) = base.apt_keys  # the CUDA list is kept and re-keyed
    assert lists["/etc/apt/sources.list.d/cuda.list"].repository == key.repository
    assert lists["/etc/apt/sources.list.d/cuda.list"].use == "keep"


@pytest.mark.parametrize("release", ["dev", "cuda-dev", "25.12"])
def test_a_base_whose_lists_nobody_recorded_says_not_known(release):
    lists = _load(release).release.base.apt_lists
    assert lists.lists is None and lists.not_known


# --- the manifest's form --------------------------------------------------------------------------------

@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace("        use: remove\n", "        use: keep\n"),
     "base.apt_lists.lists.2.signed_by: keeps a repository no key signs; expected signed_by"),
    (lambda t: t.replace("    lists:\n", "    not_known: nobody looked\n    lists:\n"),
     "base.apt_lists.lists: expected exactly one of lists and not_known"),
    (lambda t: t.replace("use: remove", "use: drop"), "base.apt_lists.lists.2.use: expected one of 'keep' or 'remove'"),
])
def test_a_bad_declaration_is_one_line_naming_file_and_key(scratch, edit, message):
    scratch.copy_release("20.12")
    part = scratch.root / "manifests" / "parts" / "ubuntu-20.04-cuda-11.1.yaml"
    part.write_text(edit(part.read_text()))
    done = scratch.ngcbuild("render", "--release", "20.12")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("ngcbuild: manifests/20.12.yaml: " + message), done.stderr
    assert "(after extends: ubuntu-20.04-cuda-11.1, ngc-20)" in done.stderr  # the part that holds the key
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_removing_the_re_keyed_repository_is_refused():
    with pytest.raises(ValidationError, match="whose key apt_keys installs; expected use: keep"):
        BaseImage.model_validate({
            "image": "nvidia/cuda:11.1.1-cudnn8-devel-ubuntu20.04",
            "apt_keys": [{"repository": "https://r.invalid/cuda", "url": "https://r.invalid/cuda/k.pub",
                          "fingerprint": NEW, "evidence": "e"}],
            "apt_lists": {"lists": [{"path": "/etc/apt/sources.list.d/cuda.list", "repository": "https://r.invalid/cuda",
                                     "use": "remove", "evidence": "e"}]}})


# --- the build's step, against a stand-in /etc/apt -------------------------------------------------------

def _step(release: str, etc: Path) -> str:
    project = Project.at(REPO)
    lines = render_files(project, load_release(project, release)).files["Dockerfile"].decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RUN for f in /etc/apt/sources.list.d/*"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    return "\n".join(lines[start:end + 1])[len("RUN "):].replace("/etc/apt/", f"{etc}/")


def _etc(tmp_path, *names) -> Path:
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text("deb http://archive.ubuntu.com/ubuntu/ focal main\n")
    for name in names:
        (etc / "sources.list.d" / name).write_text("deb https://developer.download.nvidia.com/ /\n")
    return etc


@pytest.mark.parametrize("release", ["20.02", "20.12"])
def test_the_build_removes_the_machine_learning_list_and_keeps_the_cuda_one(tmp_path, release):
    etc = _etc(tmp_path, "cuda.list", "nvidia-ml.list")
    done = subprocess.run(["sh", "-c", _step(release, etc)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (etc / "sources.list.d").iterdir()) == ["cuda.list"]


def test_a_mirror_without_the_machine_learning_list_builds(tmp_path):
    etc = _etc(tmp_path, "cuda.list")
    done = subprocess.run(["sh", "-c", _step("20.02", etc)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_list_the_manifest_does_not_name_fails_the_build_naming_it(tmp_path):
    etc = _etc(tmp_path, "cuda.list", "nvidia-ml.list", "graphics-drivers.list")
    done = subprocess.run(["sh", "-c", _step("20.12", etc)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"{etc}/sources.list.d/graphics-drivers.list: not in the manifest's "
                                   "base.apt_lists (every apt source of the base is declared)")


def test_a_base_whose_lists_are_not_known_gets_no_step():
    project = Project.at(REPO)
    for release in ("dev", "cuda-dev", "25.12"):
        assert "sources.list.d/*" not in render_files(project, load_release(project, release)).files["Dockerfile"].decode()


# --- verify's rows ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("repos")
    (root / "cuda").mkdir()
    shutil.copy(DATA / "InRelease", root / "cuda" / "InRelease")
    shutil.copy(DATA / "new-key.asc", root / "cuda" / "key.asc")
    (root / "ml").mkdir()
    shutil.copy(DATA / "InRelease.old-key", root / "ml" / "InRelease")  # never re-keyed
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _release(served, **more):
    key = AptKey(repository=f"{served}/cuda", url=f"{served}/cuda/key.asc", fingerprint=NEW, replaces=[OLD],
                 evidence="recorded")
    lists = AptLists.model_validate({"lists": [
        {"path": "/etc/apt/sources.list", "repository": "http://archive.ubuntu.com/ubuntu", "use": "keep",
         "signed_by": "the Ubuntu archive signing keys of the base's ubuntu-keyring", "evidence": "e"},
        {"path": "/etc/apt/sources.list.d/cuda.list", "repository": f"{served}/cuda", "use": "keep", "evidence": "e"},
        {"path": "/etc/apt/sources.list.d/nvidia-ml.list", "repository": more.get("ml", f"{served}/ml"),
         "use": "remove", "evidence": "e"}]})
    return SimpleNamespace(base=SimpleNamespace(apt_keys=[key], apt_lists=lists))


def test_verify_names_the_key_of_each_list(served):
    rows = {row.name: row for row in apt_list_rows(_release(served), Web(environ={}))}
    ubuntu, cuda, ml = (rows[f"/etc/apt/{p}"] for p in ("sources.list", "sources.list.d/cuda.list",
                                                         "sources.list.d/nvidia-ml.list"))
    assert (cuda.kind, cuda.pin, cuda.status) == ("apt-list", NEW, report.VERIFIED), cuda
    assert cuda.reason.startswith(f"kept, re-keyed by the build ({served}/cuda): its InRelease is signed by {NEW}")
    assert (ml.pin, ml.status) == (OLD, report.VERIFIED), ml
    assert ml.reason == (f"removed by the build before any apt step ({served}/ml); its InRelease names {OLD}, a key "
                         "the build removes (rotated out)")
    assert ubuntu.status == report.NOT_VERIFIED and "signed by the Ubuntu archive signing keys" in ubuntu.reason


def test_a_removed_list_this_machine_cannot_read_is_not_verified_with_the_reason(served):
    rows = apt_list_rows(_release(served, ml=f"{served}/gone"), Web(environ={}))
    (ml,) = [row for row in rows if row.name.endswith("nvidia-ml.list")]
    assert ml.status == report.NOT_VERIFIED and "HTTP 404" in ml.reason, ml


def test_not_known_is_one_row_with_the_reason():
    (row,) = apt_list_rows(_load("25.12").release, Web(environ={}))
    assert row.status == report.NOT_VERIFIED and row.reason.startswith("not verified: verify does not know them: the manifest says not known (no listing of")


@pytest.mark.parametrize("release", ["20.02", "20.12"])
def test_the_2020_releases_get_no_failed_list_row_where_nothing_answers(release):
    rows = apt_list_rows(_load(release).release, Web(environ={"HTTPS_PROXY": "http://127.0.0.1:9",
                                                             "HTTP_PROXY": "http://127.0.0.1:9"}, deadline_s=3))
    assert len(rows) == 3 and not [row for row in rows if row.status == report.FAILED], rows


def _stages(dockerfile: str) -> list[tuple[str, str, list[str]]]:
    """(name, what it is FROM, its lines) of each stage of a rendered Dockerfile."""
    stages = []
    for line in dockerfile.splitlines():
        if line.startswith("FROM "):
            words = line.split()
            stages.append((words[3] if len(words) > 3 else "", words[1], []))
        elif stages:
            stages[-1][2].append(line)
    return stages


@pytest.mark.parametrize("release", ["20.02", "20.12"])
def test_every_apt_get_of_the_build_runs_after_the_lists_are_accounted_for(release):
    """nvidia-ml.list is gone before the first apt-get update of every stage, those FROM the base image and
    those FROM a stage of it alike (an unsigned repository fails the update with exit 100)."""
    project = Project.at(REPO)
    stages = _stages(render_files(project, load_release(project, release)).files["Dockerfile"].decode())
    accounted, apt_stages = set(), []
    for name, parent, lines in stages:
        step = next((i for i, line in enumerate(lines) if line.startswith("RUN for f in /etc/apt/sources.list.d/*")),
                    None)
        first_apt = next((i for i, line in enumerate(lines) if "apt-get" in line and not line.startswith("#")), None)
        inherited = parent in accounted
        if first_apt is not None:
            apt_stages.append(name)
            assert inherited or (step is not None and step < first_apt), (name, lines[first_apt])
        if inherited or step is not None:
            accounted.add(name)
    assert "runtime" in accounted and "builder" in apt_stages  # the stages the build's apt steps run in
