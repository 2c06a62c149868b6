"""A package index that misbehaves on purpose, as verify meets it (tests/fake_index.py on the loopback):
a metadata file whose hash is not the index's, range answers that lie about their bytes or ignore the
Range header, a METADATA of many megabytes, project pages trickled a byte at a time or declaring 10 GB
or of the wrong shape, source archives that are bombs or link out of their folder, a wheel with two
.dist-info folders, metadata naming another distribution. Each through verify's Python rows for a tiny
release whose only index is the hostile one (its address carrying a password): no traceback, within a
time bound, the pin never "verified", the refusal said, the password never shown."""

from __future__ import annotations

import io
import random
import tarfile
import time
import zipfile
from dataclasses import dataclass
from typing import Callable

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.verify import run
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web

from ..conftest import ScratchProject
from ..fake_index import FakeIndex, metadata_text, sdist, wheel

pytestmark = pytest.mark.reliability

SECRET = "s3cr3t-1ndex"
DEADLINE_S = 2  # each read's; the fake pages trickle for far longer
TIME_BOUND_S = 30
MANIFEST = """\
extends: parts/debian-bookworm
summary: a tiny release reading one hostile index
pip:
  constraint_file: true
"""
PLATFORM_TAG = "cp311-cp311-manylinux_2_17_x86_64"
NOISE = random.Random(7).randbytes(3_000_000)  # 3 MB to read past (incompressible)


def _two_dist_infos() -> tuple[str, bytes]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for folder in ("demo-1.0.dist-info", "other-1.0.dist-info"):
            archive.writestr(f"{folder}/METADATA", metadata_text("demo", "1.0"))
            archive.writestr(f"{folder}/WHEEL", "Wheel-Version: 1.0\nTag: py3-none-any\n")
    return "demo-1.0-py3-none-any.whl", buffer.getvalue()


def _tar_of(*members: tarfile.TarInfo) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() and member.size < 100 else None)
    return buffer.getvalue()


def _member(name: str, size: int = 1, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
    else:
        info.size = size
    return info


def _bomb() -> tuple[str, bytes]:
    """A source archive whose second member says it is 1 TB (its header is read, its body never)."""
    import gzip

    first, huge = _member("demo-1.0/PKG-INFO", 10), _member("demo-1.0/huge", 1 << 40)
    blocks = first.tobuf() + b"x" * 10 + b"\0" * 502 + huge.tobuf() + b"\0" * 1024  # a header promising 1 TB, no body
    return "demo-1.0.tar.gz", gzip.compress(blocks)


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[FakeIndex], None]
    says: str  # what the pin's row (or the prediction) must say


def _plain(fake, **misbehaviour):
    fake.add(*wheel("demo", "1.0", tag=PLATFORM_TAG, body=NOISE))
    for key, value in misbehaviour.items():
        setattr(fake.misbehaviour, key, value)


def _over_the_read(fake):
    from ngcbuild.verify.remote_zip import MAX_READ

    fake.add(*wheel("demo", "1.0", tag=PLATFORM_TAG, body=random.Random(8).randbytes(MAX_READ + (1 << 20))))
    fake.misbehaviour.ignore_range = True


