"""`invoke bench --layers`: the bytes a user's push sends when little or nothing changed (issue 52, item 3).

Everything a user would type, each a process, in a git clone of this checkout (its own commits, its own
build/), pushing with ngcbuild's own push to a registry of the bench's own (empty at the start, so that no
earlier run's blobs hide a layer that changed):

1. `build` and `push` of the release: every blob sent (the reference);
2. a commit that touches only README.md, then `build --force` and `push` (target: nothing sent);
3. a one-pin change (the small pin of bench.BUMPS) committed, `build`, `push` (target: at most 2% of the
   image's compressed bytes);
4. a second release that extends the first with a new build number (two months whose steps write the same
   files), committed, `build --release R2`, `push` into the same repository, as NGC's months share
   `nvidia/pytorch` (target: its layers all shared; only its config and manifest sent).

Beside the first push, the engine's own push of the same image (`docker push`, to another repository of
the same registry): its blobs' bytes against ours (issue 52 item 4: ours at least as small); and ngcbuild's
push of the same engine image without making its release image (dev/plain_push.py, a process): the save and
compression our push does anyway, against which item 2 sets what making the release image costs. The first
push runs right after the build, while its files are still written back to disk, so item 2 is measured side
by side: the baseline, our push made again cold (a store and a registry of its own), the baseline again.

What was sent is read from the registry, not from our output: each manifest pushed, its blobs (layers and
config) against those of every manifest pushed before it; the push's own count of blobs sent beside it.
Written to BENCHMARKS.md in a section of its own.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dev.bench import BUMPS, _with_section
from ngcbuild.core.children import run_child
from ngcbuild.core.project import Project

MANIFEST_TYPES = ", ".join(["application/vnd.docker.distribution.manifest.v2+json",
                            "application/vnd.oci.image.manifest.v1+json"])
COMMITTER = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench",
             "GIT_COMMITTER_EMAIL": "bench@localhost"}
ONE_PIN_TARGET = 0.02
COST_TARGET = 0.10  # issue 52 item 2: the release image's cost beyond the save and compression a push does anyway


@dataclass
class Push:
    step: str
    seconds: float
    digest: str
    image_id: str
    blobs: dict[str, int]  # digest -> size, config and layers
    sent: dict[str, int]  # the blobs no earlier manifest of the run held
    said: str  # the push's own line: "N layers: S sent, K already in the registry; manifest …"

    @property
    def image_bytes(self) -> int:
        return sum(self.blobs.values())

    @property
    def sent_bytes(self) -> int:
        return sum(self.sent.values())


def run_layers_bench(project: Project, release: str = "dev", out_path: Path | None = None, log=print) -> Path:
    from tests.integration.private import PrivateRegistry

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="ngcbuild-bench-layers-"))
    registry = PrivateRegistry()
    registry.start()
    try:
        clone = work / "project"
        subprocess.run(["git", "clone", "-q", str(project.root), str(clone)], check=True)
        bench = _LayersBench(clone, release, registry.address, log, work / "layer-store")
        with _engine_as_it_was((release, f"{release}-bench2"), registry.address):
            pushes = bench.run()
    finally:
        registry.close()
        shutil.rmtree(work, ignore_errors=True)
    path = out_path or project.root / "BENCHMARKS.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    report = _report(release, pushes, bench, time.monotonic() - started, _head(project.root))
    path.write_text(_with_section(text, f"layers-{release}", report))
    return path


@contextmanager
def _engine_as_it_was(releases: tuple[str, ...], registry: str):
    """The engine's tags of `releases` put back as they were when the bench ends (its builds move the user's
    own `R-py3` tags), then what the bench tagged under its registry's name and made that no tag holds removed
    (the first build's stages whose tags a later build moved: gigabytes for cuda-dev), as `invoke test` does."""
    import docker
    from tests.integration.conftest import KeptTags

    from dev.engine_leftovers import remove_left, snapshot

    kept = [KeptTags(docker.APIClient(timeout=600), release) for release in releases]
    before = snapshot()
    try:
        yield
    finally:
        for each in kept:
            each.restore()
        remove_left(before, sys.stdout, registry=registry, who="invoke bench --layers")


class _LayersBench:
    def __init__(self, clone: Path, release: str, registry: str, log, store: Path):
        self.clone, self.release, self.registry, self.log = clone, release, registry, log
        self.store = store  # a layer store of the bench's own, empty at the start (image/store.py)
        self.seen: dict[str, int] = {}
        self.pushes: list[Push] = []
        self.engine_push: dict[str, int] = {}  # the engine's own push of the first image: digest -> size
        self.engine_push_s = 0.0  # its time, `docker push` as a process
        self.plain_push_s = 0.0  # ngcbuild's push of the engine image as it is (dev/plain_push.py), a process
        self.side_by_side: list[tuple[str, float]] = []  # item 2's runs, in the order they ran (compare_making)
        self.first_build_s = 0.0  # the first `build`, a process
        self.first_build_cached = "?"  # its own words: "C/N steps cached"

    def run(self) -> list[Push]:
        release, second = self.release, f"{self.release}-bench2"
        self.build_and_push("first build and push", release)
        self.engine_push = self.pushed_by_engine(self.pushes[0].image_id)
        self.plain_push_s = self.pushed_plain(self.pushes[0].image_id)
        self.compare_making(release, self.pushes[0].image_id)
        readme = self.clone / "README.md"
        readme.write_text(readme.read_text() + "\nA line of the bench's own.\n")
        self.commit("README.md only")
        self.build_and_push("a commit touching only README.md, then build --force", release, "--force")
        name, old, olders = BUMPS[release]
        constraints = self.clone / "constraints" / f"{release}.txt"
        constraints.write_text(constraints.read_text().replace(f"{name}=={old}", f"{name}=={olders[0]}"))
        self.commit(f"{name} {old} -> {olders[0]}")
        self.build_and_push(f"one pin changed ({name} {old} → {olders[0]}), committed", release)
        (self.clone / "manifests" / f"{second}.yaml").write_text(
            f"extends: {release}\nsummary: the bench's second release of the same stack\nbuild:\n  number: '2'\n")
        shutil.copy(constraints, self.clone / "constraints" / f"{second}.txt")
        self.commit(f"release {second}")
        self.build_and_push(f"a second release ({second}: extends {release}, its own number), same repository",
                            second)
        return self.pushes

    def commit(self, message: str) -> None:
        environ = {**_environ(), **COMMITTER}
        subprocess.run(["git", "add", "-A"], cwd=self.clone, check=True, env=environ)
        subprocess.run(["git", "commit", "-q", "-m", message], cwd=self.clone, check=True, env=environ)
        time.sleep(1.1)  # commit times are whole seconds: the next commit is later than this one

    def invoke(self, *args: str) -> tuple[float, str]:
        began = time.perf_counter()
        done = run_child([sys.executable, "-m", "invoke", *args], cwd=self.clone, timeout=3600,
                         env={**_environ(), "NGCBUILD_LAYER_STORE": str(self.store)})
        took = time.perf_counter() - began
        if done.returncode:
            raise RuntimeError(f"invoke {' '.join(args)} exit {done.returncode}\n{done.stdout[-3000:]}"
                               f"\n{done.stderr[-3000:]}")
        return took, done.stdout

    def build_and_push(self, step: str, release: str, *build_args: str) -> None:
        built, said = self.invoke("build", "--release", release, *build_args)
        if not self.first_build_s:
            self.first_build_s = built
            cached = re.search(r"\b([0-9]+/[0-9]+) steps cached", said)
            self.first_build_cached = cached[1] if cached else "? (the build printed no count)"
        seconds, said = self.invoke("push", "--release", release, "--registry", self.registry)
        record = json.loads((self.clone / "build" / release / "record.json").read_text())
        pushed = {ref: entry for ref, entry in record["pushed"].items() if ref.startswith(f"{self.registry}/")}
        ref, entry = sorted(pushed.items())[0]
        blobs = self.blobs(ref, entry["digest"])
        sent = {digest: size for digest, size in blobs.items() if digest not in self.seen}
        self.seen.update(blobs)
        summary = next((line.strip() for line in said.splitlines() if " layers: " in line and " sent" in line),
                       "(the push printed no summary: it found the image held whole)")
        push = Push(step, seconds, entry["digest"], record["image_id"], blobs, sent, summary)
        self.pushes.append(push)
        self.log(f"{step}: {push.sent_bytes / 1e6:.1f} MB of {push.image_bytes / 1e6:.1f} MB sent; {summary}")

    def pushed_by_engine(self, image_id: str) -> dict[str, int]:
        """`docker push` of the same image, timed as the process a user runs (the CLI, on DOCKER_HOST's engine)."""
        repository = f"{self.registry}/ngcbuild-bench/engine-push"
        subprocess.run(["docker", "tag", image_id, f"{repository}:latest"], check=True)
        began = time.perf_counter()
        try:
            pushed = subprocess.run(["docker", "push", "--quiet", f"{repository}:latest"], capture_output=True,
                                    text=True, timeout=1800)
        finally:
            self.engine_push_s = time.perf_counter() - began
            subprocess.run(["docker", "rmi", "--no-prune", f"{repository}:latest"], capture_output=True)
        if pushed.returncode:
            raise RuntimeError(f"docker push: {pushed.stderr.strip()[-500:]}")
        blobs = self.blobs(f"{repository}:latest", "latest")
        self.log(f"the engine's own push of the same image (`docker push`, {self.engine_push_s:.1f} s): "
                 f"{sum(blobs.values()) / 1e6:.1f} MB")
        return blobs

    def compare_making(self, release: str, image_id: str) -> None:
        """Issue 52 item 2 side by side: the first push runs right after the build, while the engine's files are
        still being written back to disk, and the baseline later; so both are timed again here, one after the
        other, each cold: ours with a layer store of its own, empty, to a registry of its own (nothing held),
        between two baselines (each to a repository of its own)."""
        from tests.integration.private import PrivateRegistry

        self.side_by_side.append(("baseline", self.plain_push_s))
        other = PrivateRegistry()
        other.start()
        try:
            with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-store-") as store:
                began = time.perf_counter()
                done = run_child([sys.executable, "-m", "invoke", "push", "--release", release, "--registry",
                                  other.address], cwd=self.clone, timeout=3600,
                                 env={**_environ(), "NGCBUILD_LAYER_STORE": store})
                took = time.perf_counter() - began
            if done.returncode:
                raise RuntimeError(f"invoke push exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        finally:
            other.close()
        self.side_by_side.append(("ours", took))
        self.log(f"ngcbuild's push again, cold, to a registry of its own ({took:.1f} s)")
        self.side_by_side.append(("baseline", self.pushed_plain(image_id, "ngcbuild-bench/plain-again")))

    def pushed_plain(self, image_id: str, repository: str = "ngcbuild-bench/plain") -> float:
        """ngcbuild's push of the engine's image as it holds it (no release image made), timed as a process."""
        began = time.perf_counter()
        done = run_child([sys.executable, "-m", "dev.plain_push", image_id, self.registry, repository],
                         cwd=self.clone, timeout=3600, env={**_environ(), "PYTHONPATH": str(self.clone / "src")
                                                             + ":" + str(self.clone)})
        took = time.perf_counter() - began
        if done.returncode:
            raise RuntimeError(f"dev.plain_push exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        self.log(f"ngcbuild's push of the engine image as it is (no release image made; {took:.1f} s)")
        return took

    def blobs(self, ref: str, digest: str) -> dict[str, int]:
        repository = ref.removeprefix(f"{self.registry}/").rsplit(":", 1)[0]
        request = urllib.request.Request(f"http://{self.registry}/v2/{repository}/manifests/{digest}",
                                         headers={"Accept": MANIFEST_TYPES})
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - the bench's own registry
            manifest = json.loads(answer.read(16 << 20))
        described = [manifest["config"], *manifest["layers"]]
        return {blob["digest"]: int(blob["size"]) for blob in described}


def _environ() -> dict:
    import os

    return {key: value for key, value in os.environ.items() if key != "SOURCE_DATE_EPOCH"}  # the commits' times


def _head(root: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True)
    return done.stdout.strip() or "(no commit)"


def _own_layers(push: Push, before: list[Push]) -> str:
    """The layers of `push` no earlier push held: how many, where in the image, how big."""
    held = {digest for earlier in before for digest in earlier.blobs}
    layers = list(push.blobs.items())[1:]  # the config first
    own = [(number, size) for number, (digest, size) in enumerate(layers, 1) if digest not in held]
    if not own:
        return f"none of its {len(layers)} layers (all held already)"
    listed = ", ".join(f"layer {number} of {len(layers)} ({size / 1e3:.1f} kB)" for number, size in own)
    return f"{len(own)} of its {len(layers)} layers, the rest held already: {listed}"


def _report(release: str, pushes: list[Push], bench: _LayersBench, elapsed: float, head: str) -> str:
    first, readme, pin, second = pushes
    ours, theirs = first.image_bytes, sum(bench.engine_push.values())
    # what making the release image adds to a push: our first push (save, rewrite, compress, send) beyond the
    # engine's own push of the same image (which reads and compresses every layer and sends it too)
    beyond = (first.seconds - bench.engine_push_s) / bench.first_build_s
    # issue 52 item 2's own measure: beyond the save and compression our push does anyway (dev/plain_push.py),
    # side by side: our second cold push against the baselines run just before and just after it
    again = next(seconds for kind, seconds in bench.side_by_side if kind == "ours")
    baselines = [seconds for kind, seconds in bench.side_by_side if kind == "baseline"]
    baseline = sum(baselines) / len(baselines)
    making = (again - baseline) / bench.first_build_s
    first_making = (first.seconds - bench.plain_push_s) / bench.first_build_s
    runs = ", ".join(f"{kind} {seconds:.1f} s" for kind, seconds in bench.side_by_side)
    pin_ratio = pin.sent_bytes / pin.image_bytes
    rows = [f"| {p.step} | {p.sent_bytes / 1e6:.1f} MB | {p.image_bytes / 1e6:.1f} MB | "
            f"{p.sent_bytes / p.image_bytes:.4f} | {p.seconds:.1f} s ({p.seconds / first.seconds:.2f}×) | "
            f"`{p.digest[:19]}…` | {p.said} |" for p in pushes]
    verdicts = [
        f"- after a commit that changes nothing `{release}`'s steps read: **{readme.sent_bytes} bytes** sent "
        f"(target 0: {'met' if readme.sent_bytes == 0 else 'missed'}); the release digest "
        f"{'is the same' if readme.digest == first.digest else 'CHANGED'}",
        f"- after a one-pin change: **{pin_ratio:.2%}** of the image sent (target ≤ {ONE_PIN_TARGET:.0%}: "
        f"{'met' if pin_ratio <= ONE_PIN_TARGET else 'missed'}); {len(pin.sent) - 1} layer(s) and the config",
        f"- a second release of the same steps: **{second.sent_bytes / 1e3:.1f} kB** sent: its config and "
        f"{_own_layers(second, [first, readme, pin])} (its manifest is its own too)",
        f"- compressed for those who pull: ours {ours / 1e6:.1f} MB against {theirs / 1e6:.1f} MB by the engine's "
        f"own push of the same image (`docker push`): **{ours / theirs:.3f}×** (target ≤ 1: "
        f"{'met' if ours <= theirs else 'missed'})",
        f"- the push's own time, as a process, against the first push's ({first.seconds:.1f} s: every layer saved and "
        f"compressed): one pin changed **{pin.seconds / first.seconds:.2f}×**, the second release "
        f"**{second.seconds / first.seconds:.2f}×** (the layer store: only the layers not compressed before are "
        "compressed; the bench's store is its own, empty at the start)",
        f"- what making the release image costs beyond the push the engine would make anyway: our first push "
        f"{first.seconds:.1f} s, the engine's own push of the same image {bench.engine_push_s:.1f} s (`docker push` "
        f"as a process), the first build {bench.first_build_s:.1f} s (a process; {bench.first_build_cached} "
        f"steps cached: a step from the cache only makes this ratio larger): **{beyond:.3f}×** the build "
        "(for reference: this also counts the engine's save, which `docker push` does not make and our push "
        "reads whether or not it makes a release image; the target is set by the line below)",
        f"- what making the release image costs beyond the save and compression our push does anyway (issue 52 "
        f"item 2's words), side by side: the baseline is ngcbuild's push of the same engine image as the engine "
        f"holds it (the save streamed, every layer compressed and sent as push does, no release image made: "
        f"`python -m dev.plain_push`, a process), run just before and just after our push made again cold (a "
        f"layer store of its own, empty; a registry of its own): {runs} in that order: ours {again:.1f} s against "
        f"the baselines' mean {baseline:.1f} s: **{making:.3f}×** the build "
        f"(target ≤ {COST_TARGET}: {'met' if making <= COST_TARGET else 'missed'}). Our first push (right after the "
        f"build, as the build's files are still written back to disk) against the first baseline: "
        f"{first_making:.3f}×",
    ]
    return "\n".join([
        f"## Bytes pushed when little changed (`invoke bench --layers --release {release}`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} from commit {head}, {elapsed / 60:.0f} minutes: each "
        "step a user's commands as processes in a git clone of the checkout, ngcbuild's own push to a registry "
        "of the bench's own, empty at the start; what was sent is read from the registry (each manifest's "
        "blobs against those of the manifests pushed before it).",
        "",
        "| step | sent | image (compressed) | sent / image | push (× the first) | release digest | the push said |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        *verdicts,
    ])
