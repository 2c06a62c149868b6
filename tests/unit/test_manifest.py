"""Manifest loading: the real manifests load, and every kind of bad input is one clear error."""

import pytest

from ngcbuild.core.errors import ManifestError, UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import deep_merge, load_release, release_names

from ..conftest import REPO
from ..helpers import DEV_CONSTRAINTS, GOOD, error, load


def test_every_release_in_the_repo_loads():
    project = Project.at(REPO)
    names = release_names(project)
    assert "dev" in names
    for name in names:
        assert load_release(project, name).release.release == name


def test_dev_is_what_the_issue_asks_for():
    loaded = load_release(Project.at(REPO), "dev")
    release = loaded.release
    assert release.tag == "dev-py3"
    assert release.base.image == "debian:bookworm-slim"
    assert release.python.version == "3.11" and release.python.install == "system"
    assert release.components["pytorch"].version == "2.13.0+cpu"
    assert loaded.constraints.get("torch").version == "2.13.0+cpu"
    assert loaded.constraints.get("numpy") is not None
    assert [p.name for p in loaded.chain] == ["debian-bookworm.yaml", "dev.yaml"]


def test_good_manifest_loads(scratch):
    assert load(scratch, GOOD).release.summary == "a test release"


def test_unknown_key_says_did_you_mean(scratch):
    message = error(scratch, GOOD.replace("summary:", "sumary:"))
    assert "r1.yaml: sumary: unknown key (did you mean 'summary'?)" in message


def test_unknown_nested_key_names_the_path(scratch):
    message = error(scratch, GOOD.replace("    install: pip", "    instal: pip"))
    assert "components.pytorch.instal: unknown key (did you mean 'install'?)" in message


def test_number_where_a_string_is_expected_says_quote_it(scratch):
    message = error(scratch, GOOD.replace("version: 2.13.0+cpu", "version: 2.13"))
    assert "components.pytorch.version: expected a string, got 2.13" in message
    assert "quote it" in message


def test_missing_required_key(scratch):
    message = error(scratch, GOOD.replace("summary: a test release\n", ""))
    assert "r1.yaml: summary: required key is missing" in message


@pytest.mark.parametrize("bad", ["1.0; rm -rf /", "$(curl x)", "`id`", "1.0\\nRUN id", "2.0 'x'", '2.0"'])
def test_values_that_would_inject_shell_are_refused(scratch, bad):
    text = GOOD.replace("version: 2.13.0+cpu", f"version: {bad!r}" if "'" not in bad else f'version: "{bad}"')
    message = error(scratch, text)
    assert "components.pytorch.version" in message and "is not a version" in message


def test_partial_version_is_not_full(scratch):
    text = GOOD + "  nccl:\n    version: '2.28'\n    install: base\n"
    message = error(scratch, text)
    assert "components.nccl.version: '2.28' is not a full version" in message


def test_unknown_component_suggests_a_known_one(scratch):
    message = error(scratch, GOOD + "  pytroch:\n    version: 1.2.3\n    install: base\n")
    assert "components.pytroch: unknown component (did you mean 'pytorch'?)" in message


def test_pip_component_must_agree_with_constraints(scratch):
    message = error(scratch, GOOD.replace("2.13.0+cpu", "2.13.0"))
    assert "components.pytorch.version: '2.13.0' conflicts with r1.txt line" in message


def test_extends_cycle(scratch):
    scratch.manifest("a", "extends: b\n")
    scratch.manifest("b", "extends: a\n")
    message = error(scratch, "extends: a\n" + GOOD.split("\n", 1)[1])
    assert "extends: cycle: r1.yaml -> a.yaml -> b.yaml -> a.yaml" in message


def test_missing_parent(scratch):
    message = error(scratch, GOOD.replace("parts/debian-bookworm", "parts/nope"))
    assert "r1.yaml: extends: parent 'parts/nope' not found" in message


def chain(scratch, length):
    """r1 extends link2 ... extends linkN, which is GOOD without its top lines."""
    for number in range(2, length):
        scratch.manifest(f"link{number}", f"extends: link{number + 1}\n")
    scratch.manifest(f"link{length}", GOOD.replace("summary: a test release\n", ""))
    return "extends: link2\nsummary: a test release\n"


