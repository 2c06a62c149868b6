"""The checkout's tasks: every task of the product (`ngcbuild --list`) and the project's own tools,
which work only in a checkout (they run the test suite, write BENCHMARKS.md, RELIABILITY.md,
tests/golden/ and docs/tasks.md). Declared in the same table shape as the product's
(ngcbuild/cli/declare.py), under a stage of their own."""

import subprocess
import sys

from invoke.exceptions import Exit

from ngcbuild.cli.collection import collection
from ngcbuild.cli.commands import project, whole_number
from ngcbuild.cli.declare import Option, Renamed, Stage, Task, check_table
from ngcbuild.cli.tasks import STAGES, TASKS

DEVELOP = Stage("develop", "this checkout's own tools (dev/; not in the installed ngcbuild)")


def test(k=None, unit=False) -> None:
    if unit or k:
        args = ["tests/unit"] if unit else ["tests"]
        if k:
            args += ["-k", k]
        ran = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=project().root, check=False)
        if ran.returncode:
            raise Exit(code=ran.returncode)
        return
    from dev.test_run import run_whole_suite

    status = run_whole_suite(project().root, sys.stdout)
    if status:
        raise Exit(code=status)


def golden() -> None:
    from dev.golden import regenerate

    for path in regenerate(project()):
        print(f"wrote {path}")
    print("review the changes with `git diff tests/golden` before committing them")


def reference() -> None:
    from dev.reference import write_reference

    path = write_reference(project(), CHECKOUT_TASKS)
    print(f"wrote {path}; review it with `git diff docs/`")


def bench(runs=None, registry=None, release="dev", skip_path=False, cache=False, verify=None, repro=False,
          layers=False, zstd=False) -> None:
    if zstd:
        from dev.bench_zstd import run_zstd_bench

        path = run_zstd_bench(project(), runs=whole_number(runs, "--runs", default=3, least=1))
        print(f"figures written to {path}")
        return
    if layers:
        from dev.bench_layers import run_layers_bench

        path = run_layers_bench(project(), release)
        print(f"figures written to {path}")
        return
    if repro:
        from dev.bench_repro import run_repro_bench
        from ngcbuild.core.references import registry_host

        path = run_repro_bench(project(), release, runs=whole_number(runs, "--runs", default=2, least=2),
                               registry=registry_host(registry or "127.0.0.1:5000", "--registry"))
        print(f"figures written to {path}")
        return
    if verify is not None:
        from dev.bench_verify import run_verify_bench

        path = run_verify_bench(project(), verify, runs=whole_number(runs, "--runs", default=1, least=1))
        print(f"figures written to {path}")
        return
    from dev.bench import run_bench

    runs = whole_number(runs, "--runs", default=3, least=1)
    path = run_bench(project(), runs=runs, registry=registry, release=release, skip_path_only=skip_path,
                     cache=cache)
    print(f"figures written to {path}")


def reliability(from_run=False) -> None:
    from dev.reliability import run_reliability

    run_reliability(project(), out=sys.stdout, from_run=from_run)


TOOLS = (
    Task("test", DEVELOP, "The whole test suite: unit, and integration against a real engine", test, (
        Option("k", "only the tests matching this pytest expression", value="EXPR"),
        Option("unit", "unit tests only (no engine)", value=None),
    ), writes=("build/reliability/RELIABILITY.md (a whole run only)", "build/tests/rest.log (a whole run)"),
        guide="testing.md"),
    Task("golden", DEVELOP, "Rewrite tests/golden/R/Dockerfile of every buildable release, for review",
         golden, writes=("tests/golden/R/Dockerfile",), guide="testing.md"),
    Task("reference", DEVELOP, "Rewrite docs/tasks.md, the task reference, from the task table", reference,
         writes=("docs/tasks.md",), guide="testing.md"),
    Task("bench", DEVELOP, "Speed, cache, size and push figures of dev (or cuda-dev) in BENCHMARKS.md", bench, (
        Option("runs", "runs per timed figure (median and spread)", value="N", default_text="3"),
        Option("registry", "registry to push to for the push-reuse figure (none: that figure is skipped)",
               value="HOST[:PORT]"),
        Option("release", "dev (every figure) or cuda-dev (its own section)", value="R", default="dev"),
        Option("skip-path", "only the unchanged-release figures: `build` of a built release, as a process",
               value=None),
        Option("cache-figure", "only the registry-cache figure: a fresh private engine with --cache-from (root)",
               value=None, dest="cache"),
        Option("verify", "only the verify figures: `invoke verify` of cuda-dev and 25.12 as processes, time and "
               "bytes, against the one at this git revision (the baseline)", value="REV"),
        Option("repro", "only the reproducibility figures: R built --no-cache --runs times (default 2), each "
               "pushed by ngcbuild to --registry (default 127.0.0.1:5000), where its release image is made: the "
               "push's time against the build's, the engine and release image ids, the manifest digest",
               value=None),
        Option("layers", "only the bytes-pushed figures: in a git clone of the checkout, R built and pushed to a "
               "registry of the bench's own, then after a commit touching only README.md, a one-pin change and a "
               "second release of the same steps: what each push sent", value=None),
        Option("zstd", "only the zstd variant figures: an image of this machine's /usr/share and /usr/lib pushed gzip "
               "to a registry of the bench's own, its variant made as promote --zstd makes it, each tag pulled by "
               "podman --runs times (default 3), alternating, into a fresh store: sizes and times", value=None),
    ), writes=("BENCHMARKS.md",), guide="testing.md", renamed=(Renamed("--cache", "--cache-figure"),)),
    Task("reliability", DEVELOP, "Refresh RELIABILITY.md: the reliability tests' figures and mutate's tables",
         reliability, (
             Option("from-run", "take the figures the last whole test run left in build/reliability/ instead of "
                    "running the reliability tests again", value=None),
         ), writes=("RELIABILITY.md",), guide="testing.md"),
)

CHECKOUT_TASKS = TASKS + TOOLS
CHECKOUT_STAGES = STAGES + (DEVELOP,)
check_table(CHECKOUT_TASKS, CHECKOUT_STAGES)
namespace = collection(CHECKOUT_TASKS)
