"""Every broken input of the corpus, through `invoke` in a subprocess, as a user would meet it:
one line naming the file, the key and what was expected; exit status 2; no traceback; nothing
rendered; the engine never contacted, so nothing built or pushed."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from ..conftest import ScratchProject
from ..helpers import SentinelEngine
from .corpus import load_cases
from .zygote import Zygotes, zygote_env

pytestmark = pytest.mark.reliability

CASES = load_cases()


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory):
    engine = SentinelEngine(tmp_path_factory.mktemp("sentinel") / "engine.sock")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def outcomes(sentinel, tmp_path_factory):
    """Every case through `invoke build` and `invoke push`, several at a time, each command a child
    forked from a zygote that imported invoke and ngcbuild once (zygote.py: what a fresh `python -m
    invoke` process is when the module starts, without a second of start-up per command)."""
    zygotes = Zygotes(zygote_env())
    env = {**zygote_env(), "DOCKER_HOST": f"unix://{sentinel.path}"}

    def run(case):
        root = tmp_path_factory.mktemp(case.name)
        project = ScratchProject(root / "project")
        case.materialize(project.root)
        results = {}
        for command, argv in (("build", ("build", "--release", case.release_arg)),
                              ("push", ("push", "--release", case.release_arg, "--registry", "127.0.0.1:9"))):
            status, out, err = zygotes.run("invoke", list(argv), [str(project.root)], env, root, 300)
            results[command] = Ran(status, out, err)
        return project, results

    try:
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            return dict(zip((case.name for case in CASES), pool.map(run, CASES), strict=True))
    finally:
        zygotes.close()


@dataclass(frozen=True)
class Ran:
    returncode: int | None
    stdout: str
    stderr: str


def test_the_corpus_is_big_and_varied():
    assert len(CASES) >= 40
    assert {case.kind for case in CASES} == {"manifest", "constraints"}
    assert len({(case.kind, case.source.read_bytes()) for case in CASES}) == len(CASES), "two cases are the same"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_broken_input_is_one_clean_message(case, outcomes, sentinel, figures):
    project, runs = outcomes[case.name]
    prefix = f"ngcbuild: {case.file}: " + (f"{case.key}: " if case.key else "")
    for command, result in runs.items():
        message = result.stderr.strip()
        traceback = "Traceback" in result.stderr + result.stdout
        clean = (result.returncode == 2 and not traceback and "\n" not in message and not result.stdout
                 and message.startswith(prefix) and all(part in message for part in case.expect))
        figures(suite="corpus", case=f"{case.name} ({command})", input=case.name, clean=clean, traceback=traceback,
                exit_status=result.returncode, message=message[:300])
        assert not traceback, result.stderr
        assert result.returncode == 2, f"{command}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        assert message.startswith(prefix), f"{command}: {message!r} does not start with {prefix!r}"
        for part in case.expect:
            assert part in message, f"{command}: {part!r} not in {message!r}"
        assert "\n" not in message and not result.stdout, f"{command}: more than one line:\n{result.stdout}{message}"
    assert not (project.root / "build").exists(), "something was rendered"
    assert sentinel.connections == 0, "the engine was contacted"
