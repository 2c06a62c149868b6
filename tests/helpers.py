"""Helpers shared by several test modules (a test module never imports from another: pytest would
collect its tests twice, and a fixture imported by name shadows a conftest's). Fixtures live in the
conftest.py files; the hostile and broken inputs in tests/corpus/ (hostile.py, corpus.py)."""

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release, release_names
from ngcbuild.render.context import render_files
from ngcbuild.smoke.runner import CHECKS_DIR, stage_suite, suite_args, suite_command
from ngcbuild.workspace.release_dir import EXPECTED

from .conftest import REPO, fail_in_ci_else_skip

PROJECT = Project.at(REPO)


# --- a stand-in engine (the corpus of broken inputs, the hostile inputs) ------------------------------

class SentinelEngine:
    """A Unix socket standing in for the Docker engine: it counts every connection and answers none.
    Builds and pushes reach the registry only through the engine, so zero connections means nothing
    was built or pushed."""

    def __init__(self, path):
        self.path, self.connections = str(path), 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            self.connections += 1
            conn.close()

    def close(self):
        self._server.close()


# --- manifests of a scratch project: the one builder of minimal ones ----------------------------------

DEV_CONSTRAINTS = (REPO / "constraints" / "dev.txt").read_text()


def minimal_manifest(summary: str = "a test release", *, torch: str | None = "2.13.0+cpu",
                     python3_apt: str | None = None) -> str:
    """A release on dev's base (parts/debian-bookworm) with the pip constraint file (dev's constraints
    suit it): PyTorch's CPU wheel `torch` as its component (None: none at all), and `python3_apt` the
    interpreter's apt pin (a version no index has fails its build at the second step)."""
    lines = ["extends: parts/debian-bookworm", f"summary: {summary}"]
    if python3_apt is not None:
        lines += ["python:", "  apt_packages:", f"    python3: {python3_apt}"]
    lines += ["pip:", "  constraint_file: true"]
    if torch is not None:
        lines += ["components:", "  pytorch:", f"    version: {torch}", "    install: pip"]
    return "\n".join(lines) + "\n"


def derived_manifest(name: str, base: str = "dev", overrides: tuple[tuple[str, str], ...] = ()) -> str:
    """A derived release (manifests/derived/NAME.yaml) on `base`, its requirements in
    requirements/NAME.txt; `overrides`: (the base's pin it replaces, why)."""
    text = f"extends: {base}\nsummary: a team's stack on {base}\nderive:\n  requirements: requirements/{name}.txt\n"
    if overrides:
        text += "  overrides:\n" + "".join(f"    - replaces: {pin}\n      reason: {why}\n" for pin, why in overrides)
    return text


def wheel_release_manifest(summary: str, bump: str, *, extra_index_urls: tuple[str, ...] = (), pip: str = "",
                           more: str = "") -> str:
    """A release of pip wheels alone on dev's base, no apt source read (bump's and resolve's tests, from a
    local index): `bump` the lines under `bump:` (indented two spaces), `pip` more lines under `pip:`,
    `more` top-level keys (components, banner), `extra_index_urls` the release's own indexes."""
    text = (f"extends: parts/debian-bookworm\nsummary: {summary}\norigin: public-wheels\nos:\n  apt_sources: []\n"
            "pip:\n  constraint_file: true\n  break_system_packages: true\n")
    if extra_index_urls:
        text += f"  extra_index_urls: [{', '.join(extra_index_urls)}]\n"
    return text + pip + more + "bump:\n" + bump


GOOD = minimal_manifest()


def load(scratch, text, constraints=DEV_CONSTRAINTS, name="r1"):
    scratch.manifest(name, text)
    if constraints is not None:
        scratch.constraints(name, constraints)
    return load_release(Project.at(scratch.root), name)


def error(scratch, text, constraints=DEV_CONSTRAINTS, name="r1") -> str:
    with pytest.raises(UserError) as caught:
        load(scratch, text, constraints, name)
    return str(caught.value)


