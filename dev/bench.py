"""`invoke bench`: build speed, cache reuse, image size and push reuse of the `dev` release (and, with
`--release cuda-dev`, the multi-GB CUDA image), as ratios measured in one run (these machines are
noisy), written to BENCHMARKS.md.

Never a timed test: figures with their spread and the targets they meet or miss.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dev import USER_TASKS
from ngcbuild.core.children import run_child
from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.project import Project
from ngcbuild.core.references import registry_host
from ngcbuild.core.text import safe
from ngcbuild.engine.client import connect
from ngcbuild.engine.container import run_once
from ngcbuild.engine.events import BuildStream, PushStream
from ngcbuild.engine.image_build import machine_inputs, python_tag, write_context
from ngcbuild.engine.options import options_from
from ngcbuild.engine.wheelhouse import select_wheels
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.workspace.record import record_path

RELEASE = "dev"
# Per release, a small pin with older releases on PyPI that the rest accepts: the one-pin-change
# benchmark. Each run bumps to another release, so no run finds the previous run's layers in the cache.
BUMPS = {
    "dev": ("tqdm", "4.70.1", ("4.67.1", "4.66.5", "4.66.4", "4.66.2", "4.66.1")),
    "cuda-dev": ("six", "1.17.0", ("1.16.0", "1.15.0", "1.14.0", "1.13.0", "1.12.0")),
}
# The full set of figures is for `dev`; a multi-GB release gets the ones its size makes interesting
# (cold build against docker build, size against payload, a small pin's rebuild and push).
FULL = ("dev",)


@dataclass
class Figure:
    name: str
    samples: list[float]
    unit: str
    target: str = ""
    met: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def spread(self) -> str:
        if len(self.samples) < 2:
            return "one run"
        return f"{min(self.samples):.3g}–{max(self.samples):.3g}"


def timed_process(argv: list[str], cwd: Path, extra_env: dict | None = None) -> float:
    """Seconds `argv` takes as a process of its own, timed from outside; the ngcbuild it runs is this
    checkout's (src/ first on PYTHONPATH)."""
    code = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, **(extra_env or {}),
           "PYTHONPATH": os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH")) if p)}
    started = time.monotonic()
    result = run_child(argv, cwd=cwd, env=env)  # ended with its process group if the bench ends first
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise ChildFailed(argv, result.returncode, result.stderr)
    return elapsed


def flat_record(root: Path, release: str) -> dict:
    """build/R/record.json as its JSON: the build's keys (image_id, steps, step_log...) at the top."""
    return json.loads(record_path(root / "build" / release).read_text())


class ChildFailed(OperationError):
    """A command the bench runs as a process failed: one line naming it, its status and its own last line
    (an engine it cannot reach, a build that failed), never a traceback of the bench (exit 1)."""

    def __init__(self, argv: list[str], status: int, err: str):
        shown = " ".join(["python", *argv[1:]] if argv and argv[0] == sys.executable else argv)
        lines = [line for line in (err or "").splitlines() if line.strip()]
        said = safe(lines[-1].removeprefix("ngcbuild: "), 400) if lines else "it said nothing"
        super().__init__(f"`{safe(shown, 200)}` exited {status}: {said}")


