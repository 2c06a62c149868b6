"""Faults against a real engine and a real registry, and what each must leave behind: a clear
message, no traceback, no tag moved to a partial image, no containers or temporary files, the local
image kept, and a rerun that succeeds.

The faults are done to a private dockerd and private registries (see private.py), never to the
shared ones. Builds are tiny (the base image, one RUN step and a label) so every fault is quick.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import pytest

from ngcbuild.render.stamp import STAMP

from ..conftest import ScratchProject, split_importtime
from ..helpers import minimal_manifest
from .private import FaultProxy, PrivateEngine, PrivateRegistry, free_port

pytestmark = [pytest.mark.engine, pytest.mark.reliability]

BASE = "debian:bookworm-slim"
MANIFEST = minimal_manifest("a tiny release for fault tests", torch=None)


# A RUN step that says it is running, then waits until the test lets it go (`FaultProject.release_steps`):
# the test knows the step is running when it acts, and no sleep stands in for a window.
GO = "/tmp/ngcbuild-test-go"
GATED = "echo step-running-{{ release.release }} && until [ -e %s ]; do sleep 0.1; done" % GO


def _interruptible() -> None:
    """In the child, before exec: SIGINT back to its default, whatever the shell that started the test
    run did (a background job or nohup ignores it, and an ignored SIGINT stays ignored across exec, so
    Python would install no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def dockerfile(run: str) -> str:
    """A tiny Dockerfile template: the base image, one RUN step, a label naming the release (the build adds
    two LABEL steps of its own: the context hash and the release, so a build has 5 steps)."""
    return ("FROM {{ release.base.image }}\n"
            f"RUN {run}\n"
            'LABEL io.ngcbuild.test.release="{{ release.release }}"\n')


class FaultProject(ScratchProject):
    """A scratch project whose releases build on the private engine with a test Dockerfile."""

    def __init__(self, root: Path, engine: PrivateEngine):
        super().__init__(root)
        self.engine = engine
        self.tmp = root.parent / "tmp"  # TMPDIR of every invoke: must stay empty
        self.started: list[subprocess.Popen] = []

    def release(self, name: str) -> str:
        self.manifest(name, MANIFEST)
        self.constraints(name, "pip==26.3\n")
        return name

    def template(self, run: str) -> None:
        (self.root / "templates" / "image" / "Dockerfile.j2").write_text(dockerfile(run))

    def env(self, **extra) -> dict:
        self.tmp.mkdir(exist_ok=True)
        return {"DOCKER_HOST": self.engine.host, "PIP_FIND_LINKS": "", "TMPDIR": str(self.tmp), **extra}

    def run(self, *args, timeout=300, **env) -> subprocess.CompletedProcess:
        return self.invoke_env(self.env(**env), *args, timeout=timeout)

    def start(self, *args, **env) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-m", "invoke", *args], cwd=self.root, text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, **self.env(**env)}, preexec_fn=_interruptible)
        self.started.append(process)
        return process

    def close(self) -> None:
        """End the builds a failed test left waiting at a gated step."""
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.communicate()

    def running_steps(self, releases: list[str], timeout: float = 120) -> dict[str, str]:
        """Wait until the gated step of every release runs at once; release -> its container."""
        client, deadline = self.engine.client(), time.monotonic() + timeout
        while True:
            running = {release: c["Id"] for c in client.containers(filters={"status": "running"})
                       for release in releases if f"step-running-{release} " in c["Command"]}
            if len(running) == len(releases):
                return running
            if time.monotonic() > deadline:
                raise AssertionError(f"the steps of {releases} never ran at once (running: {sorted(running)})")
            time.sleep(0.2)

    def release_steps(self, containers: dict[str, str]) -> None:
        """Let gated steps finish: create the file they wait for, inside each step's container."""
        client = self.engine.client()
        for container in containers.values():
            client.exec_start(client.exec_create(container, ["touch", GO]))

    def run_gated(self, release: str) -> subprocess.CompletedProcess:
        """Build a release whose step is gated, letting the step go as soon as it runs."""
        process = self.start("build", "--release", release)
        self.release_steps(self.running_steps([release]))
        out, err = process.communicate(timeout=300)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def leftovers(self, release: str) -> list[str]:
        """Containers on the private engine, hidden files in build/R/ (a journal, a record being
        written) and anything in TMPDIR."""
        found = [f"container {c['Id'][:12]} ({c['Status']})" for c in self.engine.client().containers(all=True)]
        directory = self.root / "build" / release
        hidden = sorted(directory.glob(".*")) if directory.exists() else []
        # .build.lock stays by design (unlinking a flock'ed file lets a waiting build lock an orphan);
        # after a build it must not be held. .rendered.json is what render wrote, like the Dockerfile.
        found += [f"file {p.name}" for p in hidden if p.name not in (".build.lock", STAMP)]
        found += [f"held {p.name}" for p in hidden if p.name == ".build.lock" and _held(p)]
        found += [f"temporary {p}" for p in self.tmp.glob("*")] if self.tmp.exists() else []
        return found

    def tag_id(self, release: str) -> str | None:
        try:
            return self.engine.client().inspect_image(f"nvcr.io/nvidia/pytorch:{release}-py3")["Id"]
        except docker.errors.ImageNotFound:
            return None

    def hold_tag(self, release: str) -> str:
        """Point the release's tag at the base image, as an earlier good build would have: a fault
        must leave it there."""
        client = self.engine.client()
        client.tag(BASE, "nvcr.io/nvidia/pytorch", f"{release}-py3", force=True)
        return client.inspect_image(BASE)["Id"]

    def record(self, release: str) -> dict | None:
        path = self.root / "build" / release / "record.json"
        return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture(scope="module")
def fault_engine(private_dockerd):
    """The session's private engine, emptied for this module (whose tests share a pushable image) and after it."""
    assert private_dockerd.base == BASE, f"the private engine holds {private_dockerd.base}, the releases here use {BASE}"
    private_dockerd.reset(BASE)
    yield private_dockerd
    private_dockerd.reset(BASE)


@pytest.fixture(scope="module")
def project(fault_engine, tmp_path_factory) -> FaultProject:
    project = FaultProject(tmp_path_factory.mktemp("faults") / "project", fault_engine)
    yield project
    project.close()


def _held(lock: Path) -> bool:
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def report(figures, name: str, result_text: str, leftovers: list[str], clean: bool) -> None:
    figures(suite="fault", case=name, clean=clean, traceback="Traceback" in result_text,
            leftovers=len(leftovers), leftover_items=leftovers)


# --- the engine is not there -------------------------------------------------------------------

class _Silent:
    """A socket that accepts connections and never answers: a hung engine."""

    def __init__(self, path: Path):
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(64)  # a backlog no build fills: each connection waits for its answer, none is refused

    def close(self):
        self.server.close()


@pytest.mark.parametrize("kind", ["no-socket", "stale-socket", "hung-engine", "closed-tcp-port"])
@pytest.mark.parametrize("path", ["full", "unchanged"])
def test_no_engine_is_a_clear_message_with_a_fix(kind, path, scratch, tmp_path, figures):
    """Either way `build` reaches the engine: after loading and rendering the release, or on the
    unchanged-release path (build/R/ rendered from these very inputs), whose client is the standard
    library's on a unix socket and the SDK's on TCP."""
    scratch.manifest("nothere", MANIFEST)
    scratch.constraints("nothere", "pip==26.3\n")
    if path == "unchanged":
        rendered = scratch.invoke("render", "--release", "nothere")
        assert rendered.returncode == 0 and (scratch.root / "build" / "nothere" / STAMP).is_file(), rendered.stderr
    holder = None
    if kind == "no-socket":
        host, reason = f"unix://{tmp_path}/docker.sock", f"{tmp_path}/docker.sock does not exist: no engine is running"
    elif kind == "stale-socket":  # a socket file nobody listens on (the daemon died)
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(str(tmp_path / "docker.sock"))
        stale.close()
        host, reason = f"unix://{tmp_path}/docker.sock", "connection refused"
    elif kind == "hung-engine":
        holder = _Silent(tmp_path / "docker.sock")
        host, reason = f"unix://{tmp_path}/docker.sock", "no answer within 10s"
    else:
        host, reason = f"tcp://127.0.0.1:{free_port()}", "connection refused"
    started = time.monotonic()
    try:
        result = scratch.invoke_env({"DOCKER_HOST": host, "PIP_FIND_LINKS": "", "PYTHONPROFILEIMPORTTIME": "1"},
                                    "build", "--release", "nothere", timeout=120)
    finally:
        if holder:
            holder.close()
    elapsed = time.monotonic() - started
    imported, message = split_importtime(result.stderr)
    # which path answered: only the full one loads the manifest (pydantic)
    assert ("ngcbuild.manifest.loader" in imported) == (path == "full"), path
    clean = (result.returncode == 1 and f"cannot reach the Docker engine at {host} ({reason}" in message
             and "Start it" in message and "DOCKER_HOST" in message and "\n" not in message)
    report(figures, f"engine unreachable: {kind} ({path} path)", result.stdout + message, [], clean)
    assert "Traceback" not in message
    assert result.returncode == 1, message
    assert f"cannot reach the Docker engine at {host} ({reason}" in message, message  # whole: pytest cuts its own
    assert "`bash .ci/engine`" in message and "point DOCKER_HOST at one" in message
    assert elapsed < 60
    assert not (scratch.root / "build" / "nothere" / "record.json").exists()


# --- a build that does not finish --------------------------------------------------------------

def test_failing_run_step_moves_no_tag_and_leaves_nothing(project, figures):
    release = project.release("fault-step")
    project.template("echo about-to-fail && exit 3")
    held = project.hold_tag(release)
    result = project.run("build", "--release", release)
    left = project.leftovers(release)
    clean = result.returncode == 1 and "failed at step 2/6" in result.stderr and project.tag_id(release) == held
    report(figures, "RUN step fails", result.stdout + result.stderr, left, clean and not left)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "failed at step 2/6: RUN echo about-to-fail && exit 3" in result.stderr
    assert "returned a non-zero code: 3" in result.stderr and "no tag was moved" in result.stderr
    assert project.tag_id(release) == held
    assert project.record(release) is None
    assert left == []
    # a fixed step builds, and only then does the tag move
    project.template("echo fixed > /fixed")
    rerun = project.run("build", "--release", release)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert project.tag_id(release) == project.record(release)["image_id"] != held
    assert project.leftovers(release) == []


def _follow_until(process: subprocess.Popen, marker: str, timeout: float = 120) -> str:
    """Read the build's output until `marker` appears (the RUN step is running)."""
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if marker in line and not line.lstrip().startswith("["):
                return "".join(seen)
    finally:
        watchdog.cancel()
    raise AssertionError(f"{marker!r} never appeared:\n{''.join(seen)}\n{process.stderr.read()}")


def _sigint_caught(pid: int) -> bool:
    """Whether a process catches SIGINT (a handler installed, not ignored): /proc/PID/status's masks."""
    masks = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                 if line.startswith(("SigIgn", "SigCgt")))
    bit = 1 << (signal.SIGINT - 1)
    return bool(int(masks["SigCgt"], 16) & bit) and not int(masks["SigIgn"], 16) & bit


