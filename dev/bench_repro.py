"""`invoke bench --repro`: what the normalising step costs and whether it reproduces, on one release.

Each run is `invoke build --release R --no-cache --force` as a process, timed from outside; the record
says how long its normalising step took and the image id. The cost is the step's seconds over the rest
of the command's (the cold build it follows), the target at most 0.25; every run must give one image
id (the same engine at different times: the two-engine proof is tests/integration/test_repro.py).
Written to BENCHMARKS.md in a section of its own per release.
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

TARGET = 0.25


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
        build = read_record(project.out(release)).build
        step = build.normalisation.seconds
        rows.append((seconds, step, build.image_id, build.normalisation.raw_image_id))
        log(f"run {number}: {seconds:.1f}s, normalising {step:.1f}s, {build.image_id}")
    # the last run's image pushed by ngcbuild's own push (its blobs compressed by ngcbuild: the manifest
    # digest is the image's on any engine), as a process; a second push of it sends nothing
    pushes = [timed_process([sys.executable, "-m", "invoke", "push", "--release", release, "--registry", registry],
                            project.root) for _ in range(2)]
    record = read_record(project.out(release))
    digests = {entry.digest for ref, entry in record.pushed.items() if ref.startswith(f"{registry}/")}
    log(f"pushed to {registry}: {sorted(digests)} in {pushes[0]:.1f}s, again in {pushes[1]:.1f}s")
    fractions = [step / (seconds - step) for seconds, step, _, _ in rows]
    ids = {image for _, _, image, _ in rows}
    raws = {raw for _, _, _, raw in rows}
    lines = [
        f"## Reproducible `{release}`: the normalising step (`invoke bench --repro --release {release}`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())}: {runs} runs of `invoke build --release {release} "
        "--no-cache --force`, each a process timed from outside, one after another on this engine, each with "
        f"`SOURCE_DATE_EPOCH={epoch.seconds}` ({epoch.source}, as the bench started).",
        "",
        "| run | whole command | normalising step | fraction of the cold build | image id |",
        "|---|---|---|---|---|",
        *(f"| {i} | {seconds:.1f} s | {step:.1f} s | {step / (seconds - step):.3f} | `{image[:19]}…` |"
          for i, (seconds, step, image, _) in enumerate(rows, 1)),
        "",
        f"- cost: median **{statistics.median(fractions):.3f}×** the cold build (target ≤ {TARGET}: "
        f"{'met' if statistics.median(fractions) <= TARGET else 'missed'})",
        f"- reproduced: {'yes, one image id' if len(ids) == 1 else f'NO: {len(ids)} image ids'} "
        f"(`{sorted(ids)[0]}`) from {len(raws)} different engine images",
        f"- pushed by ngcbuild to {registry}: manifest {', '.join(f'`{d}`' for d in sorted(digests))}; the push "
        f"{pushes[0]:.1f} s (its layers compressed at gzip level {LEVEL}), again {pushes[1]:.1f} s (nothing sent)",
    ]
    path = out_path or project.root / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    path.write_text(_with_section(text, f"repro-{release}", "\n".join(lines)))  # as the other sections
    return path