class Bench:
    def __init__(self, project: Project, runs: int, log=print, release: str = RELEASE):
        self.project, self.runs, self.log, self.release = project, runs, log, release
        self.client = connect()
        self.options = options_from(None, None, None, False)
        self.created: set[str] = set()

    # --- building blocks -------------------------------------------------------------------
    def command(self, project: Project, *args: str) -> float:
        """`ngcbuild ARGS` as a user runs it: a process of its own, timed from outside."""
        return timed_process([sys.executable, "-m", "ngcbuild", *args], project.root)

    def ours(self, project: Project, no_cache: bool) -> tuple[float, dict]:
        # --force: the skip-by-hash shortcut would answer instead of the engine
        args = ["build", "--release", self.release, "--force"] + (["--no-cache"] if no_cache else [])
        elapsed = self.command(project, *args)
        record = flat_record(project.root, self.release)
        self.created.add(record["image_id"])
        return elapsed, record

    def context(self, fileobj, project: Project, rendered) -> None:
        """The context tar `build` sends for `rendered`: the same files and this machine's inputs."""
        wheels = select_wheels(self.options.wheelhouse, rendered.plan.loaded.constraints,
                               python_tag(rendered.plan.release)) \
            if self.options.wheelhouse else []
        write_context(fileobj, project, rendered, self.options, machine_inputs(rendered, self.options, wheels))

    def plain(self, project: Project, no_cache: bool) -> float:
        """`docker build` (classic builder, as docker-py uses) of the very same context tar."""
        rendered = render_files(project, load_release(project, self.release))
        with tempfile.TemporaryFile() as context:
            self.context(context, project, rendered)
            context.seek(0)
            command = ["docker", "build", "-q", "-t", "ngcbuild-bench/plain:latest", "-"]
            if no_cache:
                command.insert(2, "--no-cache")
            started = time.monotonic()
            result = run_child(command, stdin=context,
                               env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/local/bin:/usr/bin:/bin"})
            elapsed = time.monotonic() - started
        if result.returncode != 0:
            raise RuntimeError(f"plain docker build failed: {result.stderr[-2000:]}")
        self.created.add(result.stdout.strip())
        return elapsed

    def cleanup(self) -> None:
        """Remove the untagged images the benchmark made (cold builds leave one each)."""
        try:
            self.client.remove_image("ngcbuild-bench/plain:latest")
        except Exception:  # noqa: BLE001 - already gone
            pass
        for image_id in self.created:
            try:
                if not self.client.inspect_image(image_id)["RepoTags"]:
                    self.client.remove_image(image_id)
            except Exception:  # noqa: BLE001 - in use by a tag or gone
                pass

    # --- the figures ------------------------------------------------------------------------
    def cold_only(self) -> list[Figure]:
        """Cold ngcbuild against cold `docker build` of the same context, alternating."""
        ours, plain = [], []
        for run in range(self.runs):
            self.log(f"cold run {run + 1}/{self.runs}: ngcbuild, then docker build")
            ours.append(self.ours(self.project, no_cache=True)[0])
            plain.append(self.plain(self.project, no_cache=True))
        self.cold = ours
        ratio = [a / b for a, b in zip(ours, plain, strict=True)]
        return [
            Figure("cold build, ngcbuild", ours, "s"),
            Figure("cold build, plain docker build", plain, "s"),
            Figure("overhead, cold (ngcbuild / docker build)", ratio, "×", "≤ 1.05", statistics.median(ratio) <= 1.05),
        ]

    def overhead(self) -> list[Figure]:
        cold_ours, cold_plain, warm_ours, warm_plain = [], [], [], []
        for run in range(self.runs):
            self.log(f"overhead run {run + 1}/{self.runs}: cold ngcbuild, cold docker build, warm both")
            cold_ours.append(self.ours(self.project, no_cache=True)[0])
            cold_plain.append(self.plain(self.project, no_cache=True))
            warm_ours.append(self.ours(self.project, no_cache=False)[0])
            warm_plain.append(self.plain(self.project, no_cache=False))
        self.cold = cold_ours
        ratio_cold = [a / b for a, b in zip(cold_ours, cold_plain, strict=True)]
        ratio_warm = [a / b for a, b in zip(warm_ours, warm_plain, strict=True)]
        return [
            Figure("cold build, ngcbuild", cold_ours, "s"),
            Figure("cold build, plain docker build", cold_plain, "s"),
            Figure("overhead, cold (ngcbuild / docker build)", ratio_cold, "×", "≤ 1.05",
                   statistics.median(ratio_cold) <= 1.05),
            Figure("warm build, ngcbuild", warm_ours, "s"),
            Figure("warm build, plain docker build", warm_plain, "s"),
            Figure("overhead, warm (ngcbuild / docker build)", ratio_warm, "×", "≤ 1.05",
                   statistics.median(ratio_warm) <= 1.05,
                   "render + context tar + record; absolute difference "
                   f"{statistics.median(warm_ours) - statistics.median(warm_plain):+.2f} s"),
        ]

    def unchanged(self) -> list[Figure]:
        samples = [self.ours(self.project, no_cache=False)[0] for _ in range(self.runs)]
        ratio = [s / statistics.median(self.cold) for s in samples]
        return [
            Figure("unchanged release rebuild (engine cache) / cold build", ratio, "×", "≤ 0.05",
                   statistics.median(ratio) <= 0.05,
                   f"rebuild {statistics.median(samples):.2f} s against cold {statistics.median(self.cold):.1f} s"),
            *self.skip_path(),
        ]

    def skip_path(self) -> list[Figure]:
        """`invoke build` and `ngcbuild build` of an unchanged release whose image exists, as a user types
        them (the commands found on PATH), against `invoke --version` (Python and invoke starting,
        nothing of ngcbuild's) and `docker image inspect` of that image: all processes, alternating."""
        self.command(self.project, "build", "--release", self.release)  # renders and stamps build/R/
        build = ["build", "--release", self.release]  # no --force: the unchanged-release path
        timed = {"invoke": [], "ngcbuild": [], "floor": [], "inspect": [], "shim": []}
        # pyenv puts a bash script (its shim) before every console script in a shell's PATH; the bench
        # itself runs below it, with the real one first. Both are what some user types.
        shim = Path(os.environ.get("PYENV_ROOT", "/nonexistent")) / "shims" / "invoke"
        for _ in range(max(self.runs, 9)):  # a fraction of a second each: more samples are cheap
            timed["invoke"].append(self.typed("invoke", *build))
            if shim.is_file():
                timed["shim"].append(self.typed(str(shim), *build))
            timed["ngcbuild"].append(self.typed("ngcbuild", *build))
            timed["floor"].append(self.typed("invoke", "--version"))
            timed["inspect"].append(self.typed("docker", "image", "inspect",
                                               f"nvcr.io/nvidia/pytorch:{self.release}-py3"))
        floor = statistics.median(timed["floor"])
        invoke_path = shutil.which("invoke") or "invoke"
        return [
            Figure("unchanged release, skipped by context hash: `invoke build` as a process", timed["invoke"], "s",
                   "≤ 0.30 s", statistics.median(timed["invoke"]) <= 0.30,
                   f"the whole command from outside, as typed ({invoke_path}): start-up, stamp check, image "
                   "lookup, tags, record"),
            Figure("the same with `ngcbuild build`", timed["ngcbuild"], "s", "≤ 0.30 s",
                   statistics.median(timed["ngcbuild"]) <= 0.30),
            *([Figure("the same `invoke build` through pyenv's shim", timed["shim"], "s", "≤ 0.30 s",
                      statistics.median(timed["shim"]) <= 0.30, f"{shim}: bash and pyenv before Python starts")]
              if timed["shim"] else []),
            Figure("`invoke --version` as a process (Python and invoke starting: the floor)", timed["floor"], "s",
                   note=f"ngcbuild's own share of `invoke build`: {statistics.median(timed['invoke']) - floor:.3f} s"),
            Figure("`invoke build` / `docker image inspect` as a process",
                   [a / b for a, b in zip(timed["invoke"], timed["inspect"], strict=True)], "×",
                   note=f"docker image inspect {statistics.median(timed['inspect']):.3f} s"),
        ]

    def typed(self, *argv: str) -> float:
        """A command as a user types it in the project (found on PATH), timed from outside."""
        return timed_process(list(argv), self.project.root)

    def one_pin(self, scratch_root: Path) -> tuple[Figure, dict]:
        name, old, olders = BUMPS[self.release]
        samples, record = [], None
        constraints = scratch_root / "constraints" / f"{self.release}.txt"
        original = constraints.read_text()
        for new in olders[:self.runs]:
            # prime the cache with the original pins, then rebuild with the bumped one
            constraints.write_text(original)
            self.ours(Project.at(scratch_root), no_cache=False)
            constraints.write_text(original.replace(f"{name}=={old}", f"{name}=={new}"))
            elapsed, record = self.ours(Project.at(scratch_root), no_cache=False)
            samples.append(elapsed / statistics.median(self.cold))
        steps = record.get("step_log", [])
        metadata = ("FROM", "ENV", "LABEL", "WORKDIR", "ENTRYPOINT")
        rebuilt = [f"{s[0]}: {s[1][:60]}" for s in steps if not s[2] and not s[1].startswith(metadata)]
        bumps = ", ".join(olders[:self.runs])
        figure = Figure(f"one pin changed ({name} {old} → {bumps}) / cold build", samples, "×", "≤ 0.25",
                        statistics.median(samples) <= 0.25, extra={"rebuilt": rebuilt})
        return figure, record

    def size(self, record: dict) -> list[Figure]:
        image = self.client.inspect_image(record["image_id"])
        base = self.client.inspect_image(image["Config"]["Labels"]["org.opencontainers.image.base.name"])
        payload_paths = ["/usr/local", "/opt/nvidia", "/etc/pip"]
        installed = _run(self.client, record["image_id"],
                         "du -sbx " + " ".join(payload_paths) + " | awk '{s+=$1} END {printf \"%.0f\\n\", s}'")
        interpreter = _apt_layers(self.client, record["image_id"])
        payload = base["Size"] + interpreter + int(installed)
        ratio = image["Size"] / payload
        figures = [
            Figure("image size / payload (base + apt packages + installed files)", [ratio], "×", "≤ 1.10",
                   ratio <= 1.10, f"image {image['Size'] / 1e6:.0f} MB, payload {payload / 1e6:.0f} MB "
                                  f"(base {base['Size'] / 1e6:.0f}, apt {interpreter / 1e6:.0f}, "
                                  f"installed {int(installed) / 1e6:.0f})"),
        ]
        if self.release in FULL:
            naive = self.naive_size()
            figures.append(Figure("naive single-stage build / ngcbuild image", [naive / image["Size"]], "×", "",
                                  None, f"naive {naive / 1e6:.0f} MB"))
        return figures

    def naive_size(self) -> int:
        """The same content built the obvious way: one stage, pip with its cache, wheels copied in."""
        rendered = render_files(self.project, load_release(self.project, RELEASE))
        pins = " ".join(str(p) for p in rendered.plan.loaded.constraints.pins)
        python = " ".join(rendered.plan.python_apt_pins)
        dockerfile = (f"FROM {rendered.plan.release.base.image}\n"
                      f"RUN apt-get update && apt-get install -y {python} python3-pip\n"
                      "COPY build-inputs/ /tmp/ngcbuild/\n"
                      "ENV PIP_CONFIG_FILE=/tmp/ngcbuild/pip.conf PIP_BREAK_SYSTEM_PACKAGES=1\n"
                      "RUN sed -i /no-cache-dir/d /tmp/ngcbuild/pip.conf"
                      f" && python3 -m pip install --ignore-installed {pins}\n"
                      "COPY entrypoint/ /opt/nvidia/\n")
        files = dict(rendered.files)
        files["Dockerfile"] = dockerfile.encode()
        naive = type(rendered)(rendered.release, rendered.directory, files, rendered.plan)
        stream = BuildStream()
        with tempfile.TemporaryFile() as context:
            self.context(context, self.project, naive)
            context.seek(0)
            for event in self.client.build(fileobj=context, custom_context=True, decode=True, rm=True,
                                           forcerm=True, tag="ngcbuild-bench/naive:latest"):
                stream.feed(event)
        if stream.error:
            raise RuntimeError(f"naive build failed: {stream.error}")
        size = self.client.inspect_image("ngcbuild-bench/naive:latest")["Size"]
        self.client.remove_image("ngcbuild-bench/naive:latest")
        return size

    def render_speed(self, scratch_root: Path) -> list[Figure]:
        real = Project.at(self.project.root)
        names = sorted(p.stem for p in real.manifests.glob("*.yaml"))
        per_release = []
        for name in names:
            loaded = load_release(real, name)
            if loaded.release.status != "buildable":
                continue
            started = time.perf_counter()
            render_files(real, loaded)
            per_release.append(time.perf_counter() - started)
        project = Project.at(scratch_root)
        timings = {}
        for count in (50, 200):
            for i in range(count):
                (project.manifests / f"syn{i:03d}.yaml").write_text(
                    f"extends: {RELEASE}\nsummary: synthetic release {i}\nbuild:\n  number: '{i}'\n")
                shutil.copy(project.constraints / f"{RELEASE}.txt", project.constraints / f"syn{i:03d}.txt")
            started = time.perf_counter()
            for i in range(count):
                render_files(project, load_release(project, f"syn{i:03d}"))
            timings[count] = (time.perf_counter() - started) / count
        return [
            Figure("render, every buildable manifest (per release)", per_release, "s"),
            Figure("render, 200 synthetic releases with extends (per release)", [timings[200]], "s", "linear",
                   timings[200] <= timings[50] * 1.5,
                   f"{timings[50] * 1000:.1f} ms each for 50, {timings[200] * 1000:.1f} ms each for 200"),
        ]

    def push_reuse(self, registry: str, first: dict, second: dict) -> Figure:
        uploads = []
        for record, repo in ((first, "ngcbuild-bench/first"), (second, "ngcbuild-bench/second")):
            self.client.tag(record["image_id"], f"{registry}/{repo}", "latest", force=True)
            stream = PushStream()
            totals = {}
            for event in self.client.push(f"{registry}/{repo}", tag="latest", stream=True, decode=True):
                stream.feed(event)
                detail = event.get("progressDetail") or {}
                if event.get("status") == "Pushing" and detail.get("total"):
                    totals[event["id"]] = detail["total"]
            if stream.error:
                raise RuntimeError(f"push failed: {stream.error}")
            pushed = sum(totals.get(layer, 0) for layer, status in stream.layers.items() if status == "Pushed")
            uploads.append(pushed)
            self.client.remove_image(f"{registry}/{repo}:latest")
        size = self.client.inspect_image(second["image_id"])["Size"]
        ratio = uploads[1] / size
        return Figure("push of a second release sharing layers: bytes uploaded / image size", [ratio], "×",
                      "only changed layers", ratio < 0.25,
                      f"first push {uploads[0] / 1e6:.0f} MB (compressed), second {uploads[1] / 1e6:.1f} MB "
                      f"of a {size / 1e6:.0f} MB image")


def registry_cache(project: Project, log=print) -> list[Figure]:
    """A fresh engine building from the registry cache against a cold build on this engine, each the
    whole `invoke build` timed as a process from outside. The fresh engine and the registry are the
    private ones of the integration tests (tests/integration/private.py: needs root); the fresh
    engine is offline, so it can only have built from the cache."""
    from tests.integration.private import PrivateEngine, PrivateRegistry, untag_registry

    client = connect()
    release = load_release(project, RELEASE).release
    registry, fresh = PrivateRegistry(), PrivateEngine()

    def timed(*args, env=None) -> tuple[float, dict]:
        started = time.monotonic()
        result = run_child([sys.executable, "-m", "invoke", *args], cwd=scratch, env={**os.environ, **(env or {})})
        elapsed = time.monotonic() - started
        if result.returncode != 0:
            raise RuntimeError(f"invoke {' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        return elapsed, flat_record(scratch, RELEASE)

    with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-cache-") as tmp:
        scratch = Path(tmp) / "project"
        for part in ("manifests", "constraints", "templates"):
            shutil.copytree(project.root / part, scratch / part)
        (scratch / "tasks.py").write_text(USER_TASKS)
        try:
            registry.start()
            fresh.start()
            fresh.load_image(client, release.base.image)
            log("registry cache: cold build on this engine")
            cold, cold_record = timed("build", "--release", RELEASE, "--no-cache", "--force")
            log("registry cache: push the cache")
            push, _ = timed("push", "--release", RELEASE, "--registry", registry.address, "--cache-to",
                            registry.address)
            log("registry cache: build on a fresh engine with --cache-from")
            warm, record = timed("build", "--release", RELEASE, "--cache-from", registry.address,
                                 env={"DOCKER_HOST": fresh.host})
        finally:
            fresh.close()
            untag_registry(client, registry.address)  # what the push tagged here; the cold image with it
            registry.close()
    same = record["image_id"] == cold_record["image_id"]
    ratio = warm / cold
    return [
        Figure("fresh engine, `--cache-from` registry / cold build (whole `invoke build`)", [ratio], "×", "≤ 0.15",
               ratio <= 0.15,
               f"fresh engine {warm:.1f} s ({record['cached_steps']}/{record['steps']} steps cached, "
               f"{'the same image id' if same else 'ANOTHER image id'}) against cold {cold:.1f} s; "
               f"pushing the cache took {push:.1f} s"),
    ]


def _run(client, image: str, script: str) -> str:
    ran = run_once(client, image, [script], entrypoint=["/bin/sh", "-c"], what=f"{script!r} in {image}",
                   deadline_s=300)
    if ran.exit_code != 0:
        raise RuntimeError(f"{script!r} in {image} exited {ran.exit_code}: {ran.stderr[-600:]}")
    return ran.stdout.strip()


def _apt_layers(client, image: str) -> int:
    """Size of the layers apt installed (the interpreter, and build tools where a release has them)."""
    return sum(int(e["Size"]) for e in client.history(image) if "apt-get install" in e.get("CreatedBy", ""))


def run_bench(project: Project, runs: int = 3, registry: str | None = None, out_path: Path | None = None,
              log=print, release: str = RELEASE, skip_path_only: bool = False, cache: bool = False) -> Path:
    if cache:
        return _write_cache_section(project, runs, out_path, log)
    if release not in BUMPS:
        raise UserError(f"--release {release!r}: the benchmark knows {', '.join(BUMPS)}")
    registry = registry_host(registry) if registry is not None else None
    bench = Bench(project, runs, log, release)
    if skip_path_only:
        return _skip_path_section(bench, out_path or project.root / "BENCHMARKS.md", runs)
    started = time.time()
    figures = []
    with tempfile.TemporaryDirectory(prefix="ngcbuild-bench-") as tmp:
        scratch = Path(tmp) / "project"
        for part in ("manifests", "constraints", "templates"):
            shutil.copytree(project.root / part, scratch / part)
        try:
            if release in FULL:
                figures += bench.overhead()
                log("unchanged release")
                figures += bench.unchanged()
            else:
                figures += bench.cold_only()
            log("one pin changed")
            pin_figure, pin_record = bench.one_pin(scratch)
            figures.append(pin_figure)
            log("size")
            _, dev_record = bench.ours(project, no_cache=False)
            figures += bench.size(dev_record)
            if release in FULL:
                log("render")
                figures += bench.render_speed(scratch)
            if registry:
                log("push reuse")
                figures.append(bench.push_reuse(registry, dev_record, pin_record))
        finally:
            bench.cleanup()
    path = out_path or project.root / "BENCHMARKS.md"
    report = _report(figures, runs, time.time() - started, release)
    if release in FULL:
        # dev's report is the page; another release's section, kept between markers, follows it.
        kept = _sections(path.read_text()) if path.exists() else ""
        path.write_text(report + kept)
    else:
        path.write_text(_with_section(path.read_text() if path.exists() else "# Benchmarks\n", release, report))
    (project.build / f"bench-{release}.json").parent.mkdir(parents=True, exist_ok=True)
    (project.build / f"bench-{release}.json").write_text(
        json.dumps([f.__dict__ for f in figures], indent=2, default=str))
    return path


def _skip_path_section(bench: Bench, path: Path, runs: int) -> Path:
    """Only the unchanged-release figures (seconds, not the 20 minutes of cold builds), in a section of
    their own: `invoke bench --skip-path`."""
    started = time.time()
    report = _report(bench.skip_path(), runs, time.time() - started, bench.release, SKIP_PATH_METHOD)
    key = f"{bench.release} (unchanged-release path)"
    path.write_text(_with_section(path.read_text() if path.exists() else "# Benchmarks\n", key, report))
    return path


def _write_cache_section(project: Project, runs: int, out_path: Path | None, log) -> Path:
    """`invoke bench --cache-figure`: its own section of BENCHMARKS.md (a run is ~10 minutes on 2 cores)."""
    started = time.time()
    figures = []
    for run in range(runs):
        log(f"registry cache run {run + 1}/{runs}")
        figures += registry_cache(project, log)
    samples = [f.samples[0] for f in figures]
    merged = Figure(figures[0].name, samples, "×", "≤ 0.15", statistics.median(samples) <= 0.15,
                    "; ".join(f.note for f in figures))
    verdict = "met" if merged.met else "**missed**"
    report = "\n".join([
        "# Benchmarks",
        "",
        f"Written by `invoke bench --cache-figure` on {time.strftime('%Y-%m-%d')} ({platform.node()}: "
        f"{platform.machine()}, {_cpus()} cores, Docker engine {connect().version().get('Version')}), "
        f"{runs} run(s), {(time.time() - started) / 60:.0f} minutes in all.",
        "",
        "| figure | median | spread | target | | notes |",
        "|---|---|---|---|---|---|",
        f"| {merged.name} | {merged.median:.3g} {merged.unit} | {merged.spread()} | {merged.target} | {verdict} "
        f"| {merged.note} |",
        CACHE_METHOD,
    ])
    path = out_path or project.root / "BENCHMARKS.md"
    path.write_text(_with_section(path.read_text() if path.exists() else "# Benchmarks\n", "registry-cache",
                                  report))
    return path


CACHE_METHOD = """
Method: `invoke build --release dev --no-cache --force` on this engine (cold), then `invoke push
--cache-to` of its image and stage images to a private registry, then `invoke build --release dev
--cache-from` on a private engine that holds nothing but the base image and has no network (so it
can only take its steps from the cache). Both builds are timed as whole processes, from outside, in
the same run. `cuda-dev` (6.6 GB) through the registry cache: not measured (its pull and push are
several minutes each on these 2 cores; left for a runner with the disk and time for it).

Why the ratio cannot reach 0.15 for `dev` on this machine: the fresh engine downloads and extracts
the cache of every stage, ~1 GB compressed and ~2.7 GB on disk (the builder stage holds the
installed packages under /stage, the final image holds them again in its own layers), on the same
2 cores; the cold build it is compared with does no compiling at all (a wheel from the local
wheelhouse, pure-Python pins from a nearby index). The cache turns compute into transfer: the
fresh engine ran no step and produced the very image of the cold build; for a release whose cold
build compiles for hours (SCALING.md) the same transfer is a small fraction of it.
"""


def _marks(release: str) -> tuple[str, str]:
    return f"<!-- invoke bench --release {release} -->", f"<!-- end {release} -->"


NOTES_MARK = "<!-- written by hand, kept by invoke bench -->"


def _sections(text: str) -> str:
    """What follows dev's report in BENCHMARKS.md and a new run of it keeps: the notes written by hand
    on its figures (after NOTES_MARK), then the other releases' sections, each between its markers."""
    found = [i for i in (text.find(NOTES_MARK), text.find("<!-- invoke bench --release ")) if i >= 0]
    return "\n" + text[min(found):] if found else ""


def _with_section(text: str, release: str, report: str) -> str:
    begin, end = _marks(release)
    body = report.replace("# Benchmarks\n", f"## `{release}`\n", 1)
    section = f"{begin}\n{body.rstrip()}\n{end}\n"
    if begin in text and end in text:
        head, _, rest = text.partition(begin)
        return head + section + rest.partition(end)[2].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + section


BUILD_METHOD = [
    "Method: every figure is measured on the `{release}` release in one run of the task, and speed figures",
    "are ratios of two builds measured side by side (alternating), so a busy machine slows both.",
    "Cold = `--no-cache`; warm = the engine's layer cache holds every step. The plain `docker build`",
    "gets the very same context tar (rendered files plus the CA bundle and wheels), with the classic",
    "builder that docker-py uses (`DOCKER_BUILDKIT=0`). Values are medians; spread is min–max.",
]
SKIP_PATH_METHOD = [
    "Method: `build` of `{release}` whose image exists and whose inputs are as build/{release}/ was rendered from",
    "them, each command a process timed from outside, the commands alternating in one run. `invoke` and",
    "`ngcbuild` are the console scripts found on PATH; pyenv's shim is timed too where there is one.",
    "Values are medians; spread is min–max.",
]


def _report(figures: list[Figure], runs: int, elapsed: float, release: str = RELEASE,
            method: list[str] = BUILD_METHOD) -> str:
    rows = []
    for f in figures:
        verdict = "" if f.met is None else ("met" if f.met else "**missed**")
        rows.append(f"| {f.name} | {f.median:.3g} {f.unit} | {f.spread()} | {f.target} | {verdict} | {f.note} |")
    rebuilt = next((f.extra["rebuilt"] for f in figures if "rebuilt" in f.extra), [])
    return "\n".join([
        "# Benchmarks",
        "",
        f"Written by `invoke bench` on {time.strftime('%Y-%m-%d')} ({platform.node()}: "
        f"{platform.machine()}, {_cpus()} cores, Docker engine {connect().version().get('Version')}), "
        f"{runs} runs per timed figure, {elapsed / 60:.0f} minutes in all.",
        "",
        *(line.format(release=release) for line in method),
        "",
        "| figure | median | spread | target | | notes |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        *(["Layers rebuilt after the one-pin change: " + "; ".join(rebuilt) + ".", ""] if rebuilt else []),
    ])


def _cpus() -> int:
    import os

    return os.cpu_count() or 0
