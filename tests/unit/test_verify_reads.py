"""What verify reads of a package index, against a local index of small fake distributions (a real
HTTP server on the loopback, tests/fake_index.py): a wheel's METADATA and WHEEL by range requests, a
fraction of its bytes; the metadata file the index serves (PEP 658), its hash checked; a source
archive's metadata from a trustworthy PKG-INFO or built with its own PEP 517 backend; which file pip
would choose; the project page's shape. PyPI itself: tests/integration/test_verify.py."""

import hashlib
import json
import random

import pytest

from ngcbuild.verify import finder, index, metadata, sources
from ngcbuild.verify.index import IndexFile, parse_page
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web

from ..fake_index import FakeIndex, metadata_text, sdist, wheel

TARGET = Target("3.12.3", "linux/amd64", "2.39")
NOISE = random.Random(7).randbytes(3_000_000)  # a body to read past (incompressible)


@pytest.fixture
def fake():
    served = FakeIndex()
    yield served
    served.close()


def _file(fake: FakeIndex, name: str, version: str) -> IndexFile:
    files = index.Pages(Web(environ={})).files(fake.url, name)
    return finder.best_file(files, name, f"=={version}", TARGET)


def test_a_wheels_metadata_and_tags_are_read_by_range_a_fraction_of_its_bytes(fake):
    filename, data = wheel("demo", "1.0", ["numpy>=2"], tag="cp312-cp312-manylinux_2_17_x86_64", body=NOISE)
    fake.add(filename, data)
    web = Web(environ={})
    found = metadata.wheel_metadata(_file(fake, "demo", "1.0"), web)
    assert (found.name, found.version, found.requires_dist) == ("demo", "1.0", ("numpy>=2",))
    assert found.tags == ("cp312-cp312-manylinux_2_17_x86_64",) and found.read == "range reads of the wheel"
    ranged = [r for path, r in fake.requests if path.endswith(".whl")]
    assert all(ranged) and len(ranged) <= 3, ranged  # every read a range: never the whole wheel
    assert web.fetched < len(data) / 50, (web.fetched, len(data))


def test_a_day_to_read_the_index_as_of_leaves_out_what_was_uploaded_later(fake, tmp_path):
    """derive.index_as_of (fit --index-as-of): verify lists what the resolver's --exclude-newer sees."""
    fake.add(*wheel("demo", "1.0"), uploaded="2026-11-01T08:00:00.123456Z")
    fake.add(*wheel("demo", "1.1"), uploaded="2026-11-21T00:00:01Z")
    as_of = sources.Sources([fake.url], Web(environ={}), Work(), tmp_path, index_as_of="2026-11-20T23:59:59Z")
    assert [f.filename for f in as_of.listing("demo").files] == ["demo-1.0-py3-none-any.whl"]
    now = sources.Sources([fake.url], Web(environ={}), Work(), tmp_path)
    assert len(now.listing("demo").files) == 2


def test_a_metadata_file_the_index_serves_is_read_instead_its_hash_checked(fake):
    filename, data = wheel("demo", "1.0", ["numpy>=2"])
    fake.add(filename, data, serve_metadata=True)
    file = _file(fake, "demo", "1.0")
    assert file.metadata and file.metadata_sha256
    found = metadata.wheel_metadata(file, Web(environ={}))
    assert found.requires_dist == ("numpy>=2",) and found.read == "its metadata file (PEP 658)"
    assert not [p for p, _ in fake.requests if p.endswith(".whl")]  # a pure wheel: the wheel is not read at all


def test_a_metadata_file_whose_hash_is_not_the_indexs_is_refused(fake):
    filename, data = wheel("demo", "1.0", ["numpy>=2"])
    fake.add(filename, data, serve_metadata=True)
    fake.misbehaviour.metadata_hash = True
    with pytest.raises(metadata.MetadataError, match="sha256 .* is not the .* the index gives for it: refused"):
        metadata.wheel_metadata(_file(fake, "demo", "1.0"), Web(environ={}))


def test_a_range_answer_that_lies_about_its_bytes_is_refused(fake):
    filename, data = wheel("demo", "1.0", tag="cp312-cp312-manylinux_2_17_x86_64", body=NOISE)
    fake.add(filename, data)
    fake.misbehaviour.lie_content_range = True
    with pytest.raises(metadata.MetadataError, match="the answer says bytes"):
        metadata.wheel_metadata(_file(fake, "demo", "1.0"), Web(environ={}))