# --- the smoke suite staged as `invoke smoke` stages it, collected by a Python of the image's version --

def verify_python_rows(scratch, index_url: str, scratch_dir: Path, name: str, manifest: str,
                       pins: str) -> list:
    """verify's pip-level rows (pins, closure, pip check, modules) of a scratch release on linux/amd64, with
    PyPI replaced by a local fake index."""
    from ngcbuild.verify import run
    from ngcbuild.verify.parallel import Work
    from ngcbuild.verify.target import Target
    from ngcbuild.verify.web import Web

    scratch.manifest(name, manifest)
    scratch.constraints(name, pins)
    loaded = load_release(Project.at(scratch.root), name)
    target = Target(loaded.release.python.interpreter_version, "linux/amd64", loaded.release.os.glibc)
    return run._python_rows(loaded, [target], [index_url], Web(environ={}), Work(), scratch_dir)


def oldest_python() -> str:
    project = Project.at(REPO)
    versions = set()
    for name in release_names(project):
        python = load_release(project, name).release.python
        if python is not None:
            versions.add(python.version)
    return min(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def interpreter(minor: str) -> str | None:
    """A CPython of this MAJOR.MINOR: pyenv's newest patch release, else python3.X on PATH."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(versions.glob(f"{minor}.*"), key=lambda p: [int(x) for x in p.name.split(".")
                                                                         if x.isdigit()], reverse=True):
        if (candidate / "bin" / "python").is_file():
            return str(candidate / "bin" / "python")
    return shutil.which(f"python{minor}")


def require_interpreter(minor: str) -> str:
    python = interpreter(minor)
    if python is None:
        fail_in_ci_else_skip(f"no Python {minor} here", f"pyenv install {minor}, or python{minor} on PATH")
    return python


def collected(command: list[str], staging: Path) -> list[str]:
    env = {"PATH": os.environ["PATH"], "NGCBUILD_SMOKE_DIR": str(staging), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=staging)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    return [line for line in done.stdout.splitlines() if "::" in line]


def collected_here(release: str, tmp_path: Path) -> list[str]:
    """The checks this machine's own pytest and Python collect for a release: the expected ones."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    staging, _ = stage(release, tmp_path)
    command = suite_command([*suite_args(perf=True, mount=str(staging)), "--collect-only"], checks=str(CHECKS_DIR))
    return collected([sys.executable, "-m", "pytest", *command[2:]], staging)


def stage(release: str, tmp_path: Path) -> tuple[Path, str]:
    loaded = load_release(PROJECT, release)
    staging = tmp_path / release
    staging.mkdir()
    expected = render_files(PROJECT, loaded).files[EXPECTED]
    stage_suite(staging, expected, {"Env": [], "Labels": {}}, loaded.release.python.version, PROJECT.build)
    return staging, loaded.release.python.version


# --- FP8 numerics of the GPU checks -----------------------------------------------------------------

def e4m3(values):
    """Round to FP8 E4M3 (3 mantissa bits, smallest normal 2^-6, subnormal step 2^-9, saturating at 448)."""
    magnitude = np.minimum(np.abs(values), 448.0)
    exponent = np.maximum(np.floor(np.log2(np.maximum(magnitude, 2.0 ** -9))), -6)
    step = 2.0 ** (exponent - 3)
    return np.sign(values) * np.minimum(np.round(magnitude / step) * step, 448.0)


def fp8_linear_error(x_scale=1.0, w_scale=1.0):
    """A default-initialised te.Linear(256, 256) on 64 inputs, both operands in E4M3 with per-tensor
    scales (amax -> 448), optionally wrong by a factor; relative Frobenius error against float64."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256))
    w = rng.uniform(-1 / 16, 1 / 16, (256, 256))
    sx, sw = 448 / np.abs(x).max() * x_scale, 448 / np.abs(w).max() * w_scale
    out = (e4m3(x * sx) / sx) @ (e4m3(w * sw) / sw).T
    reference = x @ w.T
    return np.linalg.norm(out - reference) / np.linalg.norm(reference)


# --- an engine's save of a small image, as Docker 20.10 writes it (the layer store, push's blobs) -------------

def docker_20_10_save():
    """A save as Docker 20.10 writes it: `<n>/layer.tar` per layer, `<config digest>.json`, manifest.json."""
    import hashlib
    import io
    import json
    import tarfile

    def tar(files: dict[str, bytes]) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return out.getvalue()

    layers = [tar({"etc/base": b"the base\n"}), tar({"usr/lib/x": os.urandom(3 << 20)}), tar({})]
    diff_ids = ["sha256:" + hashlib.sha256(layer).hexdigest() for layer in layers]
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    config_id = "sha256:" + hashlib.sha256(config).hexdigest()
    files = {f"{n}/layer.tar": layer for n, layer in enumerate(layers)}
    files[f"{config_id[7:]}.json"] = config
    files["manifest.json"] = json.dumps([{"Config": f"{config_id[7:]}.json", "RepoTags": ["r:t"],
                                          "Layers": [f"{n}/layer.tar" for n in range(len(layers))]}]).encode()
    return config_id, tar(files), layers, diff_ids


class SavingClient:
    """The two answers publish/layer_blobs.image_blobs asks of an engine: the inspect and the save (Docker 20.10's layout)."""

    def __init__(self, image_id: str, save: bytes, layers: list[str]):
        self.image_id, self.save, self.layers = image_id, save, layers

    def inspect_image(self, image_id):
        return {"Id": self.image_id, "RootFS": {"Type": "layers", "Layers": self.layers}}

    def get_image(self, image_id, chunk_size=None):
        return (self.save[at:at + 5000] for at in range(0, len(self.save), 5000))


# --- the generated examples' tally (tests/unit/test_fuzz.py, test_fuzz_tars.py) ---------------------------

class FuzzTally:
    """How the examples of one property ended, recorded for RELIABILITY.md even when the property fails.
    `clean`: the exception that counts as a clean error (the product's UserError, or a property's own);
    `bound_s`: CPU seconds one example may take (the thread's, not the clock's: a loaded machine makes
    a 2 ms parse wait seconds for a core)."""

    def __init__(self, figures, case: str, clean: type = UserError, bound_s: float = 2.0):
        from collections import Counter

        self.figures, self.case, self.clean, self.bound_s = figures, case, clean, bound_s
        self.counts, self.slowest, self.last_accepted = Counter(), 0.0, False

    def warm(self, function, *args) -> None:
        """One untimed, uncounted call: the modules it imports lazily are loaded before the first timed one."""
        try:
            function(*args)
        except self.clean:
            pass

    def run(self, function, *args) -> None:
        import time

        started, cpu_started = time.perf_counter(), time.thread_time()
        self.last_accepted = False
        try:
            function(*args)
            self.counts["accepted"] += 1
            self.last_accepted = True
        except self.clean:
            self.counts["clean"] += 1
        except Exception:
            self.counts["other"] += 1
            raise
        finally:
            took, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
            self.slowest = max(self.slowest, took)
            self.counts["tried"] += 1
            if cpu > self.bound_s:
                self.counts["slow"] += 1
        assert cpu <= self.bound_s, f"{cpu:.2f} CPU seconds for one example ({took:.2f}s by the clock)"

    def record(self) -> None:
        c = self.counts
        self.figures(suite="fuzz", case=self.case, input=self.case, examples=c["tried"],
                     clean=not (c["other"] or c["slow"]), accepted=c["accepted"], clean_errors=c["clean"],
                     traceback=bool(c["other"]), errors=c["other"], hangs=c["slow"],
                     slowest_s=round(self.slowest, 4))
