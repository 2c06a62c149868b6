"""Benchmark of `ngcbuild resolve` (issue 35): a 20-requirement team set on `cuda-dev`, resolved as a
process, cold (an empty uv cache: everything fetched) and warm (the cache of the cold run), with the
bytes fetched (what uv stored in its empty cache: the index pages and the wheels' metadata it read).
Writes its section of BENCHMARKS.md.

    python3 dev/bench_resolve.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK, END = "<!-- dev/bench_resolve.py -->", "<!-- end dev/bench_resolve.py -->"
TEAM = """accelerate
albumentations
datasets
einops
hydra-core
lightning
matplotlib
omegaconf
opencv-python-headless
pandas
rich
safetensors
scikit-learn
scipy
sentencepiece
tensorboard
timm
torchmetrics
transformers
wandb
"""
MANIFEST = """extends: cuda-dev
summary: a 20-requirement team set on cuda-dev (benchmark)
derive:
  requirements: requirements/bench-team.txt
  index_as_of: 2026-11-20
"""


def project(tmp: Path) -> Path:
    root = tmp / "project"
    for folder in ("templates", "manifests", "constraints", "requirements"):
        shutil.copytree(ROOT / folder, root / folder)
    (root / "manifests" / "derived" / "bench-team.yaml").write_text(MANIFEST)
    (root / "requirements" / "bench-team.txt").write_text(TEAM)
    return root


def resolve(root: Path, cache: Path) -> tuple[float, str]:
    env = {**os.environ, "UV_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "src")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ngcbuild", "resolve", "--release", "bench-team"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"resolve failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, done.stdout


def size(folder: Path, prefix: str = "") -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
               and p.relative_to(folder).as_posix().startswith(prefix))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-resolve-") as tmp:
        tmp = Path(tmp)
        root = project(tmp)
        cold, warm, fetched, pages, metadata = [], [], [], [], []
        for run in range(runs):
            cache = tmp / f"cache-{run}"
            seconds, out = resolve(root, cache)
            cold.append(seconds)
            fetched.append(size(cache))
            pages.append(size(cache, "simple-"))
            metadata.append(size(cache, "wheels-"))
            warm.append(resolve(root, cache)[0])
        lock = (root / "constraints" / "bench-team.lock").read_text()
    entries = len(re.findall(r"^[A-Za-z0-9][^ #\n]*==", lock, flags=re.M))
    uv = subprocess.run([sys.executable, "-c", "import uv,subprocess;print(subprocess.run([uv.find_uv_bin(),"
                         "'--version'],capture_output=True,text=True).stdout.strip())"],
                        capture_output=True, text=True).stdout.strip()
    spread = lambda values, unit: f"{min(values):.3g}–{max(values):.3g}" if len(values) > 1 else "one run"  # noqa: E731
    verdict = "met" if statistics.median(cold) < 60 else "**missed**"
    fetched_spread = spread([f / 1e6 for f in fetched], "MB")
    section = f"""{MARK}
## Resolving a team's requirements on a release (`ngcbuild resolve`)

Written by `python3 dev/bench_resolve.py` on {time.strftime('%Y-%m-%d')} ({uv}; vm: 2 cores), {runs} runs.

Method: the 20 requirements below as a derived release of `cuda-dev` (its {len(TEAM.split())} requirements
against cuda-dev's 53 pins, for Python 3.11 on linux/amd64 and linux/arm64, the index as of 2026-11-20),
resolved by `ngcbuild resolve` as a process (start-up, load, both platforms, the lock written). Cold: uv's
cache empty (`UV_CACHE_DIR` a new folder), so every index page and metadata file is fetched; bytes fetched
is what uv stored in that cache (index pages and each candidate's METADATA, read by PEP 658 without the
wheel wherever PyPI serves it; the rest: a source distribution built for its metadata, where a
requirement has no wheel). Warm: the same command again on that cache. Values are medians.

| figure | median | spread | target | |
|---|---|---|---|---|
| resolve, cold (process) | {statistics.median(cold):.1f} s | {spread(cold, 's')} | seconds, not minutes | {verdict} |
| resolve, warm (process) | {statistics.median(warm):.1f} s | {spread(warm, 's')} | | |
| bytes fetched, cold | {statistics.median(fetched) / 1e6:.1f} MB | {fetched_spread} | metadata, not wheels | |
| of which index pages (PEP 691 project pages) | {statistics.median(pages) / 1e6:.1f} MB | | | |
| of which wheels' METADATA | {statistics.median(metadata) / 1e6:.1f} MB | | | |
| distributions locked (new to cuda-dev) | {entries} | one lock | | |

Requirements: {', '.join(TEAM.split())}.
{END}
"""
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if MARK in text:
        text = text[:text.index(MARK)] + section + text[text.index(END) + len(END) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)
    print(section)


if __name__ == "__main__":
    main()