def test_sigint_mid_build_cleans_up_and_a_rerun_succeeds(project, figures):
    release = project.release("fault-sigint")
    project.template(GATED)  # the step runs until the build is interrupted: there is no race to lose
    held = project.hold_tag(release)
    process = project.start("build", "--release", release)
    _follow_until(process, f"step-running-{release}")
    project.running_steps([release])
    # what the test relies on, whatever shell started the test run: the build handles SIGINT
    assert _sigint_caught(process.pid), "the build process does not catch SIGINT"
    process.send_signal(signal.SIGINT)
    rest, errors = process.communicate(timeout=120)
    # checked the moment the process is gone: the engine would remove the container by itself, but
    # only after we exited; the build removes it before it returns
    left = project.leftovers(release)
    clean = process.returncode == 130 and "interrupted" in errors and project.tag_id(release) == held
    report(figures, "SIGINT mid-build", rest + errors, left, clean and not left)
    assert "Traceback" not in errors, errors
    assert process.returncode == 130, errors
    assert errors.strip() == "ngcbuild: interrupted"
    assert project.tag_id(release) == held
    assert project.record(release) is None
    assert left == []
    rerun = project.run_gated(release)  # the same step, let go this time
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert project.tag_id(release) == project.record(release)["image_id"] != held
    assert project.leftovers(release) == []