def test_an_extends_chain_of_the_bound_loads_and_one_more_is_refused_in_the_releases_words(scratch):
    from ngcbuild.manifest.loader import MAX_EXTENDS

    # r1, link2 ... linkN, parts/debian-bookworm: N + 1 files
    assert len(load(scratch, chain(scratch, MAX_EXTENDS - 1)).chain) == MAX_EXTENDS
    message = error(scratch, chain(scratch, MAX_EXTENDS))
    assert f"/manifests/r1.yaml: extends: the chain r1 -> link2 -> link3 -> ... -> link{MAX_EXTENDS} -> " \
           f"parts/debian-bookworm is more than {MAX_EXTENDS} manifests long" in message, message
    assert f"expected at most {MAX_EXTENDS}" in message


def test_a_runaway_chain_is_refused_not_blamed_on_a_file_deep_in_it(scratch):
    message = error(scratch, chain(scratch, 1500))
    assert "/manifests/r1.yaml: extends: the chain r1 -> link2 -> link3 -> ... -> link100 -> link101 is" in message
    assert "nested too deeply" not in message


def test_parts_reached_by_many_paths_are_counted_each_time_and_bounded(scratch):
    # 2**40 paths to the bottom: refused after about a hundred merges, not after 2**40
    for level in range(2, 40):
        for side in "ab":
            scratch.manifest(f"w{level}{side}", f"extends: [w{level + 1}a, w{level + 1}b]\n")
    for side in "ab":
        scratch.manifest(f"w40{side}", "extends: parts/debian-bookworm\n")
    message = error(scratch, GOOD.replace("parts/debian-bookworm", "[w2a, w2b]"))
    assert "/manifests/r1.yaml: extends: merges more than 100 manifests" in message, message


@pytest.mark.parametrize("parent, reason", [
    ("parts/" + "n" * 300, "a name in the path is 305 bytes, longer than the 255 the file system allows"),
    ("deep/" * 900 + "x", "longer than the 4095 the system allows"),
])
def test_a_parent_the_system_cannot_look_up_is_not_called_missing(scratch, parent, reason):
    message = error(scratch, GOOD.replace("parts/debian-bookworm", parent))
    assert "/manifests/r1.yaml: extends: parent '" in message, message
    assert "cannot be looked up: " in message and reason in message and "not found" not in message
    assert len(message) < 400


def test_a_parent_that_is_a_loop_of_links_says_so(scratch):
    (scratch.root / "manifests" / "parts" / "loop.yaml").symlink_to("loop.yaml")
    message = error(scratch, GOOD.replace("parts/debian-bookworm", "parts/loop"))
    assert "parts/loop.yaml: cannot be read (too many levels of symbolic links (a loop of links))" in message


def test_missing_constraints_file(scratch):
    message = error(scratch, GOOD, constraints=None)
    assert "constraints/r1.txt: constraints file not found" in message


@pytest.mark.parametrize("text,expected", [
    ("numpy>=1\n", "line 1: 'numpy>=1' is not an exact pin"),
    ("numpy==1.0\nnumpy==1.0\n", "line 2: duplicate pin numpy==1.0; line 1 already pins numpy==1.0"),
    ("numpy==1.0\nNumPy==2.0\n", "line 2: conflicting pin NumPy==2.0; line 1 already pins numpy==1.0"),
    ("torch==1.0; rm -rf /\n", "is not an exact pin"),
    ("# nothing\n", "no pins"),
])
def test_bad_constraints(scratch, text, expected):
    assert expected in error(scratch, GOOD, constraints=text)


def test_invalid_yaml_names_the_line(scratch):
    message = error(scratch, GOOD + "  bad: [unclosed\n")
    assert "r1.yaml: invalid YAML: line" in message


def test_empty_file(scratch):
    assert "r1.yaml: file is empty" in error(scratch, "")


def test_not_a_mapping(scratch):
    assert "expected a mapping of manifest keys" in error(scratch, "- a\n- b\n")