CASES = [
    Case("metadata-file-hash-mismatch", lambda f: (f.add(*wheel("demo", "1.0"), serve_metadata=True),
                                                   setattr(f.misbehaviour, "metadata_hash", True)), "refused"),
    Case("range-answer-lies-about-its-bytes", lambda f: _plain(f, lie_content_range=True), "the answer says bytes"),
    # a server that ignores Range gets the file read whole (devpi's mirror does: a control in
    # tests/unit/test_verify_reads.py), within the read's bound: a larger file is refused, not downloaded
    Case("range-header-ignored-file-over-the-read", lambda f: _over_the_read(f), "ignores range requests"),
    Case("range-answer-trickled", lambda f: _plain(f, trickle_files_s=0.05), "no whole answer within"),
    Case("metadata-of-many-megabytes",
         lambda f: f.add(*wheel("demo", "1.0", metadata=metadata_text("demo", "1.0", description="x" * (5 << 20)))),
         "over the"),
    Case("metadata-of-another-distribution",
         lambda f: f.add(*wheel("demo", "1.0", metadata=metadata_text("evil", "6.6"))), "refused"),
    Case("wheel-with-two-dist-info-folders", lambda f: f.add(*_two_dist_infos()), "2 .dist-info folders"),
    Case("project-page-trickled", lambda f: (f.add(*wheel("demo", "1.0")), setattr(f.misbehaviour, "trickle_s", 0.05)),
         "no whole answer within"),
    Case("project-page-declares-10-gb", lambda f: (f.add(*wheel("demo", "1.0")),
                                                    setattr(f.misbehaviour, "huge_pages", True)), "over the"),
    Case("project-page-of-the-wrong-shape", lambda f: (f.add(*wheel("demo", "1.0")),
                                                        setattr(f.misbehaviour, "page_body", b'{"files": {"a": 1}}')),
         "not a PEP 691 project page"),
    Case("project-page-nested-deep", lambda f: (f.add(*wheel("demo", "1.0")), setattr(
        f.misbehaviour, "page_body", b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")), "nested deeper than"),
    Case("source-archive-bomb", lambda f: f.add(*_bomb()), "bytes unpacked"),
    Case("source-archive-links-out", lambda f: f.add("demo-1.0.tar.gz", _tar_of(
        _member("demo-1.0/PKG-INFO", 10), _member("demo-1.0/setup.py", link="../../../etc/passwd"))),
         "links out of the archive"),
    Case("source-archive-backend-fails", lambda f: f.add("demo-1.0.tar.gz", _broken_backend()),
         "its build backend failed"),
]


def _broken_backend() -> bytes:
    return _with_backend(sdist("demo", "1.0", ["x"])[1], lambda _: b"raise SystemExit('a backend that fails at import')\n")


def _with_backend(data: bytes, backend) -> bytes:
    """A copy of the source archive `data` whose backend.py is `backend(its text)`."""
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive}
    members["demo-1.0/backend.py"] = backend(members["demo-1.0/backend.py"])
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_index_is_refused_never_verified(case, tmp_path, monkeypatch, figures):
    fake = FakeIndex()
    project = ScratchProject(tmp_path / "project")
    project.manifest("tiny", MANIFEST)
    project.constraints("tiny", "demo==1.0\n")
    index = fake.url.replace("http://", f"http://ops:{SECRET}@")
    case.setup(fake)
    loaded = load_release(Project.at(project.root), "tiny")
    target = Target(loaded.release.python.interpreter_version, "linux/amd64", loaded.release.os.glibc)
    started = time.monotonic()
    error = None
    try:
        rows = run._python_rows(loaded, [target], [index], Web(environ={}, deadline_s=DEADLINE_S), Work(),
                                tmp_path / "s")
    except Exception as exc:  # noqa: BLE001 - a traceback is what the case must not produce
        rows, error = [], exc
    finally:
        fake.close()
    seconds = time.monotonic() - started
    text = " | ".join(f"{r.kind}: {r.status}: {r.reason}" for r in rows)
    pin = [r for r in rows if r.kind == "pip"]
    problems = []
    if error is not None:
        problems.append(f"raised {type(error).__name__}: {error}")
    if seconds > TIME_BOUND_S:
        problems.append(f"took {seconds:.0f}s")
    if SECRET in text:
        problems.append("the index's password shown")
    if not pin or pin[0].status == "verified":
        problems.append("the pin verified from a hostile index")
    if case.says not in text:
        problems.append(f"no {case.says!r} in: {text[:400]}")
    figures(suite="hostile", case=f"verify-index-{case.name}", input=case.name, klass="hostile index (verify)",
            clean=not problems, traceback=error is not None, hang=seconds > TIME_BOUND_S, secret=SECRET in text,
            leftovers=0, exit_status=None, message="; ".join(problems)[:300])
    assert not problems, problems


DRIVER = """
import os, sys
os.environ["UV_INDEX_URL"] = sys.argv[1]  # the hostile index stands for PyPI (the index setting): nothing else is asked
from ngcbuild.cli import main
main(["ngcbuild", "verify", "--release", "tiny"])
"""


def _sleeping_sdist(pid_file) -> bytes:
    """A source archive whose backend writes its pid, then builds its metadata for a minute."""
    sleep = (f"\nimport os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n").encode()
    return _with_backend(sdist("demo", "1.0", [])[1], lambda backend: backend + sleep)


PROMPT_S = 3.0  # an interrupt ends verify at once: its stuck worker would hold it 60 s (a busy CI machine took 1.2)


@pytest.mark.parametrize("stuck", ["pages", "metadata-build"])
def test_an_interrupt_ends_verify_within_a_second_while_its_workers_wait(stuck, tmp_path, figures):
    """Ctrl-C while verify's worker threads wait on a trickling index, or on a source archive's build:
    exit 130 at once (PROMPT_S), one line, the build's process killed, verify's scratch folder removed."""
    import os
    import signal
    import subprocess
    import sys

    fake = FakeIndex()
    project = ScratchProject(tmp_path / "project")
    project.manifest("tiny", MANIFEST)
    project.constraints("tiny", "demo==1.0\n")
    pid_file = tmp_path / "backend.pid"
    if stuck == "pages":
        fake.add(*wheel("demo", "1.0"))
        fake.misbehaviour.trickle_s = 0.05
    else:
        fake.add("demo-1.0.tar.gz", _sleeping_sdist(pid_file))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen([sys.executable, "-c", DRIVER, fake.url], cwd=project.root, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "TMPDIR": str(scratch)})
    try:
        # started: the build's process runs, or verify's workers have asked the index (its imports done, its
        # interrupt handler in place: a fresh clone compiles every module first, seconds on a busy machine)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not pid_file.exists() if stuck == "metadata-build"
                                               else not fake.requests):
            time.sleep(0.1)
        time.sleep(2)
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        took = time.monotonic() - sent
    finally:
        fake.close()
    backend_alive = False
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
            backend_alive = True
        except ProcessLookupError:
            pass
    left = [p.name for p in scratch.iterdir()]
    problems = [p for p in (f"exit {process.returncode}" if process.returncode != 130 else "",
                            f"took {took:.1f}s" if took > PROMPT_S else "",
                            "a traceback" if "Traceback" in err else "",
                            f"stderr {err.strip()!r}" if err.strip() != "ngcbuild: interrupted" else "",
                            "the build's process outlived verify" if backend_alive else "",
                            f"left in TMPDIR: {left}" if left else "") if p]
    figures(suite="hostile", case=f"verify-interrupted-{stuck}", input=stuck, klass="interrupts (threads)",
            clean=not problems, traceback="Traceback" in err, hang=took > PROMPT_S, secret=False, leftovers=len(left),
            exit_status=process.returncode, message="; ".join(problems)[:300])
    assert not problems, problems
