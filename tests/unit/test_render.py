"""Rendering: byte-identical, complete, strict; archived releases refused."""

import hashlib
import shutil
import subprocess

import jinja2
import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files, render_release
from ngcbuild.render.image import environment

from ..conftest import REPO


def tree(directory):
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_render_is_byte_identical_and_writes_only_the_context(scratch):
    scratch.copy_release("dev")
    project = Project.at(scratch.root)
    first = render_release(project, "dev")
    before = tree(first.directory)
    second = render_release(project, "dev")
    assert tree(second.directory) == before
    assert first.context_hash == second.context_hash
    # the stamp of what it was rendered from (stamp.py) is no part of the context sent to the engine
    assert ".rendered.json" in before and ".rendered.json" not in first.files
    assert set(before) - {".rendered.json"} == {
        "Dockerfile", "constraints.txt", "expected.json", "build-inputs/pip.conf", "build-inputs/netrc",
        "build-inputs/wheels/README",
        "entrypoint/nvidia_entrypoint.sh", "entrypoint/entrypoint.d/10-banner.sh",
        "entrypoint/entrypoint.d/50-gpu-driver-check.sh", "entrypoint/entrypoint.d/55-cuda-forward-compat.sh",
        "entrypoint/entrypoint.d/60-shm-check.sh",
    }
    assert (first.directory / "entrypoint" / "nvidia_entrypoint.sh").stat().st_mode & 0o111


def test_every_constraint_pin_is_in_the_dockerfile_and_nothing_unpinned():
    project = Project.at(REPO)
    rendered = render_files(project, load_release(project, "dev"))
    dockerfile = rendered.files["Dockerfile"].decode()
    for pin in rendered.plan.loaded.constraints.pins:
        assert f"{pin.name}=={pin.version}" in dockerfile
    for name, version in rendered.plan.release.python.apt_packages.items():
        assert f"{name}={version}" in dockerfile


def test_expected_json_carries_the_pins_and_env(scratch):
    import json

    project = Project.at(REPO)
    rendered = render_files(project, load_release(project, "dev"))
    expected = json.loads(rendered.files["expected.json"])
    assert expected["packages"]["torch"] == "2.13.0+cpu"
    assert expected["env"]["PIP_CONSTRAINT"] == "/etc/pip/constraint.txt"
    assert expected["env"]["NVIDIA_PYTORCH_VERSION"] == "dev"
    assert expected["labels"]["com.nvidia.pytorch.version"] == "2.13.0+cpu"
    assert expected["banner"][4] == "NVIDIA Release dev (build 0)"


def test_templates_are_strict(scratch):
    env = environment(Project.at(scratch.root))
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ nothing_here }}").render()


def test_archived_release_is_refused(scratch):
    scratch.copy_release("dev")
    text = (scratch.root / "manifests" / "dev.yaml").read_text() + "status: archived\n"
    scratch.manifest("dev", text)
    with pytest.raises(UserError) as caught:
        render_release(Project.at(scratch.root), "dev")
    assert "archived" in str(caught.value)
    assert not (scratch.root / "build" / "dev").exists()


def test_pip_layers_give_each_group_its_own_layer():
    project = Project.at(REPO)
    rendered = render_files(project, load_release(project, "dev"))
    dockerfile = rendered.files["Dockerfile"].decode()
    copies = [line for line in dockerfile.splitlines() if line.startswith("COPY --from=builder")]
    assert copies == ["COPY --from=builder /stage/pytorch/ /", "COPY --from=builder /stage/python-packages-1/ /",
                      "COPY --from=builder /stage/python-packages-2/ /", "COPY --from=builder /stage/python-packages/ /"]
    last = dockerfile.split("/stage/python-packages --ignore-installed", 1)[1].split("\n\n", 1)[0]
    assert "tqdm==4.70.1" in last and "numpy" not in last


@pytest.mark.parametrize("layers,expected", [
    ("[[numpy], [nope]]", "pip.layers.1.0: 'nope' is not pinned in dev.txt"),
    ("[[numpy], [numpy]]", "pip.layers.1.0: 'numpy' is already in another layer"),
    ("[[torch]]", "pip.layers.0.0: 'torch' is already in another layer"),
])
def test_bad_pip_layers(scratch, layers, expected):
    scratch.copy_release("dev")
    text = (scratch.root / "manifests" / "dev.yaml").read_text()
    start = text.index("  layers:")
    end = text.index("build:")
    scratch.manifest("dev", text[:start] + f"  layers: {layers}\n" + text[end:])
    with pytest.raises(UserError) as caught:
        render_files(Project.at(scratch.root), load_release(Project.at(scratch.root), "dev"))
    assert expected in str(caught.value)


