"""The checkout's tasks: every task of the product (`ngcbuild --list`) and the project's own tools,
which work only in a checkout (they run the test suite, write BENCHMARKS.md, RELIABILITY.md and
tests/golden/: the project files no test run and no command of the product writes)."""

import shlex
import sys

from invoke import Collection

import ngcbuild.cli.tasks
from ngcbuild.cli.commands import project, whole_number
from ngcbuild.cli.guard import command


@command(help={"k": "only tests matching this expression", "unit": "unit tests only (no engine)"})
def test(c, k=None, unit=False):
    """The whole test suite (unit + integration against a real engine and registry)."""
    args = ["tests/unit"] if unit else ["tests"]
    if k:
        args += ["-k", k]
    with c.cd(str(project().root)):
        c.run(" ".join(shlex.quote(a) for a in [sys.executable, "-m", "pytest", *args]), pty=False)


@command()
def golden(c):
    """Regenerate tests/golden/<R>/Dockerfile for every buildable release, for review with git diff."""
    from dev.golden import regenerate

    for path in regenerate(project()):
        print(f"wrote {path}")
    print("review the changes with `git diff tests/golden` before committing them")


@command(help={"runs": "runs per timed figure (median and spread; default 3)",
               "registry": "registry HOST[:PORT] for the push-reuse figure (skipped when not given)",
               "release": "dev (every figure) or cuda-dev (cold build, size, one pin, push); its own section",
               "skip_path": "only the unchanged-release figures (seconds): `build` of a built release, as a process",
               "cache": "only the registry-cache figure: a fresh private engine with --cache-from against a cold "
                        "build (needs root); its own section"})
def bench(c, runs=None, registry=None, release="dev", skip_path=False, cache=False):
    """Build speed, cache reuse, image size, render and push figures for `dev` (or cuda-dev), in BENCHMARKS.md."""
    from dev.bench import run_bench

    runs = whole_number(runs, "--runs", default=3, least=1)
    path = run_bench(project(), runs=runs, registry=registry, release=release, skip_path_only=skip_path,
                     cache=cache)
    print(f"figures written to {path}")


@command(help={"from_run": "take the figures the last whole test run left in build/reliability/ instead of "
                           "running the reliability tests again"})
def reliability(c, from_run=False):
    """Refresh RELIABILITY.md: the figures of the reliability tests (the corpus of broken and hostile inputs,
    the fault tests, the secrets scans) and the planted-defect tables `mutate` left in build/R/."""
    from dev.reliability import run_reliability

    run_reliability(project(), out=sys.stdout, from_run=from_run)


namespace = Collection.from_module(ngcbuild.cli.tasks)  # a copy: the product's collection is left as it is
for _task in (test, golden, bench, reliability):
    namespace.add_task(_task)
