"""The smoke suite proven to catch broken images: `ngcbuild mutate` plants every defect of the catalogue
(smoke/mutants.yaml) that applies to dev and to cuda-dev in the images the session built, as a user
runs it (a process), and every one must be killed by the check the catalogue names, with a message
that names the defect. Nothing the runs built may be left on the engine, and nothing written outside
build/R/ (the table goes to build/R/mutants.md; `invoke reliability` copies it into RELIABILITY.md)."""

import json

import pytest

from ..conftest import REPO, run_command

pytestmark = pytest.mark.engine


def _mutate(release: str, engine) -> dict:
    project_file = (REPO / "RELIABILITY.md").read_bytes()
    result = run_command("ngcbuild", "mutate", "--release", release, cwd=REPO, timeout=3600)
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"mutate {release} exit {result.returncode}:\n{out[-6000:]}"
    report = json.loads((REPO / "build" / release / "mutants.json").read_text())
    left = engine.images(all=True, quiet=True, filters={"label": f"io.ngcbuild.mutant={report['run_id']}"})
    assert not left, f"mutant images left on the engine: {left}"
    survivors = [m["id"] for m in report["mutants"] if not m["killed"]]
    assert not survivors, f"planted defects no check caught: {survivors}"
    otherwise = {m["id"]: (m["killed_by"], m["expected_killer"], m["message"])
                 for m in report["mutants"] if not m["as_expected"]}
    assert not otherwise, f"killed by another check, or with a message not naming the defect: {otherwise}"
    for mutant in report["mutants"]:  # one progress line each (in the order they finished)
        assert f"/{report['total']}] {mutant['id']}: killed by {mutant['killed_by']}" in result.stdout
    assert (REPO / "RELIABILITY.md").read_bytes() == project_file, "mutate wrote a project file"
    section = (REPO / "build" / release / "mutants.md").read_text()
    assert f"<!-- mutants:{release}:begin -->" in section and report["run_id"] not in section
    assert f"{report['killed']} of {report['total']} planted defects killed (100%)" in section
    return report


def test_every_planted_defect_in_dev_is_killed(dev_build, engine):
    report = _mutate("dev", engine)
    assert report["total"] >= 20, report["total"]


def test_every_planted_defect_in_cuda_dev_is_killed(cuda_dev_build, engine):
    report = _mutate("cuda-dev", engine)
    assert report["total"] >= 30, report["total"]
    killers = {m["id"]: m["killed_by"] for m in report["mutants"]}
    # The defect of the issue: a manifest without cuda_arch_list; only building an extension shows it.
    assert killers["arch-list-forgotten"] == "stack::nvcc_builds_a_cuda_extension"


def test_an_interrupted_mutate_stops_its_workers_and_leaves_nothing(dev_build, engine, figures):
    """Ctrl-C at spread moments of a run: while the first mutants are planted (their thin images being
    built), just after a suite started, and while suites run. The running suites' containers are
    ended, so the workers return at once, and no worker starts a suite once the run stops; the command
    exits 130 with one line, and no container or image of the run (labelled with its id, which holds
    the process id) is left on the engine."""
    import signal
    import subprocess
    import sys
    import time

    def left_by(pid: int) -> int:
        """Containers and images of any run of process `pid` (its run id is dev-PID-TIME)."""
        def mine(item) -> bool:
            return (item.get("Labels") or {}).get("io.ngcbuild.mutant", "").startswith(f"dev-{pid}-")

        labelled = {"label": "io.ngcbuild.mutant"}
        return (sum(map(mine, engine.containers(all=True, filters=labelled)))
                + sum(map(mine, engine.images(all=True, filters=labelled))))

    def suites_running(run_id: str) -> int:
        return len(engine.containers(filters={"label": f"io.ngcbuild.mutant={run_id}"}))

    seen = []
    for moment in ("planting", "a suite starting", "suites running"):
        process = subprocess.Popen([sys.executable, "-m", "ngcbuild", "mutate", "--release", "dev", "--jobs", "2"],
                                   cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   stdin=subprocess.DEVNULL)
        header = ""
        while not header.startswith("mutate: "):  # "mutate: N planted defects in dev (...), 2 at a time; label ...=RUN"
            header = process.stdout.readline()
            assert header, f"mutate ended before it started: {process.stderr.read()[-2000:]}"
        run_id = header.strip().rpartition("=")[2]
        deadline = time.monotonic() + 300
        if moment != "planting":  # planting: at once, while the first thin images are built
            while time.monotonic() < deadline and not suites_running(run_id):
                time.sleep(0.1)
            if moment == "suites running":
                time.sleep(1)
        running = suites_running(run_id)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=300)
        took = time.monotonic() - sent
        left = left_by(process.pid)
        seen.append((moment, running, process.returncode, round(took, 1), left, err.strip()[-300:]))
    bad = [s for s in seen if s[2] != 130 or s[3] >= 30 or s[4] or s[5] != "ngcbuild: interrupted"]
    figures(suite="hostile", case="SIGINT to mutate while planting, as a suite starts, while suites run",
            input="mutate", klass="interrupts in threaded work", clean=not bad,
            traceback=any("Traceback" in s[5] for s in seen), hang=any(s[3] >= 300 for s in seen), secret=False,
            leftovers=sum(s[4] for s in seen), exit_status=None,
            message="; ".join(f"{m}: {r} suites, exit {code} {took}s after, {left} left" for m, r, code, took, left, _
                              in seen)[:300])
    assert any(s[1] for s in seen[1:]), f"no mutant's suite ran when a signal came: {seen}"
    assert not bad, seen
