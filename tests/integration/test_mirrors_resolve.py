"""`resolve` of a team and `verify` of dev through devpi-server's mirror of PyPI and Debian's apt-cacher-ng
(tests/integration/mirrors.py), real servers on the loopback, as issue 55 asks: the lock names the
mirror (without a login) and every file it pins was listed by the mirror; verify reads every pin's wheel
through it (devpi answers a range request with the whole file) and the apt archives through the cache.
A team read "as of a day" is refused in one line there: devpi gives no upload times (PEP 700)."""

from __future__ import annotations

import pytest

from ..conftest import REPO, ScratchProject, run_command
from .mirrors import Mirrors, torch_wheelhouse

pytestmark = [pytest.mark.network, pytest.mark.mirrors]

TEAM = "manifests/derived/team-vision.yaml"


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory, pypi):
    started = Mirrors(tmp_path_factory.mktemp("mirrors"))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def team(tmp_path) -> ScratchProject:
    """dev and team-vision in a copy of the project; torch from the wheelhouse, the rest from the mirror."""
    torch_wheelhouse()
    project = ScratchProject(tmp_path / "project")
    project.copy_release("dev")
    for path in (TEAM, "requirements/team-vision.txt"):
        (project.root / path).parent.mkdir(parents=True, exist_ok=True)
        (project.root / path).write_bytes((REPO / path).read_bytes())
    return project


def test_a_team_resolves_through_the_mirror_and_its_lock_names_it(mirrors, team):
    manifest = team.root / TEAM
    as_of = manifest.read_text()
    assert "index_as_of:" in as_of
    argv = ("resolve", "--release", "team-vision", "--index-url", mirrors.pypi.url)

    dated = run_command("ngcbuild", *argv, cwd=team.root, timeout=600)
    said = (dated.stdout + dated.stderr).strip()
    assert dated.returncode == 1 and "Traceback" not in said, said[-3000:]
    assert "gives no upload time" in said.splitlines()[-1] and "conflict" not in said, said[-3000:]
    assert not (team.root / "constraints" / "team-vision.lock").exists()

    manifest.write_text("".join(line for line in as_of.splitlines(keepends=True)
                                if not line.strip().startswith("index_as_of:")))
    done = run_command("ngcbuild", *argv, cwd=team.root, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    lock = (team.root / "constraints" / "team-vision.lock").read_text()
    assert f"# index: {mirrors.pypi.url}" in lock
    pinned = [line.split("==")[0].strip() for line in lock.splitlines() if "==" in line and not line.startswith("#")]
    assert pinned, lock
    asked = mirrors.pypi.text()
    for name in pinned:  # every distribution the lock adds was listed by the mirror
        assert f"GET /root/pypi/+simple/{name.lower()}/" in asked.replace("_", "-"), name


def test_verify_reads_every_pin_through_the_mirror_and_the_apt_lists_through_the_cache(mirrors):
    done = run_command("ngcbuild", "verify", "--release", "dev", "--json", "--index-url", mirrors.pypi.url,
                       "--apt-proxy", mirrors.apt.proxy, cwd=REPO, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    import json

    rows = json.loads(done.stdout)["rows"]
    pins = [r for r in rows if r["kind"] == "pip" and r["name"] != "torch"]  # torch+cpu is on no index we mirror
    assert pins and all(r["status"] == "verified" and mirrors.pypi.url in r["reason"] for r in pins), pins
    served = mirrors.pypi.files_served()
    for row in pins:  # read whole through devpi, which ignores Range
        assert any(f.lower().replace("_", "-").startswith(f"{row['name']}-{row['pin']}-") for f in served), row
    apt = [r for r in rows if r["kind"] == "apt"]
    assert apt and all(r["status"] == "verified" for r in apt), apt
    assert any(path.endswith("/Packages.xz") or path.endswith("/InRelease") for path in mirrors.apt.files_served())
