"""Host mode: run the smoke checks with a host's own Python (a GPU machine with PyTorch and no
Docker), against expectations generated from that environment or rendered from a manifest.

Image-only checks (entrypoint, labels, pins; marker `image`) do not run here: there is no image.
Everything else is the same: the same check files, the GPU gate, --perf, JUnit and the summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import NgcbuildError, SmokeFailed, UserError
from ngcbuild.core.interrupts import Interrupted, install, leave
from ngcbuild.smoke.checks.gpu_facts import TORCH_API_SINCE, cudnn_string, nccl_tuple, release_at_least
from ngcbuild.smoke.junit import counts, read_junit
from ngcbuild.smoke.perf import perf_report, read_measured, render_perf, write_report
from ngcbuild.smoke.staging import stage_expectations, stage_pytest
from ngcbuild.smoke.suite_output import JUNIT_LIMIT, read_output
from ngcbuild.smoke.summary import render_table
from ngcbuild.workspace.release_dir import EXPECTED, JUNIT, PERF_MEASURED, ReleaseDir

CHECKS_DIR = Path(__file__).parent / "checks"
HOST_DIR = "host"  # build/host/: expected.json, smoke-junit.xml, perf.json of the last host run
TIMEOUT_S = 1800

# Distributions that carry a component, by canonical name prefix (DALI ships per CUDA major:
# nvidia-dali-cuda120; TensorRT as tensorrt or tensorrt-cu12).
COMPONENT_DISTRIBUTIONS = {
    "apex": ("apex",),
    "dali": ("nvidia-dali",),
    "tensorrt": ("tensorrt",),
    "transformer_engine": ("transformer-engine",),
}

# Runs in the host's Python: what its PyTorch reports, without needing a GPU.
PROBE = r"""
import importlib.metadata as m, json, os, sys
facts = {"python": "%d.%d" % sys.version_info[:2],
         "distributions": {d.metadata["Name"]: d.version for d in m.distributions() if d.metadata["Name"]}}
try:
    import torch
except ImportError as exc:
    facts["torch_error"] = str(exc)
