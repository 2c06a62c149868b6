"""Derived releases for real: a team's packages on `dev` resolved against PyPI with uv, built FROM dev's
image by digest, smoked (the base's checks and the derived ones, one of them proven to fail on a
planted change of torch) and pushed to the local registry; a conflicting requirement refused with its
chain; an override accepted and recorded; a team's set on `cuda-dev` resolved for both its platforms;
a team's lock following its base (`bump --release TEAM`: current, then what moved in a proposed base
and what now conflicts); a base given as an image by digest read from the image itself.

The resolves run in scratch copies of the project (the committed lock is compared, never rewritten);
the build of team-vision runs in the checkout, as dev's does. CI cost: one small build (the lock's
wheels on dev's image, about 20 s), one smoke run (about 15 s), one push of two thin layers, a few
resolves of seconds each."""

import json
import shutil
import subprocess

import pytest

from ..conftest import REPO, run_command
from ..helpers import derived_manifest
from .conftest import KeptTags, run_invoke

pytestmark = [pytest.mark.engine, pytest.mark.network]

def scratch(tmp_path, name: str, requirements: str, base: str = "dev", overrides: tuple = (),
            manifest: str | None = None):
    """A copy of the project's manifests, constraints and templates with one more derived release."""
    root = tmp_path / "project"
    for folder in ("templates", "manifests", "constraints", "requirements"):
        shutil.copytree(REPO / folder, root / folder)
    (root / "manifests" / "derived" / f"{name}.yaml").write_text(
        manifest or derived_manifest(name, base, overrides))
    (root / "requirements" / f"{name}.txt").write_text(requirements)
    return root


def resolve(root, name: str, *args: str):
    return run_command("ngcbuild", "resolve", "--release", name, *args, cwd=root, timeout=900)


def test_a_conflict_is_named_with_its_chain_and_the_override_that_would_accept_it(tmp_path):
    root = scratch(tmp_path, "team-x", "einops>=0.8\nscipy==1.11.4\ntorch>=2.14\n")
    result = resolve(root, "team-x")
    assert result.returncode == 2, result.stdout + result.stderr
    out = result.stdout
    assert "team-x: 2 conflicts with dev" in out and "Traceback" not in out + result.stderr
    assert "chain: team-x requires scipy==1.11.4; scipy 1.11.4 requires numpy>=1.21.6,<1.28.0; dev pins numpy==2.4.6" in out
    assert "accepted (with numpy 1.26.4)" in out and "- replaces: numpy==2.4.6" in out
    # PyPI's torch over the release's: always a named conflict, its override must say protected
    assert "torch==2.13.0+cpu (protected)" in out and "protected: true" in out and "trap: accepting it would replace" in out
    assert not (root / "constraints" / "team-x.lock").exists(), "a conflict must lock nothing"
    as_json = json.loads(resolve(root, "team-x", "--json").stdout)
    assert [c["requirement"] for c in as_json["conflicts"]] == ["scipy==1.11.4", "torch>=2.14"]
    assert as_json["conflicts"][0]["collides_with"] == ["numpy==2.4.6"] and as_json["fits"] is False


def test_an_override_is_accepted_and_recorded_in_the_lock(tmp_path):
    overrides = (("numpy==2.4.6", "scipy 1.11.4 is our reference solver"),)
    root = scratch(tmp_path, "team-x", "scipy==1.11.4\n", overrides=overrides)
    result = resolve(root, "team-x")
    assert result.returncode == 0, result.stdout + result.stderr
    lock = (root / "constraints" / "team-x.lock").read_text()
    assert "\nnumpy==1.26.4 \\\n" in lock and "\nscipy==1.11.4 \\\n" in lock and "\ntorch==" not in lock
    assert "# override: numpy==2.4.6 -> 1.26.4: scipy 1.11.4 is our reference solver" in lock
    assert "moved by override: numpy==2.4.6 -> 1.26.4" in result.stdout
    assert resolve(root, "team-x").returncode == 0
    assert (root / "constraints" / "team-x.lock").read_text() == lock, "same inputs, same lock"


def test_the_committed_lock_is_what_its_inputs_resolve_to(tmp_path):
    root = scratch(tmp_path, "unused", "einops\n")
    (root / "constraints" / "team-vision.lock").unlink()
    result = resolve(root, "team-vision")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (root / "constraints" / "team-vision.lock").read_bytes() == \
        (REPO / "constraints" / "team-vision.lock").read_bytes()


