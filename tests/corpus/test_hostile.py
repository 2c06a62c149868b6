"""The hostile inputs of hostile.py through `invoke`, each in its own scratch project with its own
sentinel engine: the exit status it must have, no traceback, no hang, no secret echoed, no
leftover, the engine never contacted."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..helpers import SentinelEngine
from .hostile import cases, cleanup, judge, run_case
from .zygote import Zygotes, zygote_env

pytestmark = pytest.mark.reliability

CASES = cases()


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory):
    # Only the cases this session runs (`-k extends-chain` runs a few, not all of them).
    selected = {item.callspec.params["case"].name for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    zygotes = Zygotes(zygote_env())

    def run(case):
        root = tmp_path_factory.mktemp(case.name)
        engine = SentinelEngine(root / "engine.sock")
        try:
            outcome, project, outside = run_case(case, root / "case", engine.path, zygotes)
            problems = judge(case, outcome, project, outside, engine.connections)
        finally:
            engine.close()
            cleanup(root / "case")
        return outcome, problems

    # the slowest first (a case that waits out a deadline), so that no worker is left with it at the end
    chosen = sorted((c for c in CASES if c.name in selected), key=lambda c: -c.time_bound)
    try:
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            return dict(zip((c.name for c in chosen), pool.map(run, chosen), strict=True))
    finally:
        zygotes.close()


def test_every_class_has_several_cases():
    classes = {}
    for case in CASES:
        classes[case.klass] = classes.get(case.klass, 0) + 1
    assert len(classes) >= 6 and min(classes.values()) >= 3, classes


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_is_handled(case, outcomes, figures):
    outcome, problems = outcomes[case.name]
    figures(suite="hostile", case=case.name, input=case.name, klass=case.klass, clean=not problems,
            traceback=outcome.traceback, hang=outcome.hung, secret=any(p.startswith("secret echoed") for p in problems),
            leftovers=sum(p.startswith("leftover") for p in problems), exit_status=outcome.exit_status,
            message="; ".join(problems)[:300])
    assert not problems, problems
