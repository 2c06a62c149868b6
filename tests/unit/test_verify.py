"""The parts of `invoke verify` that need no outside index: wheel tags, why a pin has no wheel, the rows
for base images, git refs and apt pins, and what an index answering 500 or garbage becomes. Reading
metadata from a local index is in test_verify_reads.py; PyPI itself in tests/integration/test_verify.py."""

import dataclasses
import gzip
import json
from datetime import date

import pytest

from ngcbuild.core.errors import ManifestError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.verify import apt, apt_index, closure_check, git_refs, pins, report, run, web
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.target import Target, platform_tags

from ..conftest import REPO

DATA = REPO / "tests" / "data" / "verify"


class Offline:
    """The outside world as this machine sees GitHub: unreachable."""

    bundle = None

    def unreachable(self, url, apt=False):
        return "api.github.com is unreachable from here"


def test_platform_tags_list_every_manylinux_glibc_down_to_the_oldest():
    tags = platform_tags("linux/amd64", "2.39")
    assert tags[0] == "manylinux_2_39_x86_64"
    assert tags[-1] == "linux_x86_64"
    # pip matches literally: the 2_28 wheels of DALI and the legacy names must all be there
    for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux_2_5_x86_64",
                "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"):
        assert tag in tags
    arm = platform_tags("linux/arm64", "2.36")
    assert "manylinux_2_17_aarch64" in arm and "manylinux_2_16_aarch64" not in arm
    assert "manylinux2014_aarch64" in arm and "manylinux1_aarch64" not in arm
    # an old glibc admits no newer wheel
    assert "manylinux_2_28_x86_64" not in platform_tags("linux/amd64", "2.27")


def test_abi_of_old_pythons_carries_the_m_flag():
    assert Target("3.6.5", "linux/amd64", "2.27").abi == "cp36m"
    assert Target("3.8.5", "linux/amd64", "2.31").abi == "cp38"
    assert Target("3.12.3", "linux/amd64", "2.39").abi == "cp312"


def _dali_files():
    return [f["filename"] for f in json.loads((DATA / "simple-nvidia-dali-cuda130.json").read_text())["files"]]


def test_dali_1_52_is_a_placeholder_on_pypi_and_fails():
    target = Target("3.12.3", "linux/amd64", "2.39")
    status, reason = pins.explain_missing("1.52.0", _dali_files(), target)
    assert status == report.FAILED
    assert "only the source archive nvidia_dali_cuda130-1.52.0.tar.gz" in reason
    assert "platform wheels for other versions" in reason


def test_a_missing_version_and_a_wheel_for_other_tags_fail_with_what_exists():
    target = Target("3.12.3", "linux/amd64", "2.27")
    status, reason = pins.explain_missing("1.99.0", _dali_files(), target)
    assert status == report.FAILED and "no release 1.99.0" in reason and "2.4.0" in reason
    # 1.53.0 has manylinux_2_28 wheels only: glibc 2.27 cannot take them
    status, reason = pins.explain_missing("1.53.0", _dali_files(), target)
    assert status == report.FAILED and "manylinux_2_28_x86_64.whl" in reason and "glibc 2.27" in reason


def test_a_pure_python_source_archive_is_left_to_the_build():
    target = Target("3.6.5", "linux/amd64", "2.27")
    status, reason = pins.explain_missing("0.18.2", ["future-0.18.2.tar.gz"], target)
    assert status == report.NOT_VERIFIED and "future-0.18.2.tar.gz" in reason


def test_release_cutoff_is_the_month_after():
    assert git_refs.release_cutoff("25.12") == date(2026, 1, 1)
    assert git_refs.release_cutoff("20.02") == date(2020, 3, 1)
    assert git_refs.release_cutoff("dev") is None


def test_a_removed_base_image_is_refused_with_the_way_out():
    release = load_release(Project.at(REPO), "20.02").release
    row = run._base_row(release, None)
    assert row.status == report.FAILED
    assert "--base" in row.reason and "carry the same layers" in row.reason
    mirrored = run._base_row(release, "mirror.example/cuda:10.2")
    assert mirrored.status == report.NOT_VERIFIED and "carry the same layers" in mirrored.reason
    # the mirror no longer has to replace NVIDIA's rotated apt key: the build installs the new one (base.apt_keys)
    assert "apt signing key" not in row.reason and release.base.apt_keys[0].replaces == [
        "AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"]


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12", "dev", "cuda-dev"])
def test_git_refs_are_full_commits_and_never_verified_offline(name):
    release = load_release(Project.at(REPO), name).release
    for row in git_refs.git_rows(release, Offline()):
        if git_refs.FULL_COMMIT.fullmatch(row.pin):
            assert row.status == report.NOT_VERIFIED and "unreachable" in row.reason
        elif git_refs.SHORT_COMMIT.fullmatch(row.pin):
            # 25.12's PyTorch b4e4ee81d3 as NVIDIA gives it: the command to resolve it, never "failed" offline
            assert row.status == report.NOT_VERIFIED and "unreachable" in row.reason
            assert row.reason.endswith(f"/tmp/resolve.git log -1 --format='%H %cI' {row.pin}")
        else:
            assert row.status == report.FAILED and "not a full commit" in row.reason