def test_non_utf8(scratch):
    (scratch.root / "manifests").mkdir(parents=True, exist_ok=True)
    (scratch.root / "manifests" / "r1.yaml").write_bytes(b"summary: caf\xe9\n")
    with pytest.raises(ManifestError) as caught:
        load_release(Project.at(scratch.root), "r1")
    assert "not UTF-8 text" in str(caught.value)


def test_unknown_release_lists_the_known_ones(scratch):
    scratch.manifest("r1", GOOD)
    with pytest.raises(UserError) as caught:
        load_release(Project.at(scratch.root), "r2")
    assert "no such manifest; known releases: r1" in str(caught.value)


def test_deep_merge_child_wins_and_null_removes():
    parent = {"a": {"x": 1, "y": 2}, "b": [1], "c": 3}
    child = {"a": {"y": 5}, "b": [2], "c": None}
    assert deep_merge(parent, child) == {"a": {"x": 1, "y": 5}, "b": [2]}


def test_extends_a_release_read_as_a_number_says_quote_it(scratch):
    message = error(scratch, "extends: 25.12\nsummary: next\n")
    assert "r1.yaml: extends: expected a manifest name" in message and "quote it, '25.12'" in message


def test_a_release_that_silently_inherits_its_parents_text_is_refused(scratch):
    scratch.copy_release("25.12")
    scratch.copy_release("25.12", "26.01")
    scratch.manifest("26.01", "extends: '25.12'\nsummary: NVIDIA PyTorch 26.01\nbuild:\n  number: '1'\n")
    with pytest.raises(ManifestError) as caught:
        load_release(Project.at(scratch.root), "26.01")
    message = str(caught.value)
    assert message.startswith("manifests/26.01.yaml: extends: release '25.12' has release-specific text") or \
        "26.01.yaml: extends: release '25.12' has release-specific text" in message
    for key in ("banner.copyright", "banner.license", "notes.key_features", "notes.announcements", "notes.driver"):
        assert key in message
    assert "summary" not in message.split("inherits:")[1].split(";")[0]
    assert "inherit:" in message


def test_inherit_keeps_the_parents_text_on_purpose_and_names_only_its_keys(scratch):
    scratch.copy_release("25.12")
    scratch.copy_release("25.12", "26.01")
    keys = "[banner.copyright, banner.license, notes.driver, notes.key_features, notes.announcements, notes.amp, notes.also_includes, notes.not_in_image, notes.differences]"
    scratch.manifest("26.01", f"extends: '25.12'\nsummary: NVIDIA PyTorch 26.01\nbuild:\n  number: '1'\ninherit: {keys}\n")
    release = load_release(Project.at(scratch.root), "26.01").release
    assert release.notes.key_features == load_release(Project.at(scratch.root), "25.12").release.notes.key_features
    scratch.manifest("26.01", f"extends: '25.12'\nsummary: x\nbuild:\n  number: '1'\ninherit: [{keys[1:-1]}, os.name]\n")
    with pytest.raises(ManifestError, match=r"26.01.yaml: inherit: os.name: not release-specific text of '25.12'"):
        load_release(Project.at(scratch.root), "26.01")


@pytest.mark.parametrize("value, shown", [("5", "5"), ("0", "0"), ("notes", "'notes'"), ("{summary: true}", "a mapping"),
                                          ("null", "null"), ("''", "''"), ("false", "false"), ("[summary, 2]", "a list")])
@pytest.mark.parametrize("where", ["over a part", "in a part", "below an NVIDIA release", "without extends"])
def test_inherit_of_the_wrong_type_is_refused_wherever_it_stands(scratch, value, shown, where):
    expected = f"inherit: expected a list of keys such as [notes.announcements, banner.license], got {shown}"
    if where == "over a part":
        message, file = error(scratch, GOOD + f"inherit: {value}\n"), "r1.yaml"
    elif where == "in a part":
        part = scratch.root / "manifests" / "parts" / "debian-bookworm.yaml"
        part.write_text(part.read_text() + f"inherit: {value}\n")
        message, file = error(scratch, GOOD), "parts/debian-bookworm.yaml"
    elif where == "below an NVIDIA release":
        scratch.copy_release("25.12")
        message, file = error(scratch, f"extends: '25.12'\nsummary: x\nbuild:\n  number: '1'\ninherit: {value}\n"), "r1.yaml"
    else:
        message, file = error(scratch, GOOD.split("\n", 1)[1] + f"inherit: {value}\n"), "r1.yaml"
    assert message.endswith(f"/manifests/{file}: {expected}"), message