def test_a_server_ignoring_range_requests_is_read_whole_once_within_the_read_bound(fake):
    """devpi's mirror of PyPI answers every Range with the whole file: the wheel is read once, whole
    (a file over remote_zip.MAX_READ is refused by its Content-Length: tests/corpus/test_hostile_index.py)."""
    filename, data = wheel("demo", "1.0", ["numpy>=2"], tag="cp312-cp312-manylinux_2_17_x86_64", body=NOISE)
    fake.add(filename, data)
    fake.misbehaviour.ignore_range = True
    web = Web(environ={})
    found = metadata.wheel_metadata(_file(fake, "demo", "1.0"), web)
    assert (found.name, found.version, found.requires_dist) == ("demo", "1.0", ("numpy>=2",))
    whole = [r for path, r in fake.requests if path.endswith(".whl") and not r]
    assert len(whole) == 1, fake.requests  # one read without a Range, after the refused tail
    assert len(data) <= web.fetched < len(data) + 100_000


def test_a_huge_metadata_file_is_refused_before_it_is_read(fake):
    huge = metadata_text("demo", "1.0", description="x" * (metadata.MAX_METADATA + 1))
    filename, data = wheel("demo", "1.0", metadata=huge)  # compresses to a few kB
    fake.add(filename, data)
    web = Web(environ={})
    with pytest.raises(metadata.MetadataError, match="METADATA is .* bytes, over the"):
        metadata.wheel_metadata(_file(fake, "demo", "1.0"), web)
    assert web.fetched < 100_000


def test_metadata_of_another_distribution_is_refused(fake):
    filename, data = wheel("demo", "1.0", metadata=metadata_text("other", "2.0"))
    fake.add(filename, data)
    with pytest.raises(metadata.MetadataError, match="says other 2.0, not the file's demo 1.0: refused"):
        metadata.wheel_metadata(_file(fake, "demo", "1.0"), Web(environ={}))


def _reader(tmp_path, fake):
    return sources.SdistReader(Web(environ={}), Work(), tmp_path, [fake.url])


def test_a_trustworthy_pkg_info_is_read_without_building(fake, tmp_path):
    pkg_info = metadata_text("demo", "1.0", ["numpy"], metadata_version="2.2")
    filename, data = sdist("demo", "1.0", ["never-built"], pkg_info=pkg_info)
    fake.add(filename, data)
    found = _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0"))
    assert found.requires_dist == ("numpy",) and "PKG-INFO" in found.read


def test_a_pkg_info_with_dynamic_requirements_is_built_with_its_backend(fake, tmp_path):
    pkg_info = "Metadata-Version: 2.2\nName: demo\nVersion: 1.0\nDynamic: Requires-Dist\n\n"
    filename, data = sdist("demo", "1.0", ["built-dep==1.0"], pkg_info=pkg_info)
    fake.add(filename, data)
    found = _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0"))
    assert found.requires_dist == ("built-dep==1.0",) and "built from the source archive (PEP 517)" in found.read


def test_an_old_pkg_info_is_not_trusted_the_metadata_is_built(fake, tmp_path):
    filename, data = sdist("demo", "1.0", ["built-dep==1.0"])  # Metadata-Version 2.1, no requirements in it
    fake.add(filename, data)
    found = _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0"))
    assert found.requires_dist == ("built-dep==1.0",)


def test_a_source_archive_whose_hash_is_not_the_indexs_is_refused(fake, tmp_path):
    filename, data = sdist("demo", "1.0", [])
    fake.add(filename, data)
    file = _file(fake, "demo", "1.0")
    wrong = IndexFile(file.filename, file.url, file.index, hashlib.sha256(b"other").hexdigest(), "", False, False, None)
    with pytest.raises(metadata.MetadataError, match="its sha256 is not the one the index gives"):
        _reader(tmp_path, fake).metadata(wrong)


def _tar(members):
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _member(name, data=b"", kind=None, target=""):
    import tarfile

    info = tarfile.TarInfo(name)
    if kind:
        info.type, info.linkname = kind, target
    else:
        info.size = len(data)
    return info, data if not kind else None


