"""`invoke bench --repro`: whether a release reproduces, and what making its release image costs, on one release.

Each run is `invoke build --release R --no-cache --force`, then `invoke push` of it (where the release image is
made: engine/release_image.py), each a process timed from outside; every run must give one release image id
(the same engine at different times: the two-engine proof is tests/integration/test_repro.py). Written to
BENCHMARKS.md in a section of its own per release.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from dev.bench import _with_section, timed_process
from ngcbuild.core.project import Project
from ngcbuild.engine.epoch import source_date_epoch
from ngcbuild.image.blobs import LEVEL
from ngcbuild.manifest.loader import load_release
from ngcbuild.workspace.record import read_record


def run_repro_bench(project: Project, release: str, runs: int, registry: str = "127.0.0.1:5000",
                    out_path: Path | None = None, log=print) -> Path:
    """The figures written to BENCHMARKS.md; each build and push a child process (core/children.run_child:
    ended with its group when the bench is signalled or fails); a child that fails (an engine it cannot
    reach) is one line (dev/bench.ChildFailed, exit 1). A closed stdout swallows the progress lines
    (core/console.py), as every command's."""
    # one epoch for every run, as the bench starts: a commit landing meanwhile (the epoch is the commit's
    # time) would make the runs' images differ by their times alone, which is no finding
    epoch = source_date_epoch(project, load_release(project, release).release.build.source_date_epoch)
    log(f"every run with SOURCE_DATE_EPOCH={epoch.seconds} ({epoch.source})")
    rows = []
    for number in range(1, runs + 1):
        seconds = timed_process([sys.executable, "-m", "invoke", "build", "--release", release, "--no-cache",
                                 "--force"], project.root, {"SOURCE_DATE_EPOCH": str(epoch.seconds)})
        # the release image is made where it leaves: the push (save, rewrite, compress, send) is its cost
        pushed = timed_process([sys.executable, "-m", "invoke", "push", "--release", release, "--registry", registry],
                               project.root)
        record = read_record(project.out(release))
        release_ids = {entry.image_id for ref, entry in record.pushed.items() if ref.startswith(f"{registry}/")}
        rows.append((seconds, pushed, record.build.image_id, ",".join(sorted(map(str, release_ids)))))
        log(f"run {number}: build {seconds:.1f}s, push {pushed:.1f}s, engine {record.build.image_id}, "
            f"release {rows[-1][3]}")
    again = timed_process([sys.executable, "-m", "invoke", "push", "--release", release, "--registry", registry],
                          project.root)
    record = read_record(project.out(release))
    digests = {entry.digest for ref, entry in record.pushed.items() if ref.startswith(f"{registry}/")}
    fractions = [push / seconds for seconds, push, _, _ in rows]
    ids = {image for _, _, _, image in rows}
    engines = {engine for _, _, engine, _ in rows}
    lines = [
        f"## Reproducible `{release}`: the release image made where it leaves (`invoke bench --repro --release "
        f"{release}`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())}: {runs} runs of `invoke build --release {release} "
        f"--no-cache --force` then `invoke push --release {release} --registry {registry}`, each a process timed "
        f"from outside, one after another on this engine, each with `SOURCE_DATE_EPOCH={epoch.seconds}` "
        f"({epoch.source}, as the bench started).",
        "",
        "| run | cold build | push (save, rewrite, compress, send) | push / build | engine image | release image |",
        "|---|---|---|---|---|---|",
        *(f"| {i} | {seconds:.1f} s | {push:.1f} s | {push / seconds:.3f} | `{engine[:19]}…` | `{image[:19]}…` |"
          for i, (seconds, push, engine, image) in enumerate(rows, 1)),
        "",
        f"- push: median **{statistics.median(fractions):.3f}×** the cold build (its layers compressed at gzip level "
        f"{LEVEL}, each once per machine: the layer store)",
        f"- reproduced: {'yes, one release image' if len(ids) == 1 else f'NO: {len(ids)} release images'} "
        f"(`{sorted(ids)[0]}`) from {len(engines)} different engine images",
        f"- manifest {', '.join(f'`{d}`' for d in sorted(digests))}; pushed again: {again:.1f} s (nothing sent)",
    ]
    path = out_path or project.root / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(_with_section(text, f"repro-{release}", "\n".join(lines)))  # as the other sections
    return path