@pytest.mark.parametrize("how", ["stopped", "killed"])
def test_engine_gone_mid_build_then_a_rerun_cleans_up_and_succeeds(how, project, fault_engine, figures):
    release = project.release(f"fault-engine-{how}")
    # the step never ends by itself: the engine's going cuts it short every time
    project.template(GATED)
    held = project.hold_tag(release)
    process = project.start("build", "--release", release)
    try:
        _follow_until(process, f"step-running-{release}")
        project.running_steps([release])
        fault_engine.stop(kill=how == "killed")
        rest, errors = process.communicate(timeout=120)
    finally:
        if fault_engine.process is None:
            fault_engine.start()
    if how == "stopped":  # a clean stop kills the step: the engine says so, or the connection ends
        expected = f"build of {release} failed at step 2/6: RUN echo step-running"
    else:  # a crash breaks the connection; the container is still there when the engine is back
        expected = "the connection to the Docker engine broke"
    first = "Traceback" not in errors and process.returncode == 1 and expected in errors
    assert "Traceback" not in errors, errors
    assert process.returncode == 1, rest + errors
    assert expected in errors
    assert project.tag_id(release) == held
    if how == "killed":  # what the crash left: the step's container, named in the build's journal
        journal = (project.root / "build" / release / ".intermediate-containers").read_text().split()
        present = {c["Id"] for c in project.engine.client().containers(all=True)}
        assert journal and all(any(full.startswith(short) for full in present) for short in journal)
    rerun = project.run_gated(release)  # the same step, let go this time
    left = project.leftovers(release)
    report(figures, f"engine {how} mid-build (after the rerun)", rest + errors + rerun.stderr, left,
           first and rerun.returncode == 0 and not left)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert project.tag_id(release) == project.record(release)["image_id"] != held
    assert left == []


