"""Run some hostile cases through the same `run_case` and `judge` as test_hostile.py and write each
case's class and problems as JSON: the before/after figures of a round (tests/corpus/*-before.json,
*-after.json). NGCBUILD_CODE_UNDER_TEST=<a checkout>/src runs them against that checkout's code.

    python3 -m tests.corpus.save_outcomes trust OUT.json      # the trust chain's cases (trust.py)
    python3 -m tests.corpus.save_outcomes round5 OUT.json     # issue 43's (every_task.py, round5.py)
"""

from __future__ import annotations

import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .hostile import cleanup, judge, run_case
from .test_corpus import SentinelEngine
from .zygote import Zygotes, zygote_env


def trust() -> list:
    from .trust import trust_cases

    made = []
    trust_cases(made.append)
    return made


def round5() -> list:
    from .every_task import every_task_cases
    from .round5 import round5_cases

    made = []
    every_task_cases(made.append)
    round5_cases(made.append)
    return made


def outcomes(cases: list, workers: int = 4) -> dict:
    zygotes = Zygotes(zygote_env())

    def run(case):
        root = Path(tempfile.mkdtemp(prefix=f"ngcbuild-{case.name}-"))
        engine = SentinelEngine(root / "engine.sock")
        try:
            outcome, project, outside = run_case(case, root / "case", engine.path, zygotes)
            return judge(case, outcome, project, outside, engine.connections)
        finally:
            engine.close()
            cleanup(root)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = dict(zip((c.name for c in cases), pool.map(run, cases), strict=True))
    finally:
        zygotes.close()
    return {c.name: {"klass": c.klass, "problems": found[c.name]} for c in cases}


def main(argv: list[str]) -> int:
    which, out = argv
    results = outcomes({"trust": trust, "round5": round5}[which]())
    Path(out).write_text(json.dumps(results, indent=1, ensure_ascii=True) + "\n")
    short = sum(1 for r in results.values() if r["problems"])
    print(f"{len(results)} cases, {short} fell short")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