class GitHub:
    """GitHub answering one commit query (the API resolves a short hash to its commit)."""

    bundle = None

    def __init__(self, answer):
        self.answer = answer

    def unreachable(self, url, apt=False):
        return None

    def get(self, url, accept=None, apt=False):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer if isinstance(self.answer, bytes) else json.dumps(self.answer).encode()


def _with_ref(ref):
    from ngcbuild.manifest.model import Component

    return Component(version="1.0", install="source", repo="https://github.com/NVIDIA/apex", ref=ref)


def test_a_short_commit_github_resolves_fails_naming_the_full_one():
    full = "154c6336aa7aedd40d3b3583fb5e1328f9cdf387"
    web = GitHub({"sha": full, "commit": {"committer": {"date": "2020-12-17T20:03:16Z"}}})
    row = git_refs._short_commit_row("components.apex.ref", _with_ref("154c633"), web)
    assert row.status == report.FAILED and full in row.reason and "2020-12-17" in row.reason


def test_a_short_commit_github_does_not_know_fails():
    error = web.HttpStatus("https://api.github.com/", 422)
    row = git_refs._short_commit_row("components.apex.ref", _with_ref("0000000"), GitHub(error))
    assert row.status == report.FAILED and "HTTP 422" in row.reason


@pytest.mark.parametrize("answer", [b"[]", b'{"sha": "x"}', b'{"sha": "154c6336aa7aedd40d3b3583fb5e1328f9cdf387"}',
                                    b'{"sha": 7, "commit": {"committer": {"date": "2020-12-17"}}}', b"\xff not json"],
                         ids=["a-list", "short-sha", "no-commit", "sha-a-number", "not-json"])
def test_github_answering_garbage_is_not_verified_never_a_traceback(answer):
    row = git_refs._short_commit_row("components.apex.ref", _with_ref("154c633"), GitHub(answer))
    assert row.status == report.NOT_VERIFIED and "not a commit" in row.reason


def test_a_tag_is_never_a_commit():
    release = load_release(Project.at(REPO), "20.12").release
    apex = release.components["apex"].model_copy(update={"ref": "v0.1"})
    changed = release.model_copy(update={"components": {**release.components, "apex": apex}})
    rows = {row.name: row for row in git_refs.git_rows(changed, Offline())}
    assert rows["components.apex.ref"].status == report.FAILED


def test_output_counts_every_row():
    rows = [report.Row("pip", "a", "1", "linux/amd64", report.VERIFIED),
            report.Row("pip", "b", "2", "linux/amd64", report.FAILED, "gone"),
            report.Row("git", "c", "x", "", report.NOT_VERIFIED, "offline")]
    data = json.loads(report.json_text("r", rows))
    assert data["summary"] == {"verified": 1, "failed": 1, "not verified": 1}
    assert data["rows"][1]["reason"] == "gone"
    assert "1 verified, 1 failed, 1 not verified" in report.table_text("r", rows)


def test_requires_python_is_tested_against_the_images_full_interpreter_version():
    assert pins.supports_python("<3.7,>=3.6", "3.6.5")  # dataclasses, for 20.02's Python 3.6
    assert not pins.supports_python(">=3.8", "3.6.5")
    assert pins.supports_python("", "3.12.3") and pins.supports_python("not a specifier", "3.12.3")
    # the patch level decides: 25.12's Python is 3.12.3, not 3.12.0
    assert not pins.supports_python(">=3.12.4", "3.12.3") and pins.supports_python(">=3.12.1", "3.12.3")


@pytest.mark.parametrize("a, b, order", [
    ("3.12.3-1", "3.12.3-1ubuntu0.17", -1),
    ("3.12.3-0ubuntu2.1", "3.12.3-0ubuntu1", 1),
    ("1:2.43.0-1ubuntu7", "2.99", 1),  # the epoch wins
    ("1.0~rc1-1", "1.0-1", -1),  # ~ sorts before the end
    ("24.0+dfsg-1ubuntu1.3", "24.0+dfsg-1ubuntu1.3", 0),
    ("3.11.2-6+deb12u8", "3.11.2-6+deb12u9", -1),
    ("0.3.8+ds-1", "0.3.8+ds-1ubuntu0.20.04.1", -1),
])
def test_debian_version_order(a, b, order):
    assert apt_index.compare_versions(a, b) == order
    assert apt_index.compare_versions(b, a) == -order


