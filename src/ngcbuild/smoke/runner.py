"""Host side of the smoke suite: run the in-image checks in a container of the built image.

The checks (smoke/checks/) and a copy of the host's pytest are mounted read-only, never shipped in
the image; expectations come from the manifest (expected.json) and the image's own config. The
container runs with the NGC flags (shm, memlock, stack) and, where a GPU is visible, a device request.
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import docker
from docker.types import DeviceRequest

from ngcbuild.core.errors import SmokeFailed, UserError
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.engine.client import connect
from ngcbuild.engine.container import run_once
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_as_built
from ngcbuild.smoke.base_stack import with_base_stack
from ngcbuild.smoke.junit import counts, read_junit
from ngcbuild.smoke.perf import (
    DEFAULT_THRESHOLD,
    perf_report,
    read_measured,
    render_perf,
    with_baseline,
    write_report,
)
from ngcbuild.smoke.run_limits import MOST_ATTEMPTS, Limits
from ngcbuild.smoke.staging import stage_expectations, stage_pytest
from ngcbuild.smoke.suite_output import JUNIT_LIMIT, read_output
from ngcbuild.smoke.summary import render_table
from ngcbuild.workspace.record import read_record, record_path, require, write_record
from ngcbuild.workspace.release_dir import EXPECTED, JUNIT, PERF_MEASURED, ReleaseDir
from ngcbuild.workspace.sections import SmokeRun, utc_timestamp

CHECKS_DIR = Path(__file__).parent / "checks"
MOUNT = "/opt/ngcbuild"
TIMEOUT_S = 1800
VERSION_TIMEOUT_S = 120


def run_smoke(project: Project, name: str, require_gpu: bool = False, image: str | None = None,
              perf: bool = False, baseline: str | None = None, threshold: float = DEFAULT_THRESHOLD,
              out=sys.stdout) -> SmokeRun:
    """Every kind of release alike: the expectations are the render's (a derived release's: its base's
    checks and its own, with the base's stack read from the base image first: base_stack.py)."""
    loaded = load_release(project, name)
    if (perf or baseline) and loaded.derived is not None:
        raise UserError("--perf and --baseline measure a release's GPU figures; a derived release inherits its "
                        "base's: measure the base")
    record = read_record(project.out(name)) if image is None else None
    # A build from a mirror (--base-image), or FROM a base by digest, expects that base in its labels;
    # the record says which it was.
    rendered = render_as_built(project, loaded, record.build if record else None)
    directory = rendered.directory
    ref = image or require(record.build.image_id, project.out(name), "image_id", "the id of the built image")
    if record and record.build.context_sha256 != rendered.context_hash:
        print(f"warning: {ref[:19]} was built from another context than the manifest renders now; "
              f"rebuild to test the current manifest", file=out, flush=True)
    client = connect()
    config = _image_config(client, ref, f"run `invoke build --release {name}` first")
    expected_json = with_base_stack(client, rendered, rendered.files[EXPECTED], printer(out))
    baseline_ref = _baseline_ref(project, baseline) if baseline else None
    if baseline_ref:
        _image_config(client, baseline_ref, "give --baseline a built release or an image reference")
    gpu = gpu_visible(client)
    print(f"smoke: {name} in {ref[:19]} (GPU {'visible' if gpu else 'not visible: GPU checks skip'}"
          f"{'; --require-gpu: skips fail' if require_gpu else ''}{'; with --perf' if perf else ''})",
          file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="ngcbuild-smoke-") as tmp:
        tmp = Path(tmp)
        stage_suite(tmp, expected_json, config, loaded.release.python.version, project.build)
        args = suite_args(require_gpu=require_gpu, perf=perf)
        exit_code = _run_container(client, ref, tmp, gpu, args, out)
        junit = read_output(tmp / "out", JUNIT, JUNIT_LIMIT)
        if junit is None:
            raise SmokeFailed(f"smoke suite wrote no JUnit report (container exit {exit_code})")
        directory.mkdir(parents=True, exist_ok=True)  # --image: R may never have been built here
        ReleaseDir.of(directory).write(JUNIT, junit)
        measured = read_measured(tmp / "out") if perf else None
    rows = read_junit(junit)
    total = counts(rows)
    image_id = client.inspect_image(ref)["Id"]
    result = SmokeRun.of(passed=total.passed, failed=total.failed, errors=total.errors, skipped=total.skipped,
                         image_id=image_id, require_gpu=require_gpu, gpu_visible=gpu, exit_code=exit_code,
                         junit=str(directory / JUNIT), at=utc_timestamp())
    print(render_table(rows), file=out, end="", flush=True)
    regressed = []
    if perf:
        report = perf_report(name, image_id, measured)
        if baseline_ref:
            other = _baseline_perf(client, baseline_ref, expected_json, gpu, project.build, out)
            report = with_baseline(report, perf_report(baseline, client.inspect_image(baseline_ref)["Id"], other),
                                   baseline_ref, threshold)
            regressed = report["baseline"]["regressions"]
        result = replace(result, perf=str(write_report(directory, report)))
        print(render_perf(report), file=out, end="", flush=True)
    if record is not None:
        write_record(directory, replace(record, smoke=result))
    summary = total.line()
    print(f"smoke: {summary}; JUnit: {directory / JUNIT}", file=out, flush=True)
    if exit_code != 0:
        raise SmokeFailed(f"smoke suite failed for {name} ({summary}); see {directory / JUNIT}")
    if regressed:
        raise SmokeFailed(f"performance regressions against {baseline}: "
                          + ", ".join(f"{r['metric']} {r['change']:+.1%}" for r in regressed))
    return result