def test_a_team_set_on_cuda_dev_resolves_for_both_platforms(tmp_path):
    root = scratch(tmp_path, "team-cuda", "timm>=1.0\neinops>=0.8\n", base="cuda-dev")
    result = resolve(root, "team-cuda")
    assert result.returncode == 0, result.stdout + result.stderr
    lock = (root / "constraints" / "team-cuda.lock").read_text()
    assert "on linux/amd64" in lock and "on linux/arm64" in lock
    assert "\ntimm==" in lock and "\nhuggingface-hub==" in lock and "\nsafetensors==" in lock
    assert "\ntorch==" not in lock and "\ntorchvision==" not in lock and "\nnvidia-" not in lock, \
        "cuda-dev's torch, torchvision and NVIDIA wheels stay the base's"
    (root / "requirements" / "team-cuda.txt").write_text("torch>=2.12\n")
    refused = resolve(root, "team-cuda")
    assert refused.returncode == 2 and "cuda-dev pins torch==2.11.0" in refused.stdout, refused.stdout


def test_a_team_follows_its_base_and_bump_says_what_moved_and_what_now_conflicts(tmp_path):
    root = scratch(tmp_path, "team-x", "einops>=0.8\nnumpy>=2.4\n")
    assert resolve(root, "team-x").returncode == 0
    current = run_command("ngcbuild", "bump", "--check", "--release", "team-x", cwd=root, timeout=900)
    assert current.returncode == 0 and "team-x is current" in current.stdout, current.stdout + current.stderr
    # the base's proposal (as `bump --as dev-next` would write it) with an older numpy
    (root / "manifests" / "dev-next.yaml").write_text("extends: dev\n")
    (root / "constraints" / "dev-next.txt").write_text(
        (REPO / "constraints" / "dev.txt").read_text().replace("numpy==2.4.6", "numpy==1.26.4"))
    moved = run_command("ngcbuild", "bump", "--check", "--release", "team-x", "--base-release", "dev-next", cwd=root,
                        timeout=900)
    assert moved.returncode == 1, moved.stdout + moved.stderr
    assert "base: numpy 2.4.6 -> 1.26.4" in moved.stdout
    assert "chain: team-x requires numpy>=2.4; dev-next pins numpy==1.26.4" in moved.stdout
    assert moved.stderr.count("\n") == 1 and "now conflict with dev-next" in moved.stderr
    assert "Traceback" not in moved.stderr and not (root / "constraints" / "team-x.lock").read_text().count("1.26.4")


def test_fit_tells_which_releases_a_set_fits(tmp_path):
    root = scratch(tmp_path, "unused", "einops\n")
    (root / "team.txt").write_text("einops>=0.8\nnumpy<2.4\n")
    result = run_command("ngcbuild", "fit", "--requirements", "team.txt", "--json", cwd=root, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row["release"]: row for row in json.loads(result.stdout)["releases"]}
    assert set(rows) == {"20.02", "20.12", "25.12", "cuda-dev", "dev"}
    assert rows["25.12"]["fits"] is True, rows["25.12"]  # its numpy is 2.3.5
    assert rows["dev"]["fits"] is False and "dev pins numpy==2.4.6" in rows["dev"]["details"][0]


class KeptTeamTags(KeptTags):
    """team-vision's tags (its image, its builder stage's cache tag, the pushed one) as they were; the
    images the tests made that no tag holds then removed."""

    def __init__(self, engine, registry: str):
        self.REPOSITORIES = ("nvcr.io/teams/vision", "nvcr.io/teams/vision-cache", f"{registry}/teams/vision")
        super().__init__(engine, "team-vision")


@pytest.fixture(scope="module")
def team_vision(engine, dev_build, registry):
    """dev pushed (its digest is what team-vision is built FROM), then team-vision built."""
    kept = KeptTeamTags(engine, registry)
    try:
        pushed = run_invoke("push", "--release", "dev", "--registry", registry)
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
        built = run_invoke("build", "--release", "team-vision")
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        record = json.loads((REPO / "build" / "team-vision" / "record.json").read_text())
        yield {"built": built, "record": record, "registry": registry}
    finally:
        kept.restore()


def _run(engine, image: str, command: list[str]) -> str:
    from ngcbuild.engine.container import run_once

    ran = run_once(engine, image, command, entrypoint=[], what="test", deadline_s=120)
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    return ran.stdout