PACKAGES = {
    "noble": "Package: python3.12\nVersion: 3.12.3-1\n\nPackage: git\nVersion: 1:2.43.0-1ubuntu7\n",
    "noble-updates": "Package: python3.12\nVersion: 3.12.3-1ubuntu0.17\n",
}


class Archive(Offline):
    """An apt archive of two suites (the indexes as recorded text)."""

    def unreachable(self, url, apt=False):
        return None

    def get(self, url, accept=None, method="GET", apt=False):
        for suite, text in PACKAGES.items():
            if f"/dists/{suite}/main/binary-amd64/Packages.gz" in url:
                return gzip.compress(text.encode())
        raise web.HttpStatus(url, 404)


def _release_with_apt(pins):
    from ngcbuild.manifest.model import AptSource

    release = load_release(Project.at(REPO), "25.12").release
    os_ = release.os.model_copy(update={"apt_sources": [AptSource(url="http://archive.example/ubuntu",
                                                                  suites=["noble", "noble-updates"])]})
    python = release.python.model_copy(update={"apt_packages": pins, "builder_apt_packages": {}})
    builder = release.builder.model_copy(update={"apt_packages": {}})
    return release.model_copy(update={"os": os_, "python": python, "builder": builder})


def test_an_apt_pin_older_than_the_archives_update_fails_as_a_downgrade():
    release = _release_with_apt({"python3.12": "3.12.3-1", "libnccl2": "2.28.9-1+cuda13.0"})
    rows = {r.name: r for r in apt.apt_rows(release, "linux/amd64", Archive())}
    assert rows["python3.12"].status == report.FAILED
    assert "older than 3.12.3-1ubuntu0.17 in noble-updates" in rows["python3.12"].reason
    # not Ubuntu's: from NVIDIA's repository, which verify does not read
    assert rows["libnccl2"].status == report.NOT_VERIFIED


def test_an_apt_pin_that_is_the_newest_verifies_and_a_missing_one_fails():
    release = _release_with_apt({"python3.12": "3.12.3-1ubuntu0.17", "git": "1:2.43.0-1ubuntu6"})
    rows = {r.name: r for r in apt.apt_rows(release, "linux/amd64", Archive())}
    assert rows["python3.12"].status == report.VERIFIED and "noble-updates" in rows["python3.12"].reason
    assert rows["git"].status == report.FAILED and "not in the archive" in rows["git"].reason


def test_a_buildable_release_without_glibc_is_bad_input(scratch):
    scratch.copy_release("dev", "r1")
    scratch.manifest("r1", (REPO / "manifests" / "dev.yaml").read_text() + "os:\n  glibc: null\n")
    loaded = load_release(Project.at(scratch.root), "r1")
    with pytest.raises(ManifestError, match=r"r1.yaml: os.glibc: required by verify"):
        run.verify_release(loaded, Offline(), ["https://pypi.org/simple"])


def test_a_conda_release_without_the_interpreters_full_version_is_bad_input(scratch):
    scratch.copy_release("20.12", "r2")
    text = (REPO / "manifests" / "20.12.yaml").read_text()
    scratch.manifest("r2", "\n".join(line for line in text.splitlines() if "full_version:" not in line) + "\n")
    (scratch.root / "manifests" / "parts" / "ngc-20.yaml").write_text(
        (REPO / "manifests" / "parts" / "ngc-20.yaml").read_text())
    loaded = load_release(Project.at(scratch.root), "r2")
    with pytest.raises(ManifestError, match=r"r2.yaml: python.full_version: required by verify"):
        run.verify_release(loaded, Offline(), ["https://pypi.org/simple"])


class _Index:
    """A local index that answers every request with one status and body (500, or garbage)."""

    def __init__(self, status: int, body: bytes):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the standard library's name
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_HEAD(self):  # noqa: N802
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://user:s3cr3t-index@127.0.0.1:{self.server.server_address[1]}/simple"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


GARBAGE = [(500, b"Internal Server Error"), (200, b"[1, 2, 3]"), (200, b'{"files": "not a list"}'),
           (200, b'{"files": [7]}'), (200, b'{"files": [{"filename": "x-1.tar.gz"}]}'), (200, b"\xff\xfe not json")]
GARBAGE_IDS = ["500", "a-list", "files-a-string", "files-of-numbers", "file-without-url", "not-json"]