def suite_args(require_gpu: bool = False, perf: bool = False, perf_only: bool = False,
               mount: str = MOUNT) -> list[str]:
    """pytest arguments after the checks folder: the GPU gate, the performance smoke and its output.

    JUnit in the xunit1 family, because it carries each check's `figure` property."""
    args = [f"--junitxml={mount}/out/{JUNIT}", "-o", "junit_family=xunit1"]
    if require_gpu:
        args.append("--require-gpu")
    if perf or perf_only:
        args += ["--perf", f"--perf-out={mount}/out/{PERF_MEASURED}"]
    if perf_only:
        args += ["-m", "perf"]
    return args


def _image_config(client, ref: str, hint: str) -> dict:
    try:
        return client.inspect_image(ref)["Config"]
    except docker.errors.ImageNotFound:
        raise UserError(f"image {ref} not found; {hint}") from None


def _baseline_ref(project: Project, other: str) -> str:
    """--baseline names a release built here (its record gives the image) or an image reference."""
    path = record_path(project.out(other)) if "/" not in other and ":" not in other else None
    if path is not None and path.is_file():
        return require(read_record(project.out(other)).build.image_id, project.out(other), "image_id",
                       "the id of the built image")
    return other


def stage_suite(tmp: Path, expected_json: bytes, config: dict, python: str, build_dir: Path) -> None:
    """What the container mounts beside the checks: expectations, the image's config, the locked
    pytest of the image's Python (`python`, MAJOR.MINOR) and a writable folder for the results."""
    stage_expectations(tmp / "expect", expected_json)
    (tmp / "expect" / "image.json").write_text(json.dumps(config, indent=2))
    stage_pytest(tmp / "pytest", python, build_dir)
    (tmp / "out").mkdir()
    (tmp / "out").chmod(0o777)


def _baseline_perf(client, ref: str, expected_json: bytes, gpu: bool, build_dir: Path, out) -> dict | None:
    """The performance smoke alone in the baseline image, on the same GPU(s)."""
    print(f"perf baseline: {ref[:40]}", file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="ngcbuild-baseline-") as tmp:
        tmp = Path(tmp)
        # The baseline may be any image: its own interpreter says which pytest it needs.
        stage_suite(tmp, expected_json, client.inspect_image(ref)["Config"], image_python(client, ref), build_dir)
        exit_code = _run_container(client, ref, tmp, gpu, suite_args(perf_only=True), out)
        measured = read_measured(tmp / "out")
    if exit_code != 0:
        print(f"warning: the baseline's performance smoke exited {exit_code}", file=out, flush=True)
    return measured