def test_two_releases_built_at_once_keep_their_own_folders_and_tags(project, figures):
    releases = [project.release("fault-left"), project.release("fault-right")]
    project.template("echo {{ release.release }} > /release && " + GATED)
    processes = {name: project.start("build", "--release", name) for name in releases}
    try:
        steps = project.running_steps(releases)  # both builds are in their RUN step at the same time
    except AssertionError as never:
        for name in releases:
            report(figures, f"concurrent build: {name}", str(never), [], False)
        raise
    project.release_steps(steps)
    outputs = {name: p.communicate(timeout=300) for name, p in processes.items()}
    client = project.engine.client()
    left = [item for name in releases for item in project.leftovers(name)]
    ids = {}
    for name in releases:
        record = project.record(name) or {}
        ids[name] = record.get("image_id")
        labels = client.inspect_image(f"nvcr.io/nvidia/pytorch:{name}-py3")["Config"]["Labels"] if ids[name] else {}
        rendered = json.loads((project.root / "build" / name / "expected.json").read_text())["release"]
        ok = (processes[name].returncode == 0 and labels.get("io.ngcbuild.test.release") == name
              and project.tag_id(name) == ids[name] and rendered == name)
        report(figures, f"concurrent build: {name}", "".join(outputs[name]), left, ok and not left)
        assert processes[name].returncode == 0, outputs[name]
        assert labels["io.ngcbuild.test.release"] == name
        assert project.tag_id(name) == ids[name]
        assert rendered == name
    assert ids[releases[0]] != ids[releases[1]]
    assert left == []