@pytest.mark.parametrize("members,message", [
    ([_member("demo-1.0/PKG-INFO", b"x"), _member("demo-1.0/evil", kind=b"2", target="/etc/passwd")],
     "links out of the archive"),
    ([_member("demo-1.0/PKG-INFO", b"x"), _member("demo-1.0/evil", kind=b"2", target="../../etc/passwd")],
     "links out of the archive"),
    ([_member("demo-1.0/PKG-INFO", b"x"), _member("demo-1.0/fifo", kind=b"6")], "is not a plain file, folder or link"),
    ([_member("demo-1.0/PKG-INFO", b"x"), _member("demo-1.0/../../outside", b"x")], "would land outside"),
    ([_member("/abs/PKG-INFO", b"x")], "would land outside"),
], ids=["symlink-absolute", "symlink-climbing", "fifo", "climbing", "absolute"])
def test_a_source_archive_with_links_or_paths_out_of_its_folder_is_refused(fake, tmp_path, members, message):
    fake.add("demo-1.0.tar.gz", _tar(members))
    with pytest.raises(metadata.MetadataError, match=message):
        _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0"))
    assert not (tmp_path.parent / "outside").exists()


def test_a_link_inside_a_source_archive_becomes_a_copy(fake, tmp_path):
    """pandocfilters 1.4.3's README.rst is a hard link to its README; its setup.py reads it."""
    filename, data = sdist("demo", "1.0", ["built-dep==1.0"])
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = [(m, archive.extractfile(m).read()) for m in archive]
    members += [_member("demo-1.0/README", b"read me"), _member("demo-1.0/README.rst", kind=tarfile.LNKTYPE,
                                                                  target="demo-1.0/README"),
                _member("demo-1.0/docs.txt", kind=tarfile.SYMTYPE, target="README")]
    fake.add("demo-1.0.tar.gz", _tar(members))
    assert _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0")).requires_dist == ("built-dep==1.0",)
    unpacked = next(tmp_path.glob("sdist-*/src/demo-1.0"))
    assert (unpacked / "README.rst").read_bytes() == (unpacked / "docs.txt").read_bytes() == b"read me"
    assert not (unpacked / "README.rst").is_symlink()


def _files(*names, yanked=()):
    return [IndexFile(n, f"https://f.example/{n}", "https://i.example/simple", None, "", n in yanked, False, None)
            for n in names]