@pytest.mark.parametrize("status,body", GARBAGE, ids=GARBAGE_IDS)
def test_an_index_answering_500_or_garbage_is_one_message_without_its_password(status, body):
    from ngcbuild.verify.index import Pages

    index = _Index(status, body)
    try:
        with pytest.raises(report.OperationError) as caught:
            Pages(web.Web(environ={})).files(index.url, "numpy")
    finally:
        index.close()
    assert "s3cr3t-index" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)


def _two_pins_of_dev_on(index_url, monkeypatch):
    loaded = load_release(Project(REPO), "dev")
    release = loaded.release
    # two pins, and the broken index the only one (no extra index reached over the network)
    release = release.model_copy(update={"pip": release.pip.model_copy(update={"extra_index_urls": []})})
    return dataclasses.replace(loaded, release=release,
                               constraints=dataclasses.replace(loaded.constraints, pins=loaded.constraints.pins[1:3]))


@pytest.mark.parametrize("status,body", GARBAGE[:2], ids=GARBAGE_IDS[:2])
def test_verify_prints_its_table_when_an_index_answers_500_or_garbage(monkeypatch, tmp_path, status, body):
    """Every pin becomes "not verified" with the reason; the closure and the pip check prediction too,
    never "failed" (nothing was found missing) nor "verified"; the index's password never shown."""
    index = _Index(status, body)
    loaded = _two_pins_of_dev_on(index.url, monkeypatch)
    target = Target("3.11.2", "linux/amd64", "2.36")
    try:
        rows = run._python_rows(loaded, [target], [index.url], web.Web(environ={}), Work(), tmp_path)
    finally:
        index.close()
    # the module row of torch: no wheel could be read, so not verified, saying what the suite accepts
    assert [r.kind for r in rows] == ["pip", "pip", "closure", "pip-check", "module"], rows
    assert all(r.status == report.NOT_VERIFIED for r in rows), rows
    assert all("s3cr3t-index" not in r.reason for r in rows), rows
    pip_rows = rows[:2]
    assert all("***@127.0.0.1" in r.reason for r in pip_rows), rows
    # the host answered, so no pin row stops at "unreachable"
    assert not any("unreachable" in r.reason for r in pip_rows), rows


class _Sources:
    """The indexes as the closure sees them when each pin's metadata is already read: nothing else to find."""

    reachable, unreachable = ["https://pypi.example/simple"], {}

    def read_listings(self, names):
        pass

    def choose(self, name, specifier, target):
        return None

    def read_metadata(self, files):
        pass


def _chosen(*items):
    from ngcbuild.verify.metadata import Metadata
    from ngcbuild.verify.pins import Chosen

    return {n: Chosen(n, v, None, Metadata(n, v, tuple(r), "", None, "test")) for n, v, r in items}


REQUESTS = [("requests", "2.32.5", ["charset_normalizer<4,>=2", "idna<4,>=2.5", "urllib3<3,>=1.21.1",
                                    "certifi>=2017.4.17", 'PySocks!=1.5.7,>=1.5.6; extra == "socks"']),
            ("certifi", "2025.11.12", []), ("charset-normalizer", "3.4.4", []), ("idna", "3.11", [])]


def _closure(release_name, *items):
    from ngcbuild.manifest.constraints import Pin

    loaded = load_release(Project(REPO), release_name)
    pins_ = tuple(Pin(n, v, i) for i, (n, v, _) in enumerate(items))
    loaded = dataclasses.replace(loaded, constraints=dataclasses.replace(loaded.constraints, pins=pins_))
    target = Target("3.11.2", "linux/amd64", "2.36")
    return closure_check.closure_row(loaded, target, _Sources(), _chosen(*items))


def test_closure_verdicts_for_system_and_conda_pythons():
    row = _closure("dev", *REQUESTS)
    assert row.status == report.FAILED
    assert row.reason.startswith("5 distributions needed on linux/amd64; 1 not pinned: urllib3 (required by "
                                 "requests)"), row
    # 20.12's Miniconda brings distributions of its own that verify does not read: urllib3 may be one
    row = _closure("20.12", *REQUESTS)
    assert row.status == report.NOT_VERIFIED
    assert "unless the conda environment (Miniconda3-py38_4.9.2-Linux-x86_64.sh) carries them" in row.reason, row


def test_a_closed_set_verifies_and_an_excluded_pin_fails_naming_both_versions():
    closed = _closure("dev", *REQUESTS, ("urllib3", "2.5.0", []))
    assert (closed.status, closed.reason) == (report.VERIFIED, "5 distributions, all pinned")
    excluded = _closure("dev", *REQUESTS, ("urllib3", "1.21", []))
    assert excluded.status == report.FAILED
    assert "requests 2.32.5 requires urllib3<3,>=1.21.1, pinned urllib3==1.21" in excluded.reason, excluded
