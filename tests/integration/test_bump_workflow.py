"""bump.yml run through act (`ngcbuild rehearse --workflow bump`), in a clone of this checkout that holds
one more release: its distributions live on a local index of their own (a plain-HTTP extra index on the
loopback, names no one publishes on PyPI), so the run's outcome does not move with PyPI. The check says
a newer set exists, the proposal is written and uploaded with its bump.md, and the pull request step is
left out (act cannot reach GitHub). Judged from outside: act's status and the run's artifacts."""

import gzip
import shutil
import subprocess

import pytest

from ..conftest import REPO, run_command
from ..fake_index import FakeIndex, Wheel
from ..helpers import wheel_release_manifest

pytestmark = pytest.mark.workflow

LEADER, DEP = "ngcbuild-test-leader", "ngcbuild-test-needed"


@pytest.fixture
def clone(tmp_path, act):
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    # the stand-ins' installed modules are not tracked: the rehearsal maps the checkout's own
    for action in (REPO / ".ci" / "actions").iterdir():
        if (action / "node_modules").is_dir():
            shutil.copytree(action / "node_modules", target / ".ci" / "actions" / action.name / "node_modules")
    return target


def test_the_scheduled_bump_proposes_and_uploads_its_report(clone):
    with FakeIndex() as served:
        served.add_wheels(Wheel(LEADER, "1.0", [DEP]), Wheel(LEADER, "1.1", [f"{DEP}>=2"]),
                         Wheel(DEP, "1.0"), Wheel(DEP, "2.0"))
        (clone / "manifests" / "fakebump.yaml").write_text(wheel_release_manifest(
            "a release whose two distributions live on a local index, for the rehearsal of bump.yml",
            f"  leader: {LEADER}\n", extra_index_urls=(served.url,)))
        (clone / "constraints" / "fakebump.txt").write_text(f"{LEADER}==1.0\n{DEP}==1.0\n")
        subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
                        "a release to bump"], check=True)
        result = run_command("ngcbuild", "rehearse", "--workflow", "bump", "--releases", "fakebump", "--as",
                             "fakebump-next", cwd=clone, timeout=1200)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    assert "rehearse: bump.yml passed for fakebump" in result.stdout
    assert "open or update the pull request" not in log  # left out: act never reaches GitHub
    assert "propose it, verified, with bump.md" in log
    texts = {}
    for path in (clone / "build" / "rehearse").glob("*/artifacts/*/bump-fakebump-next/**/*"):
        if path.is_file():  # act's artifact server keeps each file gzipped, named NAME.gz__
            data = path.read_bytes()
            texts[path.name.removesuffix(".gz__")] = (gzip.decompress(data) if path.name.endswith(".gz__")
                                                       else data).decode()
    assert set(texts) == {"bump.md", "fakebump-next.yaml", "fakebump-next.txt"}, sorted(texts)
    assert f"# Proposed release fakebump-next: {LEADER} 1.0 → 1.1" in texts["bump.md"]
    assert f"{LEADER}==1.1" in texts["fakebump-next.txt"] and f"{DEP}==2.0" in texts["fakebump-next.txt"]
    assert "extends: fakebump\n" in texts["fakebump-next.yaml"]
    # the clone's own tree is as it was: the job worked on act's copy
    status = subprocess.run(["git", "-C", str(clone), "status", "--porcelain", "--", "manifests", "constraints"],
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