def test_one_build_of_a_release_at_a_time(tmp_path):
    from ngcbuild.core.errors import OperationError
    from ngcbuild.workspace.locks import build_lock

    with build_lock(tmp_path / "dev", "dev"):
        with pytest.raises(OperationError) as caught:
            with build_lock(tmp_path / "dev", "dev"):
                pass
        with build_lock(tmp_path / "other", "other"):  # another release is fine
            pass
    assert "another build of dev is running" in str(caught.value)
    with build_lock(tmp_path / "dev", "dev"):  # released when the first build ended
        pass


def _checkout_line(ref: str) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(REPO / "templates" / "image")))
    return env.from_string('{% from "macros.j2" import checkout %}{{ checkout(ref) }}').render(ref=ref)


def test_the_checkout_of_a_source_build_fails_unless_the_commit_starts_with_the_ref(tmp_path):
    """A short ref may name a branch or tag of that name instead of the commit: the build must stop."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], check=True)
    full = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    impostor = "abcdef1" if not full.startswith("abcdef1") else "1234567"
    subprocess.run([*git, "branch", impostor], check=True)  # a branch named like a short hash

    def run(ref):
        script = _checkout_line(ref).replace("\\\n", "")
        return subprocess.run([shutil.which("sh"), "-c", script], cwd=tmp_path, capture_output=True, text=True)

    assert run(full).returncode == 0
    assert run(full[:10]).returncode == 0
    wrong = run(impostor)
    assert wrong.returncode != 0 and f"checked out {full}, not {impostor}" in wrong.stderr


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12"])
def test_every_checkout_in_a_golden_dockerfile_is_checked(name):
    lines = (REPO / "tests" / "golden" / name / "Dockerfile").read_text().splitlines()
    checkouts = [i for i, line in enumerate(lines) if "git checkout " in line]
    assert checkouts
    for index in checkouts:
        ref = lines[index].split("git checkout ", 1)[1].rstrip(" \\")
        assert f'"${{head#{ref}}}" != "$head"' in lines[index + 2], lines[index:index + 3]


def test_the_catalogues_document_fields_reach_no_rendered_file(scratch):
    """render/stamp.DOCUMENT_FIELDS is what lets a notes-only change of the catalogue select no release for a
    rebuild (render/changed.py): each of those fields, changed in every entry, leaves every file of every
    buildable release's context as it was; a field outside them (a comment) does not."""
    import yaml

    from ngcbuild.render.stamp import DOCUMENT_FIELDS

    names = ["dev", "cuda-dev", "20.02", "20.12", "25.12"]
    for name in names:
        scratch.copy_release(name)
    project = Project.at(scratch.root)

    def contexts():
        return {name: render_files(project, load_release(project, name)).files for name in names}

    before = contexts()
    catalog = yaml.safe_load(project.catalog.read_text())
    changed = set()
    for entry in catalog.values():
        entry["short"] = entry.get("short", entry["display"]) + " (short)"
        entry["example"] = "9.9.9"
        entry["version_parts"] = 1
        entry["notes_names"] = [*entry.get("notes_names", []), "Zz planted name"]
        if "group" in entry:
            entry["group"] += " (renamed)"
            entry["listed_packages"] = {**entry["listed_packages"], "planted-package": "Planted"}
        changed |= set(entry) & DOCUMENT_FIELDS
    catalog["nvshmem"]["within"] = "cuda"
    assert changed | {"within"} == DOCUMENT_FIELDS
    project.catalog.write_text(yaml.safe_dump(catalog, sort_keys=False))
    assert contexts() == before
    catalog["triton"]["comment"] = "Triton {version} (comment changed)"
    project.catalog.write_text(yaml.safe_dump(catalog, sort_keys=False))
    after = contexts()
    assert after["25.12"]["Dockerfile"] != before["25.12"]["Dockerfile"] and after["dev"] == before["dev"]