else:
    facts["torch"] = torch.__version__
    facts["site_packages"] = os.path.dirname(os.path.dirname(torch.__file__))
    facts["cuda"] = torch.version.cuda
    facts["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    try:
        nccl = torch.cuda.nccl.version()  # a CPU-only build has no NCCL
        facts["nccl"] = list(nccl[:3]) if isinstance(nccl, tuple) else nccl
    except (AttributeError, RuntimeError):
        facts["nccl"] = None
    facts["mempool"] = (hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool")
                        and hasattr(torch.cuda.MemPool, "snapshot"))
print(json.dumps(facts))
"""


def interpreter_version(python: str) -> str:
    """MAJOR.MINOR of an interpreter: which locked pytest it runs the checks with."""
    try:
        done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise UserError(f"--python {python}: cannot run it ({exc.strerror})") from None
    if done.returncode != 0:
        raise UserError(f"--python {python}: exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def probe_environment(python: str) -> dict:
    try:
        done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=300)
    except OSError as exc:
        raise UserError(f"--python {python}: cannot run it ({exc.strerror})") from None
    if done.returncode != 0:
        raise UserError(f"{python} could not describe its environment: {done.stderr.strip()[-500:]}")
    facts = json.loads(done.stdout)
    if "torch_error" in facts:
        raise UserError(no_torch(python, facts["torch_error"]))
    return facts


def no_torch(python: str, why: str) -> str:
    return (f"{python} has no PyTorch ({why}): host mode runs the smoke checks with a Python that has torch; "
            f"name one with --python")


def require_torch(python: str) -> None:
    """One line, before anything is staged, where `python` cannot import torch (every check needs it)."""
    try:
        done = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True, timeout=300)
    except OSError as exc:
        raise UserError(f"--python {python}: cannot run it ({exc.strerror})") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        raise UserError(no_torch(python, lines[-1] if lines else f"import torch exited {done.returncode}"))


def expectations_from_env(facts: dict) -> dict:
    """expected.json for this environment: the versions found are what the checks expect.

    The version checks then prove that PyTorch's view (torch.version.cuda, cudnn, nccl) is
    self-consistent and that the GPU works; the manifest is not involved."""
    cudnn = cudnn_string(facts["cudnn"]) if facts.get("cudnn") else None
    nccl = ".".join(map(str, nccl_tuple(facts["nccl"]))) if facts.get("nccl") else None
    components = {"pytorch": facts["torch"]}
    for name, value in (("cuda", facts.get("cuda")), ("cudnn", cudnn), ("nccl", nccl)):
        if value:
            components[name] = value
    distributions = {canonicalize_name(k): v for k, v in facts["distributions"].items()}
    for component, prefixes in COMPONENT_DISTRIBUTIONS.items():
        for dist, version in sorted(distributions.items()):
            if dist.startswith(prefixes):
                components[component] = version
                break
    # The MemPool check reads MemPool.snapshot() (2.6); PyTorch 2.5 has the class without it.
    snapshot_since = TORCH_API_SINCE["torch.cuda.MemPool.snapshot()"]
    mempool = facts.get("mempool") and release_at_least(facts["torch"], snapshot_since)
    return {
        "release": "host",
        "tag": None,
        "python": {"version": facts["python"], "site_packages": facts["site_packages"]},
        "packages": {},
        "components": components,
        "components_in_image": sorted(components),
        "gpu": {"required": False, "min_compute_capability": None, "cuda": facts.get("cuda"),
                "cudnn": cudnn, "nccl": nccl, "features": ["mempool"] if mempool else []},
        # The stack checks that need the image (linker cache, CUDA_HOME, ldd) are deselected in host mode.
        "stack": {"modules": {"pytorch": {"module": "torch", "version": facts["torch"]}}, "libraries": {},
                  "cuda_home": None, "cuda_wheels": None},
        "source": "generated from the environment of the host's Python (invoke smoke --host --expect-from-env)",
    }


def host_args(require_gpu: bool, perf: bool, junit: Path, measured: Path) -> list[str]:
    # -m "not image": the checks of the image itself have nothing to check on a host.
    args = [f"--junitxml={junit}", "-o", "junit_family=xunit1", "-p", "no:cacheprovider", "-q", "-rs",
            f"--rootdir={CHECKS_DIR}", "-m", "not image"]
    if require_gpu:
        args.append("--require-gpu")
    if perf:
        args += ["--perf", f"--perf-out={measured}"]
    return args


def run_host(build_dir: Path, expected_json: bytes, release: str, python: str | None = None,
             require_gpu: bool = False, perf: bool = False, out=sys.stdout) -> dict:
    """Run the checks with `python` (default: this interpreter); results into build_dir/host/."""
    python = python or sys.executable
    require_torch(python)
    directory = build_dir / HOST_DIR
    ReleaseDir.of(directory).write(EXPECTED, expected_json)
    print(f"smoke (host): {release} expectations, checks run by {python}"
          f"{'; --require-gpu: skips fail' if require_gpu else ''}{'; with --perf' if perf else ''}",
          file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="ngcbuild-host-smoke-") as tmp:
        tmp = Path(tmp)
        stage_expectations(tmp / "expect", expected_json)
        (tmp / "out").mkdir()
        stage_pytest(tmp / "pytest", interpreter_version(python), build_dir)
        command = [python, str(CHECKS_DIR / "run_checks.py"), str(CHECKS_DIR),
                   *host_args(require_gpu, perf, tmp / "out" / JUNIT, tmp / "out" / PERF_MEASURED)]
        env = {**os.environ, "NGCBUILD_SMOKE_DIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}
        exit_code = _stream(command, env, out)
        junit = read_output(tmp / "out", JUNIT, JUNIT_LIMIT)
        if junit is None:
            raise SmokeFailed(f"host smoke wrote no JUnit report (exit {exit_code})")
        ReleaseDir.of(directory).write(JUNIT, junit)
        measured = read_measured(tmp / "out") if perf else None
    rows = read_junit(junit)
    print(render_table(rows), file=out, end="", flush=True)
    total = counts(rows)
    result = {"junit": str(directory / JUNIT), "exit_code": exit_code, "passed": total.passed,
              "failed": total.failed, "errors": total.errors, "skipped": total.skipped}
    if perf:
        report = perf_report(release, None, measured)
        result["perf"] = str(write_report(directory, report))
        print(render_perf(report), file=out, end="", flush=True)
    print(f"smoke (host): JUnit: {directory / JUNIT}", file=out, flush=True)
    if exit_code != 0:
        raise SmokeFailed(f"host smoke failed ({total.line()}); "
                          f"see {directory / JUNIT}")
    return result


def _stream(command: list[str], env: dict, out) -> int:
    """Run the checks, copying their output line by line; kill them after TIMEOUT_S."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        timer = threading.Timer(TIMEOUT_S, process.kill)
        timer.start()
        try:
            for line in process.stdout:
                out.write(line)
                out.flush()
        finally:
            timer.cancel()
        code = process.wait()
    if code < 0:
        raise SmokeFailed(f"host smoke was killed (signal {-code}); limit {TIMEOUT_S}s")
    return code


def main(argv=None) -> int:
    """`python -m ngcbuild.smoke.host` for a GPU machine without invoke: expectations from the env.
    Bad input (no PyTorch in that Python, one that does not run) is one line and exit 2; failed checks 1."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter whose PyTorch to check")
    parser.add_argument("--require-gpu", action="store_true", help="a GPU check that would skip fails instead")
    parser.add_argument("--perf", action="store_true", help="also measure the performance figures (perf.json)")
    parser.add_argument("--build-dir", default="build", help="where host/ (JUnit, expected.json, perf.json) goes")
    options = parser.parse_args(argv)
    try:
        facts = probe_environment(options.python)
        expected = json.dumps(expectations_from_env(facts), indent=2, sort_keys=True).encode() + b"\n"
        run_host(Path(options.build_dir), expected, "host", options.python, options.require_gpu, options.perf)
    except NgcbuildError as exc:
        print(f"ngcbuild: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    from ngcbuild.core import console

    install()  # an interrupt is one line and its exit status, never a traceback
    console.install()  # a closed or broken stdout, any locale: the one way to print
    try:
        sys.exit(main())
    except Interrupted as exc:
        leave(exc)