def test_the_file_pip_would_choose():
    files = _files("torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.11.0-cp312-cp312-win_amd64.whl",
                   "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.11.0.tar.gz",
                   "torch-2.11.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                   "torch-2.12.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    # ==2.11.0 admits the local version 2.11.0+cu130, which pip ranks above 2.11.0
    assert finder.best_file(files, "torch", "==2.11.0", TARGET).filename.startswith("torch-2.11.0+cu130-")
    assert finder.best_file(files, "torch", "==2.11.0+cu130", TARGET).filename.startswith("torch-2.11.0+cu130-")
    plain = [f for f in files if "+" not in f.filename]
    # the newest manylinux tag the target takes, before the older one
    assert finder.best_file(plain, "torch", "==2.11.0", TARGET).filename.endswith("manylinux_2_28_x86_64.whl")
    # glibc 2.27 cannot take 2_28: the manylinux2014 wheel, then only the source archive
    old = Target("3.12.3", "linux/amd64", "2.27")
    assert "manylinux2014" in finder.best_file(plain, "torch", "==2.11.0", old).filename
    assert finder.best_file(_files("torch-2.11.0.tar.gz"), "torch", "==2.11.0", old).filename == "torch-2.11.0.tar.gz"
    assert finder.best_file(plain, "torch", "==2.11.0", Target("3.12.3", "linux/arm64", "2.39")).filename == \
        "torch-2.11.0.tar.gz"


def test_a_yanked_file_is_chosen_only_when_nothing_else_fits():
    files = _files("a-1.0-py3-none-any.whl", "a-1.0.tar.gz", yanked=("a-1.0-py3-none-any.whl",))
    assert finder.best_file(files, "a", "==1.0", TARGET).filename == "a-1.0.tar.gz"
    assert finder.best_file(files[:1], "a", "==1.0", TARGET).filename == "a-1.0-py3-none-any.whl"


def test_a_project_page_is_read_for_its_shape():
    page = json.dumps({"files": [
        {"filename": "a-1.0-py3-none-any.whl", "url": "../../f/a-1.0-py3-none-any.whl#sha256=00",
         "hashes": {"sha256": "A" * 64}, "requires-python": ">=3.8", "core-metadata": {"sha256": "b" * 64}},
        {"filename": "a-1.0-py3-none-any.whl", "url": "https://elsewhere/dup.whl"},  # a duplicate: once
        {"filename": "a-0.9.tar.gz", "url": "https://f.example/a-0.9.tar.gz", "yanked": "broken",
         "data-dist-info-metadata": True},
        {"filename": "a-0.8.tar.gz", "url": "file:///etc/passwd"},  # not an address verify reads
    ]}).encode()
    files = parse_page(page, "https://i.example/simple", "https://i.example/simple/a/", "a")
    assert [f.filename for f in files] == ["a-1.0-py3-none-any.whl", "a-0.9.tar.gz"]
    first, second = files
    assert first.url == "https://i.example/f/a-1.0-py3-none-any.whl" and first.sha256 == "a" * 64
    assert (first.metadata, first.metadata_sha256, first.requires_python) == (True, "b" * 64, ">=3.8")
    assert (second.yanked, second.metadata, second.metadata_sha256) == (True, True, None)


def test_a_pep_503_page_gives_the_same_files():
    page = b"""<html><body>
    <a href="../../f/a-1.0-py3-none-any.whl#sha256=""" + b"c" * 64 + b"""" data-requires-python="&gt;=3.8"
       data-core-metadata="sha256=""" + b"d" * 64 + b"""">a-1.0-py3-none-any.whl</a>
    <a href="https://f.example/a-0.9.tar.gz" data-yanked="">a-0.9.tar.gz</a>
    </body></html>"""
    files = index.parse_html_page(page, "https://i.example/simple", "https://i.example/simple/a/", "a")
    first, second = files
    assert (first.filename, first.url, first.sha256) == ("a-1.0-py3-none-any.whl",
                                                         "https://i.example/f/a-1.0-py3-none-any.whl", "c" * 64)
    assert (first.requires_python, first.metadata, first.metadata_sha256) == (">=3.8", True, "d" * 64)
    assert (second.filename, second.yanked, second.metadata) == ("a-0.9.tar.gz", True, False)


def test_nvidias_placeholder_archives_are_named_never_built(fake, tmp_path):
    """DALI 1.52.0 and TensorRT's libraries on PyPI: a stub whose backend sends pip to NVIDIA's index."""
    import io
    import tarfile

    _, data = sdist("demo", "1.0", [])
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = [(m, archive.extractfile(m).read()) for m in archive]
    stub = b'[build-system]\nrequires = ["wheel-stub"]\nbuild-backend = "wheel_stub.buildapi"\n'
    members = [(_member(m.name, stub)[0], stub) if m.name.endswith("pyproject.toml") else (m, body)
               for m, body in members]
    fake.add("demo-1.0.tar.gz", _tar(members))
    with pytest.raises(metadata.MetadataError, match="a placeholder: its build backend wheel_stub.buildapi"):
        _reader(tmp_path, fake).metadata(_file(fake, "demo", "1.0"))
    assert not list(tmp_path.glob("build-env-*"))  # nothing installed for it


def test_a_source_archives_children_get_what_is_left_of_the_runs_deadline(tmp_path):
    """verify's run deadline (resolver/deadline.py) reaches the pip and hook children it starts: each gets its
    own timeout or what is left, whichever is less, and none starts once the deadline has fallen."""
    from ngcbuild.resolver.deadline import Deadline, DeadlinePassed

    reader = sources.SdistReader(Web(environ={}, run_deadline=Deadline(3)), Work(), tmp_path, ["http://127.0.0.1:9/"])
    assert 0 < reader._within(300) <= 3
    assert sources.SdistReader(Web(environ={}), Work(), tmp_path, ["http://127.0.0.1:9/"])._within(300) == 300
    fallen = sources.SdistReader(Web(environ={}, run_deadline=Deadline(0)), Work(), tmp_path, ["http://127.0.0.1:9/"])
    with pytest.raises(DeadlinePassed, match="NGCBUILD_RESOLVER_DEADLINE_S"):
        fallen._within(300)
