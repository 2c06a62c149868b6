"""The start-up snippets as each release renders them, run by bash against a stand-in driver: forward
compatibility is enabled only when it was tried and works, on both sides of that test, and it is switched by
a link named in LD_LIBRARY_PATH from the start, so the path the smoke suite's process sees is the same string
either way, torch/lib first (issue 53: a 580 kernel driver under CUDA 13.1's 590 compat driver). Every
release runs its whole entrypoint (every snippet, the script itself) with a succeeding and a failing probe."""

import importlib.util
import json
import shutil
import subprocess
import sys
import warnings
from functools import lru_cache
from pathlib import Path

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.render.context import render_files
from ngcbuild.render.cuda_compat import CUDA_COMPAT_ROOT as ROOT
from ngcbuild.smoke.runner import CHECKS_DIR

from ..conftest import REPO

# Every release render accepts, read from manifests/ (an archived one is never built; a derived release runs its
# base's entrypoint, FROM that image): a release added later is tested here without a line changed.
RELEASES = tuple(buildable_releases(Project.at(REPO)))
SNIPPET = "entrypoint/entrypoint.d/55-cuda-forward-compat.sh"
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {}  Tue Sep 23 09:56:04 UTC 2025\n"
# NVIDIA's open kernel module (the default since R560, the only one for Blackwell) words its line otherwise.
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {}  Release Build  (dvs-builder@U16-I3-B03-4-3)\n"
# What the base sets after the manifest's prepended folders (not known for cuda-dl-base: a stand-in).
BASE_LD = "/usr/local/nvidia/lib:/usr/local/nvidia/lib64"


@lru_cache(maxsize=None)
def _rendered(release: str) -> dict:
    project = Project.at(REPO)
    return {name: data.decode() for name, data in render_files(project, load_release(project, release)).files.items()
            if name.startswith("entrypoint/") or name in ("expected.json", "Dockerfile")}


@lru_cache(maxsize=None)
def _path_list_problems():
    """The smoke suite's own judgement of a process's path lists (checks/test_image_config.py)."""
    sys.path.insert(0, str(CHECKS_DIR))  # for `from version_rule import ...`, staged beside it in an image
    sys.path.insert(0, str(REPO / "src" / "ngcbuild" / "manifest"))
    try:
        spec = importlib.util.spec_from_file_location("smoke_image_config", CHECKS_DIR / "test_image_config.py")
        module = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings():  # its `image` mark is the suite's own, registered by its conftest
            warnings.simplefilter("ignore")
            spec.loader.exec_module(module)
    finally:
        del sys.path[:2]
    return module.path_list_problems