def test_inherit_over_shared_parts_only_is_refused_with_its_keys(scratch):
    message = error(scratch, GOOD + "inherit: [summary]\n")
    assert message.endswith("/manifests/r1.yaml: inherit: summary: only a release that extends another release inherits its "
                       "text; this one extends only shared parts ('parts/debian-bookworm')")
    assert load(scratch, GOOD + "inherit: []\n").release.summary == "a test release"


def test_parts_are_not_releases_and_need_no_inherit(scratch):
    # dev extends parts/debian-bookworm only: loads without inherit
    assert load_release(Project.at(REPO), "dev").release.summary


BASE_TENSORRT = """\
  tensorrt:
    version: 10.14.1.48
    install: base
"""


@pytest.mark.parametrize("met, constraints_extra, expected", [
    # the component that stands in must be one the base image carries
    ("{distribution: numpy, requires: numpy-libs, component: pytorch, evidence: its METADATA says so}", "",
     "pip.met_by_base.0.component: 'pytorch' is not a component the base image carries"),
    ("{distribution: numpy, requires: numpy-libs, component: nothere, evidence: its METADATA says so}", "",
     "pip.met_by_base.0.component: 'nothere' is not a component"),
    # the distribution that requires it is one the image installs
    ("{distribution: not-pinned, requires: x-libs, component: tensorrt, evidence: its METADATA says so}", "",
     "pip.met_by_base.0.distribution: 'not-pinned' is not pinned"),
    # a requirement the image meets itself needs no tolerance
    ("{distribution: numpy, requires: x-libs, component: tensorrt, evidence: its METADATA says so}", "x-libs==1.0\n",
     "pip.met_by_base.0.requires: 'x-libs' is pinned"),
])
def test_a_requirement_met_by_the_base_names_what_stands_in_for_it(scratch, met, constraints_extra, expected):
    text = GOOD.replace("  constraint_file: true\n", f"  constraint_file: true\n  met_by_base: [{met}]\n")
    text += BASE_TENSORRT
    message = error(scratch, text, DEV_CONSTRAINTS + constraints_extra)
    assert expected in message, message


def test_a_requirement_met_by_the_base_loads_and_is_tolerated_on_every_platform(scratch):
    from ngcbuild.manifest.catalog import Catalog
    from ngcbuild.render.plan import plan_image

    text = GOOD.replace("  constraint_file: true\n", "  constraint_file: true\n  met_by_base: [{distribution: numpy, "
                        "requires: numpy_libs.x, component: tensorrt, evidence: its METADATA says so}]\n") + BASE_TENSORRT
    loaded = load(scratch, text)
    tolerated = plan_image(loaded, Catalog.load(Project.at(scratch.root))).pip_check_tolerated
    line = "numpy [^ ]+ requires numpy-libs-x, which is not installed[.]"  # pip's canonical names
    assert tolerated == {"aarch64": [line], "x86_64": [line]}


@pytest.mark.parametrize("extra, expected", [
    ("env:\n  LD_LIBRARY_PATH: /a\nenv_prepend:\n  LD_LIBRARY_PATH: [/b]\n",
     "env_prepend.LD_LIBRARY_PATH: set in env too"),
    ("env_prepend:\n  LD_LIBRARY_PATH: []\n", "env_prepend.LD_LIBRARY_PATH: names no folder"),
    ("env_prepend:\n  LD_LIBRARY_PATH: ['/a:$HOME']\n", "env_prepend.LD_LIBRARY_PATH.0:"),
    ("env_prepend:\n  LD_LIBRARY_PATH: [relative/lib]\n", "is not an absolute path"),
    ("entrypoint: /usr/local/bin/x;rm\n", "entrypoint:"),
])
def test_prepended_folders_and_the_entrypoint_are_checked(scratch, extra, expected):
    message = error(scratch, GOOD + extra)
    assert expected in message, message
