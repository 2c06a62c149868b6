"""The locked pytest of each image's Python: resolved by the one resolver with markers evaluated for the target, the lock files, the
hash-verified cache under build/ and the unpacking of pure wheels."""

import hashlib
import io
import shutil
import zipfile
from pathlib import Path

import pytest

from ngcbuild.core.errors import OperationError, SmokeFailed, UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.smoke import pytest_lock
from ngcbuild.smoke.pytest_lock import Pin, lock_path, read_lock
from ngcbuild.smoke.staging import CACHE_DIR, stage_pytest, unpack_wheel

from ..conftest import IN_CI
from ..fake_index import FakeIndex, Wheel, wheel

REPO = Path(__file__).resolve().parents[2]

# What pytest 7.x/8.x declare (Requires-Dist): the markers decide what each Python needs.
PYTEST_REQUIRES = [
    "iniconfig", "packaging", "pluggy<2,>=1.5",
    'exceptiongroup>=1.0.0rc8; python_version < "3.11"',
    'tomli>=1; python_version < "3.11"',
    'importlib-metadata>=0.12; python_version < "3.8"',
    'colorama; sys_platform == "win32"',
    'pygments>=2.7.2; extra == "dev"',
]
PYTEST_LIKE = [Wheel("pytest", "8.4.0", PYTEST_REQUIRES), Wheel("iniconfig", "2.0.0"), Wheel("packaging", "25.0"),
               Wheel("pluggy", "1.6.0"), Wheel("exceptiongroup", "1.3.0"), Wheel("tomli", "2.2.1"),
               Wheel("importlib-metadata", "6.7.0"), Wheel("colorama", "0.4.6"), Wheel("pygments", "2.19.1")]


@pytest.fixture(scope="module")
def pytest_index():
    with FakeIndex() as index:
        index.add_wheels(*PYTEST_LIKE)
        yield index


@pytest.mark.parametrize("python,root,extra", [
    ("3.6", "pytest", {"exceptiongroup", "tomli", "importlib-metadata"}),
    ("3.8", "pytest", {"exceptiongroup", "tomli"}),
    ("3.12", "pytest[dev]", {"pygments"}),  # an extra asked for brings its requirements
])
def test_markers_are_evaluated_for_the_image_python_not_this_one(pytest_index, python, root, extra):
    pins = pytest_lock.resolve(python, roots=(root,), log=io.StringIO(), indexes=[pytest_index.url])
    assert {p.name for p in pins} == {"pytest", "iniconfig", "packaging", "pluggy"} | extra


def test_every_buildable_release_has_a_lock_for_its_python():
    project = Project.at(REPO)
    for name in buildable_releases(project):
        python = load_release(project, name).release.python.version
        pins = {p.name: p.version for p in read_lock(python)}
        assert "pytest" in pins, f"{lock_path(python)} pins no pytest"


def test_python_3_6_gets_the_last_pytest_for_it_and_its_backports():
    pins = {p.name: p.version for p in read_lock("3.6")}
    assert pins["pytest"].startswith("7.0.") and {"importlib-metadata", "zipp"} <= set(pins)
    pins38 = {p.name: p.version for p in read_lock("3.8")}
    assert {"exceptiongroup", "tomli"} <= set(pins38) and "importlib-metadata" not in pins38
    assert not {"exceptiongroup", "tomli"} & {p.name for p in read_lock("3.12")}


def test_a_missing_or_broken_lock_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(pytest_lock, "LOCKS_DIR", tmp_path)
    with pytest.raises(UserError, match=r"no pytest lock for Python 3.6 .*python -m ngcbuild.smoke.pytest_lock 3.6"):
        read_lock("3.6.15")
    (tmp_path / "pytest-py3.6.txt").write_text("# header\npytest>=7\n")
    with pytest.raises(UserError, match=r"pytest-py3.6.txt:2: expected `name==version --hash=sha256"):
        read_lock("3.6")
    with pytest.raises(UserError, match="not a Python 3 version"):
        read_lock("python3")


def _wheel(path: Path, files: dict) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_unpack_keeps_the_dist_info_and_refuses_data_folders(tmp_path):
    good = _wheel(tmp_path / "a-1.0-py3-none-any.whl", {"a/__init__.py": "x = 1\n", "a-1.0.dist-info/METADATA": "Name: a\n"})
    unpack_wheel(good, tmp_path / "site")
    assert (tmp_path / "site" / "a" / "__init__.py").read_text() == "x = 1\n"
    assert (tmp_path / "site" / "a-1.0.dist-info" / "METADATA").is_file()
    bad = _wheel(tmp_path / "b-1.0-py3-none-any.whl", {"b-1.0.data/scripts/run": "#!/bin/sh\n"})
    with pytest.raises(SmokeFailed, match=r"not a plain pure-Python wheel \(b-1.0.data/scripts/run\)"):
        unpack_wheel(bad, tmp_path / "site")
    evil = _wheel(tmp_path / "c-1.0-py3-none-any.whl", {"../c.py": ""})
    with pytest.raises(SmokeFailed, match="not a plain"):
        unpack_wheel(evil, tmp_path / "site")