# --- pushing to a registry that fails ---------------------------------------------------------

@pytest.fixture(scope="module")
def pushable(project) -> str:
    """A tiny image of release fault-push, built on the private engine."""
    release = project.release("fault-push")
    project.template("echo {{ release.release }} > /release")
    result = project.run("build", "--release", release)
    assert result.returncode == 0, result.stdout + result.stderr
    return release


def _served_digest(address: str, release: str, auth=None) -> str | None:
    command = ["skopeo", "inspect", "--tls-verify=false", f"docker://{address}/nvidia/pytorch:{release}-py3"]
    if auth:
        command[2:2] = ["--creds", f"{auth[0]}:{auth[1]}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    return json.loads(result.stdout)["Digest"] if result.returncode == 0 else None


def _image_kept(project: FaultProject, release: str) -> bool:
    record = project.record(release)
    try:
        project.engine.client().inspect_image(record["image_id"])
        return True
    except docker.errors.ImageNotFound:
        return False


def _engine_tags(project: FaultProject) -> list[str]:
    return [tag for image in project.engine.client().images() for tag in image.get("RepoTags") or []]


def test_registry_down_retries_then_fails_clearly(project, pushable, figures):
    address = f"127.0.0.1:{free_port()}"
    result = project.run("push", "--release", pushable, "--registry", address)
    ref = f"{address}/nvidia/pytorch:{pushable}-py3"
    kept = _image_kept(project, pushable)
    # the tag the failed push made for the registry is removed again: none is left in the engine
    left_tags = [f"tag {t}" for t in _engine_tags(project) if t.startswith(address + "/")]
    clean = (result.returncode == 1 and "push failed after 4 attempt(s)" in result.stderr
             and f"is a registry running at {address}?" in result.stderr and kept)
    report(figures, "registry down", result.stdout + result.stderr, project.leftovers(pushable) + left_tags, clean)
    assert not left_tags
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.count("retry ") == 3  # connection refused is worth retrying, with backoff
    assert "connection refused" in result.stderr.lower() and "the local image is kept" in result.stderr
    assert kept and ref not in project.record(pushable)["pushed"]


def test_registry_restarting_mid_push_is_retried_and_verified(project, pushable, private_registry, figures):
    registry = private_registry()
    fired, starts = threading.Event(), registry.starts

    def restart_mid_upload(method, path):
        if "/blobs/uploads/" in path and method in ("PATCH", "PUT") and not fired.is_set():
            fired.set()
            registry.stop(kill=True)
            threading.Timer(1.5, registry.start).start()
            return False  # this request dies with the registry
        return True

    proxy = FaultProxy(registry.address, on_request=restart_mid_upload)
    try:
        result = project.run("push", "--release", pushable, "--registry", proxy.address)
    finally:
        proxy.close()
    ref = f"{proxy.address}/nvidia/pytorch:{pushable}-py3"
    recorded = (project.record(pushable)["pushed"].get(ref) or {}).get("digest")
    served = _served_digest(registry.address, pushable)
    clean = result.returncode == 0 and fired.is_set() and registry.starts == starts + 1 and recorded == served
    report(figures, "registry restarts mid-push", result.stdout + result.stderr, project.leftovers(pushable), clean)
    assert fired.is_set() and registry.starts == starts + 1, "the fault did not happen"
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert recorded and recorded == served


def test_rejected_credentials_fail_at_once_and_say_so(project, pushable, private_registry, registry_secret, figures):
    user, password = registry_secret["user"], registry_secret["password"]
    wrong = "wrong-" + os.urandom(12).hex()
    registry = private_registry({user: password})
    denied = project.run("push", "--release", pushable, "--registry", registry.address,
                         NGCBUILD_REGISTRY_USER=user, NGCBUILD_REGISTRY_PASSWORD=wrong,
                         NGCBUILD_REGISTRY_HOST=registry.address)
    allowed = project.run("push", "--release", pushable, "--registry", registry.address,
                          NGCBUILD_REGISTRY_USER=user, NGCBUILD_REGISTRY_PASSWORD=password,
                          NGCBUILD_REGISTRY_HOST=registry.address)
    texts = denied.stdout + denied.stderr + allowed.stdout + allowed.stderr
    files = "".join(p.read_text(errors="replace") for p in (project.root / "build" / pushable).rglob("*")
                    if p.is_file())
    leaked = [secret for secret in (password, wrong) if secret in texts or secret in files]
    ref = f"{registry.address}/nvidia/pytorch:{pushable}-py3"
    clean = (denied.returncode == 1 and "rejected the credentials" in denied.stderr and "retry" not in denied.stdout
             and _image_kept(project, pushable) and allowed.returncode == 0 and not leaked)
    report(figures, "registry rejects the credentials", texts, project.leftovers(pushable), clean)
    figures(suite="secrets", case="registry password in push output and build/ files", found=len(leaked))
    assert "Traceback" not in denied.stderr
    assert denied.returncode == 1, denied.stdout + denied.stderr
    assert "the registry rejected the credentials" in denied.stderr and "docker login" in denied.stderr
    assert "retry" not in denied.stdout  # retrying cannot help
    assert _image_kept(project, pushable)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert project.record(pushable)["pushed"][ref]["digest"] == _served_digest(
        registry.address, pushable, (user, password))
    assert leaked == []


@pytest.mark.parametrize("served", ["another-image", "no-such-manifest"])
def test_a_registry_serving_another_digest_is_an_error_not_a_record(served, project, pushable, private_registry,
                                                                     figures):
    registry = private_registry()
    if served == "another-image":  # the registry answers with a real manifest, of another image
        client = project.engine.client()
        client.tag(BASE, f"{registry.address}/nvidia/pytorch", "decoy", force=True)
        events = list(client.push(f"{registry.address}/nvidia/pytorch", tag="decoy", stream=True, decode=True))
        digest = next(e["aux"]["Digest"] for e in events if isinstance(e.get("aux"), dict))
    else:
        digest = "sha256:" + "0" * 64
    # the manifest read back is hashed: a header naming another digest than its bytes is a lie, refused
    expected = f"the registry says the manifest is {digest}, but its bytes are"
    proxy = FaultProxy(registry.address, rewrite_digest=digest)
    try:
        result = project.run("push", "--release", pushable, "--registry", proxy.address)
    finally:
        proxy.close()
    ref = f"{proxy.address}/nvidia/pytorch:{pushable}-py3"
    recorded = ref in project.record(pushable)["pushed"]
    clean = (result.returncode == 1 and expected in result.stderr and "retry" not in result.stdout
             and not recorded and _image_kept(project, pushable))
    report(figures, f"registry serves a different digest ({served})", result.stdout + result.stderr,
           project.leftovers(pushable), clean)
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"ngcbuild: {ref}: " in result.stderr and expected in result.stderr
    assert "the local image is kept, nothing was recorded" in result.stderr
    assert "retry" not in result.stdout  # a wrong answer is not a transient failure
    assert not recorded and _image_kept(project, pushable)


# --- a registry that lies to ngcbuild's own push (publish/push.py) ----------------------------------

def _lying(kind: str):
    """forge() of a registry that says it has every blob (HEAD), takes every blob without storing it (PUT
    of an upload), or sends the upload to another host (POST)."""
    def forge(method, path):
        if kind == "has-every-blob" and method == "HEAD" and "/blobs/sha256:" in path:
            return 200, {"Docker-Content-Digest": path.rsplit("/", 1)[1]}, b""
        if kind == "stores-nothing" and method == "PUT" and "/blobs/uploads/" in path:
            return 201, {"Location": path.split("/blobs/")[0] + "/blobs/" + path.split("digest=")[1]}, b""
        if kind == "upload-elsewhere" and method == "POST" and path.endswith("/blobs/uploads/"):
            return 202, {"Location": "http://198.51.100.7/v2/nvidia/pytorch/blobs/uploads/x"}, b""
        return None
    return forge


def _push_through_a_lying_registry(project, pushable: str, kind: str):
    """`push` to an empty private registry behind a proxy that lies as `kind` says: (the push, the proxy, the
    tag pushed)."""
    registry = PrivateRegistry()  # an empty one: the session's holds the blobs of earlier pushes
    registry.start()
    proxy = FaultProxy(registry.address, forge=_lying(kind))
    try:
        result = project.run("push", "--release", pushable, "--registry", proxy.address)
    finally:
        proxy.close()
        registry.close()
    return result, proxy, f"{proxy.address}/nvidia/pytorch:{pushable}-py3"


def test_a_registry_claiming_blobs_without_their_size_gets_them_sent(project, pushable, figures):
    """A registry that answers every blob's HEAD with 200 and the digest but not the blob's size: "held" means
    the digest and the size (registry.holds_blob), so each blob is sent anyway and the push is verified."""
    result, proxy, ref = _push_through_a_lying_registry(project, pushable, "has-every-blob")
    layers = re.search(r"(\d+) layers: (\d+) sent, 0 already in the registry", result.stdout)
    clean = (result.returncode == 0 and layers is not None and layers.group(1) == layers.group(2)
             and ref in project.record(pushable)["pushed"] and "Traceback" not in result.stderr)
    report(figures, "registry claims every blob without its size", result.stdout + result.stderr,
           project.leftovers(pushable), clean)
    assert result.returncode == 0, result.stdout + result.stderr
    assert layers and layers.group(1) == layers.group(2), result.stdout
    assert f"pushed {ref}@" in result.stdout and "(verified against the registry)" in result.stdout


@pytest.mark.parametrize("kind, expected", [
    ("stores-nothing", "HTTP 400 (MANIFEST_BLOB_UNKNOWN) (the same after 3 retries)"),
    ("upload-elsewhere", "the blob upload was sent elsewhere (http://198.51.100.7/"),
])
def test_a_registry_lying_to_the_push_is_an_error_not_a_record(kind, expected, project, pushable, figures):
    """Whatever a registry says of the blobs, the manifest it must accept names them all: a registry that
    claims blobs it lacks cannot take the manifest, and one that sends the upload elsewhere gets nothing
    (our credentials and bytes go to the registry named, alone). One clear line, nothing recorded, the
    local image kept, no retry of what retrying cannot mend."""
    result, proxy, ref = _push_through_a_lying_registry(project, pushable, kind)
    recorded = ref in project.record(pushable)["pushed"]
    elsewhere = [path for method, path in proxy.requests if "198.51.100.7" in path]
    clean = (result.returncode == 1 and expected in result.stderr and not recorded and not elsewhere
             and _image_kept(project, pushable) and "Traceback" not in result.stderr)
    report(figures, f"registry lies to the push ({kind})", result.stdout + result.stderr,
           project.leftovers(pushable), clean)
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"ngcbuild: {ref}: push failed after 1 attempt(s): " in result.stderr and expected in result.stderr, \
        result.stderr
    assert "retry" not in result.stdout
    assert not recorded and _image_kept(project, pushable) and not elsewhere