def run_suite(client, ref: str, expected_json: bytes, python: str, build_dir: Path, args: list[str], out,
              labels: dict | None = None):
    """The suite in a container of `ref`, no record and no GPU (as `ngcbuild mutate` runs it against a
    mutant): (exit status, the JUnit rows or None where none was written). `args` follow suite_args();
    `labels` go on the container besides the smoke label (mutate finds its run's containers by them)."""
    with tempfile.TemporaryDirectory(prefix="ngcbuild-suite-") as tmp:
        tmp = Path(tmp)
        stage_suite(tmp, expected_json, client.inspect_image(ref)["Config"], python, build_dir)
        exit_code = _run_container(client, ref, tmp, False, [*suite_args(), *args], out, labels)
        junit = read_output(tmp / "out", JUNIT, JUNIT_LIMIT)
        return exit_code, read_junit(junit) if junit is not None else None


def collect_in_image(client, ref: str, expected_json: bytes, python: str, build_dir: Path) -> list[str]:
    """The checks pytest collects inside the image, staged as `run_smoke` stages them (with --perf,
    so every check counts); proof that the suite starts there, without running a check."""
    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="ngcbuild-collect-") as tmp:
        tmp = Path(tmp)
        stage_suite(tmp, expected_json, client.inspect_image(ref)["Config"], python, build_dir)
        exit_code = _run_container(client, ref, tmp, False, [*suite_args(perf=True), "--collect-only"], out)
    if exit_code != 0:
        raise SmokeFailed(f"collecting the smoke suite in {ref[:40]} exited {exit_code}:\n{out.getvalue()[-3000:]}")
    return [line for line in out.getvalue().splitlines() if "::" in line]


def gpu_visible(client: docker.APIClient) -> bool:
    """A GPU can be handed to containers: the NVIDIA runtime is registered and a device node exists."""
    runtimes = client.info().get("Runtimes") or {}
    return "nvidia" in runtimes and Path("/dev/nvidiactl").exists()


def image_python(client, ref: str) -> str:
    """MAJOR.MINOR of the image's python3."""
    ran = run_once(client, ref, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], entrypoint=["python3"],
                   what=f"{ref[:40]}: python3 reporting its version", deadline_s=VERSION_TIMEOUT_S,
                   failure=SmokeFailed, labels={"io.ngcbuild.smoke": "1"})
    if ran.exit_code != 0:
        raise SmokeFailed(f"{ref[:40]}: python3 could not report its version: {(ran.stdout + ran.stderr)[-300:]}")
    return ran.stdout.strip()


def suite_command(args: list[str], checks: str = f"{MOUNT}/smoke") -> list[str]:
    """The command line of the suite in a container (or, with `checks`, anywhere the staging lies)."""
    return ["python3", f"{checks}/run_checks.py", "-p", "no:cacheprovider",
            "-q", "-rs", f"--rootdir={checks}", checks, *args]


def _run_container(client, ref: str, tmp: Path, gpu: bool, args: list[str], out, labels: dict | None = None) -> int:
    command = suite_command(args)
    binds = {
        str(CHECKS_DIR): {"bind": f"{MOUNT}/smoke", "mode": "ro"},
        str(tmp / "expect"): {"bind": f"{MOUNT}/expect", "mode": "ro"},
        str(tmp / "pytest"): {"bind": f"{MOUNT}/pytest", "mode": "ro"},
        str(tmp / "out"): {"bind": f"{MOUNT}/out", "mode": "rw"},
    }
    limits = Limits()  # NGC's flags, lowered where the engine may not set them (run_limits.py)
    for _ in range(MOST_ATTEMPTS):
        host_config = client.create_host_config(
            binds=binds, network_mode="none", **limits.host_config_flags(),
            device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpu else None,
        )
        try:
            ran = run_once(client, ref, command, what="smoke suite", deadline_s=TIMEOUT_S, failure=SmokeFailed,
                           host_config=host_config, labels={"io.ngcbuild.smoke": "1", **(labels or {})},
                           environment={"PYTHONDONTWRITEBYTECODE": "1", "NGCBUILD_SMOKE_DIR": MOUNT},
                           on_output=_shown_on(out))
        except docker.errors.APIError as exc:
            note = limits.lower(str(exc)) if "rlimit" in str(exc) else None
            if note is None:
                raise
            print(note, file=out, flush=True)
            continue
        return ran.exit_code
    raise SmokeFailed("the engine refused to start the smoke container")


def _shown_on(out):
    """The suite's output as it comes: a run takes minutes."""
    def show(text: str) -> None:
        out.write(text)
        out.flush()
    return show