def _offline(monkeypatch, tmp_path):
    """pip may reach no index and no wheelhouse."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheelhouse"))
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)


def test_a_wheel_changed_in_the_cache_is_not_used(tmp_path, monkeypatch):
    """Stage once (from PyPI or the cache of an earlier run), then alter a cached wheel: offline, the
    next staging refuses it instead of unpacking it; the altered file is removed from the cache."""
    build = tmp_path / "build"
    shared = REPO / "build" / CACHE_DIR / "py3.6"
    if shared.is_dir():
        shutil.copytree(shared, build / CACHE_DIR / "py3.6")
    try:
        stage_pytest(tmp_path / "first", "3.6", build)
    except SmokeFailed as exc:
        if IN_CI:
            raise
        pytest.skip(f"the locked wheels cannot be fetched here: {exc}")
    assert (tmp_path / "first" / "pytest-7.0.1.dist-info").is_dir()
    wheel = next((build / CACHE_DIR / "py3.6").glob("pluggy-*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    _offline(monkeypatch, tmp_path)
    with pytest.raises(SmokeFailed, match=r"could not fetch the locked pytest wheels for Python 3.6"):
        stage_pytest(tmp_path / "second", "3.6", build)
    assert not wheel.exists() and not (tmp_path / "second").exists()


def test_nothing_cached_and_nothing_reachable_is_a_clear_failure(tmp_path, monkeypatch):
    _offline(monkeypatch, tmp_path)
    with pytest.raises(SmokeFailed, match=r"the index https://pypi.org/simple, or a wheelhouse in PIP_FIND_LINKS, "
                                          r"must serve them") as info:
        stage_pytest(tmp_path / "target", "3.8", tmp_path / "build")
    assert "Traceback" not in str(info.value)


def test_the_smoke_suites_fetch_follows_the_one_index_rule_and_never_shows_a_login(tmp_path, monkeypatch):
    """$UV_INDEX_URL before $PIP_INDEX_URL, as every step reads them; the login of the URL is in no message."""
    _offline(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_INDEX_URL", "https://pip.invalid/simple")
    monkeypatch.setenv("UV_INDEX_URL", "https://alice:s3cret-pw@uv.invalid/simple")
    with pytest.raises(SmokeFailed, match=r"the index https://\*\*\*@uv.invalid/simple \(from \$UV_INDEX_URL\)") as info:
        stage_pytest(tmp_path / "target", "3.8", tmp_path / "build")
    assert "s3cret-pw" not in str(info.value) and "alice" not in str(info.value)


def test_resolve_evaluates_markers_for_the_target_with_the_resolver_choosing_versions():
    """The one resolver (uv) chooses for the image's Python: pip alone (markers of the running 3.11)
    would drop the backport a 3.6 image needs."""
    with FakeIndex() as index:
        index.add_wheels(Wheel("runner", "2.0", ["helper>=1", 'backport>=1; python_version < "3.8"'],
                               requires_python=">=3.8"),
                         Wheel("runner", "1.0", ["helper>=1", 'backport>=1; python_version < "3.8"']),
                         Wheel("helper", "1.5"), Wheel("helper", "1.2"),
                         Wheel("backport", "1.1", ["helper<1.5"]))  # narrows helper for the target that needs it
        log = io.StringIO()
        old = {p.name: p.version for p in pytest_lock.resolve("3.6", roots=("runner",), log=log, indexes=[index.url])}
        assert old == {"runner": "1.0", "helper": "1.2", "backport": "1.1"}
        new = {p.name: p.version for p in pytest_lock.resolve("3.11", roots=("runner",), log=log, indexes=[index.url])}
        assert new == {"runner": "2.0", "helper": "1.5"}
        assert "python 3.6: backport==1.1, helper==1.2, runner==1.0" in log.getvalue()


def test_each_pin_is_the_sha256_of_its_pure_wheel_and_a_platform_wheel_alone_is_refused():
    with FakeIndex() as index:
        index.add_wheels(Wheel("runner", "1.0", ["native"]), Wheel("native", "1.0", tag="cp36-cp36m-manylinux1_x86_64"))
        pure_name, pure = wheel("both", "1.0")
        index.add(pure_name, pure)
        index.add(*wheel("both", "1.0", tag="cp36-cp36m-manylinux1_x86_64"))
        (pin,) = pytest_lock.resolve("3.6", roots=("both",), log=io.StringIO(), indexes=[index.url])
        assert pin == Pin("both", "1.0", (hashlib.sha256(pure).hexdigest(),))
        with pytest.raises(OperationError, match=r"native==1.0: the resolver chose it for Python 3.6, but no index "
                                                 r"lists a pure-Python wheel of it"):
            pytest_lock.resolve("3.6", roots=("runner",), log=io.StringIO(), indexes=[index.url])
