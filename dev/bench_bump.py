"""Benchmark of `ngcbuild bump --check --release cuda-dev` (issue 40): the whole command as a process,
timed from outside, every byte it and its children (uv) receive counted by bench_verify's proxy on the
loopback (https_proxy, http_proxy), with uv's cache empty (a new UV_CACHE_DIR per run: everything
fetched), against the total size of the wheels of the release's pins on every platform it builds (the
files verify and bump judge; bench_verify.wheel_bytes). Writes its section of BENCHMARKS.md, beside
verify's.

    python3 dev/bench_bump.py [--runs 2] [--release cuda-dev]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from dev.bench_verify import CountingProxy, wheel_bytes  # noqa: E402
from ngcbuild.core.children import run_child  # noqa: E402
from ngcbuild.core.project import Project  # noqa: E402

TARGET_S = 60
TARGET_SHARE = 0.02
BEGIN, END = "<!-- dev/bench_bump.py -->", "<!-- end dev/bench_bump.py -->"
# The figure for pip's dry runs (the starting tip, not re-measured: it moves about 17.5 GiB)
BEFORE = "7–10 min, about 17.5 GiB (pip's dry runs downloading every wheel they planned with; issue 40's figure, " \
         "not re-measured)"


def timed(release: str, proxy: CountingProxy, cache: Path):
    address = f"http://127.0.0.1:{proxy.port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "https_proxy": address, "HTTPS_PROXY": address,
           "http_proxy": address, "HTTP_PROXY": address, "NO_PROXY": "", "no_proxy": "", "UV_CACHE_DIR": str(cache)}
    proxy.reset()
    started = time.monotonic()
    done = run_child([sys.executable, "-m", "ngcbuild", "bump", "--check", "--release", release], cwd=ROOT, env=env)
    seconds = time.monotonic() - started
    time.sleep(0.5)  # the last tunnels close
    return seconds, proxy.reset(), done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--release", default="cuda-dev")
    args = parser.parse_args()
    project = Project(ROOT)
    total, count = wheel_bytes(project, args.release)
    proxy = CountingProxy()
    samples = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-bump-") as cache:
            seconds, counted, code, last = timed(args.release, proxy, Path(cache))
        samples.append((seconds, counted, code))
        print(f"bench bump: run {run + 1}: {seconds:.1f} s, {counted.down / 1e6:.1f} MB, exit {code}: {last}")
    seconds = statistics.median(s[0] for s in samples)
    down = statistics.median(s[1].down for s in samples)
    pages = statistics.median(s[1].hosts.get("pypi.org", 0) for s in samples)
    files = statistics.median(s[1].hosts.get("files.pythonhosted.org", 0) for s in samples)
    other = down - pages - files
    met = "met" if seconds < TARGET_S and down / total < TARGET_SHARE else "**missed**"
    lines = [
        "## `bump --check`: reading metadata, not wheels",
        "",
        f"Written by `python3 dev/bench_bump.py --runs {args.runs}` on {date.today()} (vm: {platform.machine()}, "
        f"{os.cpu_count()} cores, shared), {args.runs} run(s).",
        "",
        f"Method: `ngcbuild bump --check --release {args.release}` as a process, timed from outside, uv's cache empty",
        "(a new `UV_CACHE_DIR` each run). Every byte the process and its children (uv) received went through",
        "bench_verify's counting proxy on the loopback (https_proxy, http_proxy), as verify's figure above: index",
        "pages, PEP 658 metadata files and range reads of wheels. \"Wheels\" is the total size of the files of the",
        "release's pins on every platform it builds (the files bump and verify judge). Values are medians.",
        "",
        "| | time | fetched in all | PyPI's index pages | distribution files | other hosts | all / wheels "
        "| target | |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| before (pip) | {BEFORE} | | | | | about 300% | < {TARGET_S} s, < 2% | |",
        f"| after (uv and verify's reader) | {seconds:.1f} s | {down / 1e6:.1f} MB | {pages / 1e6:.1f} MB | "
        f"{files / 1e6:.1f} MB | {other / 1e6:.1f} MB | {down / total:.2%} | < {TARGET_S} s, < 2% | {met} |",
        "",
        f"Wheels: {args.release} {total / 1e6:.0f} MB ({count} files). Exit statuses: "
        f"{', '.join(str(s[2]) for s in samples)} (1: a newer set exists).",
        "",
        "Where the bytes go now: uv reads the project pages of the candidates it considers and each chosen",
        "version's PEP 658 metadata file; bump reads each page again through verify's reader (its own process",
        "does not share uv's cache), each chosen distribution's metadata file, and of each platform wheel its",
        "WHEEL file by range requests (verify's reader checks the tags). No wheel is downloaded; `bump --as NAME`",
        "also reads torch's version.py by range requests (a few kilobytes).",
    ]
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    section = f"{BEGIN}\n" + "\n".join(lines) + f"\n{END}\n"
    if BEGIN in text:
        head, _, rest = text.partition(BEGIN)
        text = head + section + rest.partition(END)[2].lstrip("\n")
    else:  # beside verify's figure
        verify_end = "<!-- end verify -->\n"
        head, _, rest = text.partition(verify_end)
        text = head + verify_end + "\n" + section + ("\n" + rest if rest.strip() else "")
    path.write_text(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