def test_the_derived_image_is_built_from_the_base_by_digest_and_holds_the_lock(engine, team_vision, dev_build):
    image = engine.inspect_image(team_vision["record"]["image_id"])
    labels = image["Config"]["Labels"]
    dev_record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    digests = {entry["digest"] for entry in dev_record["pushed"].values()}
    assert labels["org.opencontainers.image.base.digest"] in digests
    dockerfile = (REPO / "build" / "team-vision" / "Dockerfile").read_text()
    assert f"FROM {team_vision['registry']}/nvidia/pytorch@{labels['org.opencontainers.image.base.digest']}" in dockerfile
    lock = (REPO / "constraints" / "team-vision.lock").read_bytes()
    import hashlib

    assert labels["io.ngcbuild.derive.lock.sha256"] == hashlib.sha256(lock).hexdigest()
    env = dict(item.split("=", 1) for item in image["Config"]["Env"])
    assert env["PIP_CONSTRAINT"] == env["UV_CONSTRAINT"] == "/etc/pip/constraint.txt"
    constraint = _run(engine, team_vision["record"]["image_id"], ["cat", "/etc/pip/constraint.txt"]).splitlines()
    # the override is visible in the image's own constraint file; dev's torch is there unchanged
    assert "tqdm==4.67.1" in constraint and "tqdm==4.70.1" not in constraint
    assert "torch==2.13.0+cpu" in constraint and any(line.startswith("rich==") for line in constraint)
    again = run_invoke("build", "--release", "team-vision")  # skip-if-built, as for any release
    assert again.returncode == 0 and "skipped the build of team-vision" in again.stdout, again.stdout[-2000:]
    record = json.loads((REPO / "build" / "team-vision" / "record.json").read_text())
    assert record["image_id"] == team_vision["record"]["image_id"]


def test_smoke_passes_and_proves_the_base_stack_unchanged(team_vision):
    result = run_invoke("smoke", "--release", "team-vision")
    assert result.returncode == 0, result.stdout[-4000:]
    junit = (REPO / "build" / "team-vision" / "smoke-junit.xml").read_text()
    for check in ("test_base_stack_is_unchanged", "test_every_locked_distribution_is_installed_at_its_version",
                  "test_each_requirement_imports", "test_pip_refuses_to_move_a_pinned_distribution",
                  "test_uv_refuses_to_move_a_pinned_distribution",
                  "test_every_pinned_package_is_installed_at_its_pin"):  # the last one: a base check
        assert f'name="{check}"' in junit, check
    assert 'failures="0"' in junit and "uv is not in this image" not in junit
    print(result.stdout[-2500:])


def test_a_changed_torch_file_fails_the_base_stack_check(engine, team_vision):
    """A thin image on the derived one with one torch file changed: the suite must fail on it."""
    base = team_vision["record"]["image_id"]
    tag = "ngcbuild-test/team-vision-planted:torch-changed"
    context = "FROM " + base + "\nRUN echo '# planted' >> /usr/local/lib/python3.11/dist-packages/torch/version.py\n"
    built = subprocess.run(["docker", "build", "-q", "-t", tag, "-"], input=context, capture_output=True, text=True,
                           timeout=300)
    assert built.returncode == 0, built.stderr
    try:
        result = run_invoke("smoke", "--release", "team-vision", "--image", tag)
        assert result.returncode == 1, result.stdout[-3000:]
        assert "test_base_stack_is_unchanged" in result.stdout and "torch/version.py is not the base's file" in result.stdout
    finally:
        engine.remove_image(tag, force=True)


def test_the_derived_image_is_pushed(team_vision):
    result = run_invoke("push", "--release", "team-vision", "--registry", team_vision["registry"])
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads((REPO / "build" / "team-vision" / "record.json").read_text())
    assert f"{team_vision['registry']}/teams/vision:team-vision-py3" in record["pushed"]


def test_a_base_image_by_digest_is_read_from_the_image(tmp_path, team_vision):
    dev_record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    ref, entry = next((ref, entry) for ref, entry in sorted(dev_record["pushed"].items())
                      if ref.startswith(team_vision["registry"] + "/"))
    manifest = (f"extends: parts/debian-bookworm\nsummary: a team's stack on an image\norigin: public-wheels\n"
                f"base:\n  image: {ref}\n  digest: {entry['digest']}\n  bootstrap: null\n"
                "pip: {constraint_file: true, break_system_packages: true}\n"
                "derive:\n  requirements: requirements/team-img.txt\n  protected: [torch]\n")
    root = scratch(tmp_path, "team-img", "einops>=0.8\ntorch>=2.14\n", manifest=manifest)
    refused = resolve(root, "team-img")
    base_pins = (root / "constraints" / "team-img.base.txt").read_text()
    assert "torch==2.13.0+cpu" in base_pins and "tqdm==4.70.1" in base_pins, base_pins
    assert refused.returncode == 2 and "torch==2.13.0+cpu (protected)" in refused.stdout, refused.stdout
    (root / "requirements" / "team-img.txt").write_text("einops>=0.8\n")
    result = resolve(root, "team-img")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\neinops==" in (root / "constraints" / "team-img.lock").read_text()