class Machine:
    """A stand-in host for one start: the compat libraries where the build leaves them (lib.real) in a release
    whose base carries them, a driver
    version file, and a `python3` on PATH that answers the probe as cuInit would (recording the path it got)."""

    def __init__(self, tmp_path, release: str, kernel, probe, line=PROPRIETARY, writable=True, compat=None):
        self.tmp, self.release = tmp_path, release
        self.root = tmp_path / "compat"
        files = _rendered(release)
        # the image's paths under this machine's stand-in folder
        self.expected = json.loads(files["expected.json"].replace(ROOT, str(self.root)))
        if compat is None:  # the libraries where the release's image has them: none in dev's and cuda-dev's
            compat = self.expected["cuda_compat"] is not None
        if compat:
            (self.root / "lib.real").mkdir(parents=True)
            (self.root / "lib.real" / "libcuda.so.590.44.01").write_text("")
        self.snippets = tmp_path / "entrypoint.d"
        self.snippets.mkdir()
        for name, text in files.items():
            if name.startswith("entrypoint/entrypoint.d/"):
                (self.snippets / name.rsplit("/", 1)[1]).write_text(text.replace(ROOT, str(self.root)))
        self.entrypoint = tmp_path / "nvidia_entrypoint.sh"
        self.entrypoint.write_text(files["entrypoint/nvidia_entrypoint.sh"].replace(
            self.expected["entrypoint_snippets"], str(self.snippets)))
        self.driver = tmp_path / "version"
        if kernel == "absent":
            pass  # no driver at all: the host has no /proc/driver/nvidia/version
        elif kernel is None:
            self.driver.mkdir()  # a folder: sed cannot read it (as root, a file's mode would not stop it)
        else:
            self.driver.write_text(line.format(kernel) + "GCC version:  gcc version 13.3.0\n")
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        if probe is not None:
            fake = self.bin / "python3"
            fake.write_text(f'#!/bin/sh\necho "$LD_LIBRARY_PATH" > {tmp_path}/probe-env\nexit {probe}\n')
            fake.chmod(0o755)
        if not writable:  # a non-root user: the compat folder is not theirs to change
            for command in ("ln", "rm"):
                fake = self.bin / command
                fake.write_text(f"#!/bin/sh\necho '{command}: Permission denied' >&2\nexit 1\n")
                fake.chmod(0o755)

    @property
    def image_ld(self) -> str:
        """LD_LIBRARY_PATH as the image's config has it (the Dockerfile's ENV)."""
        env = self.expected["env"]
        if "LD_LIBRARY_PATH" in env:
            return env["LD_LIBRARY_PATH"]
        return ":".join(self.expected["env_prepend"]["LD_LIBRARY_PATH"] + [BASE_LD])

    @property
    def link(self):
        return self.root / "lib"

    def start(self, ld: str | None = None, cuda_version: str = "13.1.0"):
        """The entrypoint with every snippet, then a process that writes the environment it was given."""
        out = self.tmp / "process-env.json"
        command = [sys.executable, "-c",
                   f"import json, os; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"]
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "CUDA_VERSION": cuda_version,
               "LD_LIBRARY_PATH": self.image_ld if ld is None else ld,
               "_NVIDIA_DRIVER_VERSION_FILE": str(self.driver)}
        done = subprocess.run([shutil.which("bash"), str(self.entrypoint), *command], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout, json.loads(out.read_text())

    def probe_env(self):
        path = self.tmp / "probe-env"
        return path.read_text().strip() if path.exists() else None


def _held_by_the_smoke_suite(machine: Machine, environ: dict) -> None:
    """What the smoke suite checks of the process's LD_LIBRARY_PATH: the manifest's folders first (torch/lib)
    where it prepends, the rendered value whole where it sets one."""
    expected = machine.expected
    if "LD_LIBRARY_PATH" in expected["env"]:
        assert environ["LD_LIBRARY_PATH"] == expected["env"]["LD_LIBRARY_PATH"]
    else:
        assert expected["env_prepend"]["LD_LIBRARY_PATH"][0].endswith("/torch/lib")
        only_ld = {**expected, "env_prepend": {"LD_LIBRARY_PATH": expected["env_prepend"]["LD_LIBRARY_PATH"]}}
        assert _path_list_problems()(only_ld, environ) == {}


@pytest.mark.parametrize("release", RELEASES)
def test_a_580_driver_under_a_590_compat_driver_enables_it_and_torch_lib_stays_first(tmp_path, release):
    machine = Machine(tmp_path, release, "580.159.03", 0)
    out, environ = machine.start()
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld  # the same string: the link switches it
    _held_by_the_smoke_suite(machine, environ)
    if machine.expected["cuda_compat"]:
        assert "NOTE: CUDA Forward Compatibility mode ENABLED." in out
        assert "Using CUDA 13.1 driver version 590.44.01 with kernel driver version 580.159.03." in out
        assert machine.link.is_symlink() and (machine.link / "libcuda.so.590.44.01").exists()
        assert str(machine.link) in environ["LD_LIBRARY_PATH"].split(":")
        # the probe ran with the compat libraries first, as the programs after it will load them
        assert machine.probe_env() == f"{machine.root}/lib.real:{machine.image_ld}"


@pytest.mark.parametrize("release", RELEASES)
def test_the_stand_in_driver_is_the_one_every_snippet_sees(tmp_path, release):
    """50-gpu-driver-check.sh reads the same version file as 55's forward compatibility: a start with a driver
    never both warns that none was detected and enables compat for it."""
    out, _ = Machine(tmp_path, release, "580.159.03", 0).start()
    assert "WARNING: The NVIDIA Driver was not detected." not in out


@pytest.mark.skipif(Path("/dev/nvidiactl").exists(), reason="this host has an NVIDIA device node")
@pytest.mark.parametrize("release", RELEASES)
def test_without_a_driver_the_image_warns_and_tries_no_compat(tmp_path, release):
    machine = Machine(tmp_path, release, "absent", 0)
    out, environ = machine.start()
    assert "WARNING: The NVIDIA Driver was not detected." in out
    assert "Forward Compatibility" not in out and machine.probe_env() is None and not machine.link.exists()
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("status", [1, 3])  # cuInit's error (804 is truncated by exit codes; any non-zero)
def test_a_failing_probe_leaves_compat_off_and_the_path_as_the_image_has_it(tmp_path, release, status):
    machine = Machine(tmp_path, release, "580.159.03", status)
    out, environ = machine.start()
    assert "ENABLED" not in out and not machine.link.exists()
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld
    _held_by_the_smoke_suite(machine, environ)
    assert ("not supported on this GPU" in out) is bool(machine.expected["cuda_compat"])


@pytest.mark.parametrize("release", RELEASES)
def test_without_the_libraries_nothing_is_tried(tmp_path, release):
    """dev and cuda-dev carry no compat package (CUDA from wheels or none): their images have no lib.real."""
    machine = Machine(tmp_path, release, "580.159.03", 0, compat=False)
    out, environ = machine.start()
    assert "Forward Compatibility" not in out and machine.probe_env() is None
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld


def _with_compat(release: str) -> bool:
    """Whether the release's image carries compat libraries (its base carries CUDA: render/cuda_compat.py)."""
    return json.loads(_rendered(release)["expected.json"])["cuda_compat"] is not None


def test_every_release_is_tested_and_those_whose_base_carries_cuda_have_compat():
    assert {"dev", "cuda-dev", "20.02", "20.12", "25.12"} <= set(RELEASES)
    assert [r for r in RELEASES if _with_compat(r)] == [r for r in RELEASES if r not in ("dev", "cuda-dev")]


@pytest.mark.parametrize("release", [r for r in RELEASES if _with_compat(r)])
def test_a_user_who_cannot_make_the_link_gets_the_libraries_in_its_place(tmp_path, release):
    """Not root (the compat folder is not writable): the link's entry is replaced where it stands."""
    machine = Machine(tmp_path, release, "580.159.03", 0, writable=False)
    out, environ = machine.start()
    assert "ENABLED" in out and not machine.link.exists()
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld.replace(str(machine.link), f"{machine.root}/lib.real")
    assert environ["LD_LIBRARY_PATH"].split(":")[0] == machine.image_ld.split(":")[0]  # torch/lib (or mpi) first


def test_a_path_set_anew_without_the_link_gets_it_last(tmp_path):
    machine = Machine(tmp_path, "25.12", "580.159.03", 0)
    _, environ = machine.start(ld="/opt/mine/lib")
    assert environ["LD_LIBRARY_PATH"] == f"/opt/mine/lib:{machine.link}" and machine.link.is_symlink()


def test_a_link_left_by_an_earlier_start_is_undone_when_compat_is_not_needed_now(tmp_path):
    machine = Machine(tmp_path, "25.12", "590.48.01", 0)
    machine.link.symlink_to("lib.real")
    out, environ = machine.start()
    assert not machine.link.exists() and not machine.link.is_symlink() and machine.probe_env() is None
    assert "Forward Compatibility" not in out and environ["LD_LIBRARY_PATH"] == machine.image_ld


@pytest.mark.parametrize("release", [r for r in RELEASES if _with_compat(r)])
@pytest.mark.parametrize("kernel,probe", [("590.48.01", 0), ("580.159.03", 1)], ids=["new-driver", "probe-fails"])
def test_a_link_a_non_root_user_cannot_remove_leaves_the_path_and_torch_lib_stays_first(tmp_path, release,
                                                                                        kernel, probe):
    """An image committed from a container that enabled compat carries the link; a user who is not root cannot
    remove it, so its entry leaves LD_LIBRARY_PATH where compat is not needed or fails here (kept, it would load
    a libcuda that does not match this kernel driver). Such an image is the user's, not one the smoke suite
    runs: the build leaves no link (test_the_build_leaves_the_libraries_in_lib_real_and_no_link)."""
    machine = Machine(tmp_path, release, kernel, probe, writable=False)
    machine.link.symlink_to("lib.real")
    out, environ = machine.start()
    assert "ENABLED" not in out and machine.link.is_symlink()  # still there: not this user's to remove
    folders = environ["LD_LIBRARY_PATH"].split(":")
    assert str(machine.link) not in folders and f"{machine.root}/lib.real" not in folders
    assert folders == [f for f in machine.image_ld.split(":") if f != str(machine.link)]  # torch/lib first


def test_a_new_enough_driver_needs_no_forward_compat(tmp_path):
    machine = Machine(tmp_path, "25.12", "590.48.01", 0)
    out, environ = machine.start()
    assert "Forward Compatibility" not in out and machine.probe_env() is None and not machine.link.exists()


def test_forward_compat_stays_off_without_python_to_probe(tmp_path):
    """The snippet alone, with only the tools it uses on PATH (the host's own python3 is not)."""
    machine = Machine(tmp_path, "25.12", "580.159.03", None)
    for tool in ("ls", "sed", "head", "rm"):
        (machine.bin / tool).symlink_to(shutil.which(tool))
    snippet = machine.snippets / "55-cuda-forward-compat.sh"
    done = subprocess.run([shutil.which("bash"), "-c", f'set -e; source "{snippet}"; echo "LD=$LD_LIBRARY_PATH"'],
                          env={"PATH": str(machine.bin), "CUDA_VERSION": "13.1.0", "LD_LIBRARY_PATH": machine.image_ld,
                               "_NVIDIA_DRIVER_VERSION_FILE": str(machine.driver)},
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "not supported on this GPU" in done.stdout and not machine.link.exists()
    assert done.stdout.rsplit("LD=", 1)[1].strip() == machine.image_ld


@pytest.mark.parametrize("line", [PROPRIETARY, OPEN], ids=["proprietary", "open"])
def test_both_kernel_modules_report_their_version(tmp_path, line):
    out, _ = Machine(tmp_path, "25.12", "570.172.08", 0, line).start()
    assert "driver version 590.44.01 with kernel driver version 570.172.08" in out


def test_an_unreadable_version_file_leaves_forward_compat_off(tmp_path):
    machine = Machine(tmp_path, "25.12", None, 0)
    out, environ = machine.start()
    assert "Forward Compatibility" not in out and machine.probe_env() is None
    assert environ["LD_LIBRARY_PATH"] == machine.image_ld


@pytest.mark.parametrize("cuda_version", ["13.1.0", "13.1.0.036", "13.1"])
def test_the_note_names_the_cuda_release_as_nvidia_does(tmp_path, cuda_version):
    """NVIDIA's 25.12 banner: "Using CUDA 13.1 driver version 590.44.01 ..."; cuda-dl-base's CUDA_VERSION has
    four parts, which ${CUDA_VERSION%.*} would print as 13.1.0."""
    out, _ = Machine(tmp_path / "ok", "25.12", "580.159.03", 0).start(cuda_version=cuda_version)
    assert "Using CUDA 13.1 driver version 590.44.01 with kernel driver version 580.159.03." in out
    out, _ = Machine(tmp_path / "failing", "25.12", "580.159.03", 1).start(cuda_version=cuda_version)
    assert "CUDA 13.1 may need a newer driver." in out


def test_the_2020_bases_keep_the_link_where_their_manifest_names_it():
    for release in ("20.02", "20.12"):
        expected = json.loads(_rendered(release)["expected.json"])
        assert expected["cuda_compat"] == {"link": f"{ROOT}/lib", "libraries": f"{ROOT}/lib.real"}
        assert f"{ROOT}/lib" in expected["env"]["LD_LIBRARY_PATH"].split(":")


# --- the build's step that leaves every base's compat libraries in lib.real and no link

def _compat_step(release: str, root) -> str:
    """The RUN line of templates/image/cuda-compat.j2 as the release renders it, as a shell command."""
    lines = _rendered(release)["Dockerfile"].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"RUN compat={ROOT}"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    return "\n".join(lines[start:end + 1])[len("RUN "):].replace(ROOT, str(root))


@pytest.mark.parametrize("layout", ["link", "folder", "flat"])
@pytest.mark.parametrize("release", ["20.02", "20.12", "25.12"])
def test_the_build_leaves_the_libraries_in_lib_real_and_no_link(tmp_path, release, layout):
    root = tmp_path / "compat"
    libs = root if layout == "flat" else root / ("lib.real" if layout == "link" else "lib")
    libs.mkdir(parents=True)
    for name in ("libcuda.so.590.44.01", "libnvidia-ptxjitcompiler.so.590.44.01"):
        (libs / name).write_text("")
    (libs / "libcuda.so.1").symlink_to("libcuda.so.590.44.01")
    if layout == "link":
        (root / "lib").symlink_to("lib.real")
    done = subprocess.run(["sh", "-c", _compat_step(release, root)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert not (root / "lib").exists() and not (root / "lib").is_symlink()
    assert sorted(p.name for p in (root / "lib.real").iterdir()) == [
        "libcuda.so.1", "libcuda.so.590.44.01", "libnvidia-ptxjitcompiler.so.590.44.01"]


def test_a_base_with_both_a_lib_folder_and_lib_real_fails_the_build(tmp_path):
    root = tmp_path / "compat"
    (root / "lib").mkdir(parents=True)
    (root / "lib.real").mkdir()
    done = subprocess.run(["sh", "-c", _compat_step("25.12", root)], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0


def test_a_base_without_compat_libraries_passes_the_step(tmp_path):
    done = subprocess.run(["sh", "-c", _compat_step("25.12", tmp_path / "none")], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr


def test_only_a_base_that_carries_cuda_gets_the_step():
    assert all("lib.real" not in _rendered(r)["Dockerfile"] for r in ("dev", "cuda-dev"))


def test_a_manifest_whose_path_lacks_the_link_is_refused_in_one_line(scratch):
    scratch.copy_release("25.12")
    path = scratch.root / "manifests" / "25.12.yaml"
    path.write_text(path.read_text().replace(", /usr/local/cuda/compat/lib]", "]"))
    done = scratch.ngcbuild("render", "--release", "25.12")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert ("manifests/25.12.yaml: env_prepend.LD_LIBRARY_PATH: expected /usr/local/cuda/compat/lib among the "
            "folders") in done.stderr
