"""Host side of the smoke suite: run the in-image checks in a container of the built image.

The checks (smoke/checks/) and a copy of the host's pytest are mounted read-only, never shipped in
the image; expectations come from the manifest (expected.json) and the image's own config. The
container runs with the NGC flags (shm, memlock, stack) and, where a GPU is visible, a device request.
"""

from __future__ import annotations

import importlib.metadata
import json
import resource
import shutil
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import docker
from docker.types import DeviceRequest, Ulimit
from packaging.requirements import Requirement

from ..engine import connect
from ..errors import SmokeFailed, UserError
from ..manifest import load_release
from ..project import Project
from ..record import read_record, write_record
from ..render import render_files

CHECKS_DIR = Path(__file__).parent / "checks"
MOUNT = "/opt/ngcbuild"
JUNIT = "smoke-junit.xml"
TIMEOUT_S = 1800
NGC_RUN_FLAGS = {"shm_size": "1g", "memlock": -1, "stack": 67108864}
PYTEST_DISTS = ("pytest",)


def run_smoke(project: Project, name: str, require_gpu: bool = False, image: str | None = None,
              out=sys.stdout) -> dict:
    loaded = load_release(project, name)
    record = read_record(project.out(name)) if image is None else None
    # A build from a mirror (--base) expects that base in its labels; the record says which it was.
    base = record.get("base_image") if record else None
    rendered = render_files(project, loaded, base=base if base != loaded.release.base.image else None)
    directory = rendered.directory
    ref = image or record["image_id"]
    if record and record.get("context_sha256") != rendered.context_hash:
        print(f"warning: {ref[:19]} was built from another context than the manifest renders now; "
              f"rebuild to test the current manifest", file=out, flush=True)
    client = connect()
    try:
        config = client.inspect_image(ref)["Config"]
    except docker.errors.ImageNotFound:
        raise UserError(f"image {ref} not found; run `invoke build --release {name}` first") from None
    gpu = gpu_visible(client)
    print(f"smoke: {name} in {ref[:19]} (GPU {'visible' if gpu else 'not visible: GPU checks skip'}"
          f"{'; --require-gpu: skips fail' if require_gpu else ''})", file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="ngcbuild-smoke-") as tmp:
        tmp = Path(tmp)
        (tmp / "expect").mkdir()
        (tmp / "expect" / "expected.json").write_bytes(rendered.files["expected.json"])
        (tmp / "expect" / "image.json").write_text(json.dumps(config, indent=2))
        stage_pytest(tmp / "pytest")
        (tmp / "out").mkdir()
        (tmp / "out").chmod(0o777)
        exit_code = _run_container(client, ref, tmp, gpu, require_gpu, out)
        junit = tmp / "out" / JUNIT
        if not junit.is_file():
            raise SmokeFailed(f"smoke suite wrote no JUnit report (container exit {exit_code})")
        shutil.copyfile(junit, directory / JUNIT)
    counts = junit_counts(directory / JUNIT)
    result = {**counts, "image_id": client.inspect_image(ref)["Id"], "require_gpu": require_gpu,
              "gpu_visible": gpu, "exit_code": exit_code, "junit": str(directory / JUNIT),
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if record is not None:
        record["smoke"] = result
        write_record(directory, record)
    summary = ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "errors", "skipped"))
    print(f"smoke: {summary}; JUnit: {directory / JUNIT}", file=out, flush=True)
    if exit_code != 0:
        raise SmokeFailed(f"smoke suite failed for {name} ({summary}); see {directory / JUNIT}")
    return result


def gpu_visible(client: docker.APIClient) -> bool:
    """A GPU can be handed to containers: the NVIDIA runtime is registered and a device node exists."""
    runtimes = client.info().get("Runtimes") or {}
    return "nvidia" in runtimes and Path("/dev/nvidiactl").exists()


def stage_pytest(target: Path) -> None:
    """Copy the host's pytest and what it needs (pure Python) for the image's interpreter to import."""
    target.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    pending = list(PYTEST_DISTS)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            source = Path(dist.locate_file(file))
            if ".." in file.parts or file.suffix == ".pyc" or not source.is_file():
                continue
            destination = target / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        for requirement in dist.requires or ():
            req = Requirement(requirement)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                pending.append(req.name)


def run_flags(memlock: int) -> dict:
    """NGC's `docker run` flags: --shm-size=1g --ulimit memlock=<memlock> --ulimit stack=67108864."""
    return {"shm_size": NGC_RUN_FLAGS["shm_size"],
            "ulimits": [Ulimit(name="memlock", soft=memlock, hard=memlock),
                        Ulimit(name="stack", soft=NGC_RUN_FLAGS["stack"], hard=NGC_RUN_FLAGS["stack"])]}


def _run_container(client, ref: str, tmp: Path, gpu: bool, require_gpu: bool, out) -> int:
    command = ["python3", f"{MOUNT}/smoke/run_checks.py", f"--junitxml={MOUNT}/out/{JUNIT}", "-p", "no:cacheprovider",
               "-q", "-rs", f"--rootdir={MOUNT}/smoke", f"{MOUNT}/smoke"]
    if require_gpu:
        command.append("--require-gpu")
    binds = {
        str(CHECKS_DIR): {"bind": f"{MOUNT}/smoke", "mode": "ro"},
        str(tmp / "expect"): {"bind": f"{MOUNT}/expect", "mode": "ro"},
        str(tmp / "pytest"): {"bind": f"{MOUNT}/pytest", "mode": "ro"},
        str(tmp / "out"): {"bind": f"{MOUNT}/out", "mode": "rw"},
    }
    # memlock=-1 needs a host that allows it; where the engine may not raise it (a sandbox, rootless
    # Docker), run with the host's own hard limit and say so.
    for memlock in (NGC_RUN_FLAGS["memlock"], resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]):
        host_config = client.create_host_config(
            binds=binds, network_mode="none", **run_flags(memlock),
            device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])] if gpu else None,
        )
        container = client.create_container(
            ref, command=command, host_config=host_config, labels={"io.ngcbuild.smoke": "1"},
            environment={"PYTHONDONTWRITEBYTECODE": "1", "NGCBUILD_SMOKE_DIR": MOUNT},
        )
        try:
            try:
                client.start(container)
            except docker.errors.APIError as exc:
                if "rlimit" in str(exc) and memlock == NGC_RUN_FLAGS["memlock"]:
                    print(f"note: this engine may not set memlock=-1; running with the host's limit "
                          f"({resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]} bytes)", file=out, flush=True)
                    continue
                raise
            follower = threading.Thread(target=_follow_logs, args=(client, container, out), daemon=True)
            follower.start()
            try:
                status = client.wait(container, timeout=TIMEOUT_S)
            except Exception as exc:  # requests' ReadTimeout or a connection error
                raise SmokeFailed(f"smoke suite did not finish within {TIMEOUT_S}s ({type(exc).__name__})") from None
            follower.join(timeout=10)
            return int(status.get("StatusCode", 1))
        finally:
            client.remove_container(container, force=True)
    raise SmokeFailed("the engine refused to start the smoke container")


def _follow_logs(client, container, out) -> None:
    try:
        for chunk in client.logs(container, stream=True, follow=True):
            out.write(chunk.decode("utf-8", "replace"))
            out.flush()
    except docker.errors.APIError:
        pass


def junit_counts(path: Path) -> dict:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in total:
            total[key] += int(suite.get(key, 0))
    return {"passed": total["tests"] - total["failures"] - total["errors"] - total["skipped"],
            "failed": total["failures"], "errors": total["errors"], "skipped": total["skipped"]}
