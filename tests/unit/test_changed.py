"""`invoke changed`: which releases a commit touches, through `extends`, constraints, templates and
ngcbuild's code: the inputs of the stamp (render/stamp.py)."""

import subprocess
from collections import Counter

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import buildable_releases, derived_release_names, load_release
from ngcbuild.render import changed
from ngcbuild.render.changed import affected_releases, buildable, changed_files, ci_jobs, selection
from ngcbuild.render.stamp import is_shared_input, shared_inputs

from ..conftest import REPO


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


@pytest.fixture
def repo(scratch):
    """dev, and `child` extending dev (so the chain is parts/debian-bookworm -> dev -> child), committed."""
    scratch.copy_release("dev")
    dev_constraints = (REPO / "constraints" / "dev.txt").read_text()
    scratch.manifest("child", "extends: dev\nsummary: a child of dev\n")
    scratch.constraints("child", dev_constraints)
    scratch.manifest("old", "status: archived\nsummary: gone\nos: {name: Debian, version: '9'}\n"
                            "python: {version: '3.6', install: system, site_packages: /usr/lib/python3}\n")
    _git(scratch.root, "init", "-q", "-b", "main")
    _git(scratch.root, "add", "-A")
    _git(scratch.root, "commit", "-qm", "base")
    return scratch


def _change(scratch, rel, text="# changed\n"):
    path = scratch.root / rel
    path.write_text(path.read_text() + text if path.exists() else text)
    _git(scratch.root, "add", "-A")
    _git(scratch.root, "commit", "-qm", f"change {rel}")


@pytest.mark.parametrize("rel, expected", [
    ("manifests/child.yaml", ["child"]),
    ("constraints/child.txt", ["child"]),
    ("manifests/dev.yaml", ["child", "dev"]),  # child extends dev
    ("manifests/parts/debian-bookworm.yaml", ["child", "dev"]),
    ("templates/image/Dockerfile.j2", ["child", "dev"]),  # image templates are shared by every release
    ("templates/docs/site/style.css", []),  # documents only: no image changes
    ("templates/docs/notes/release-notes.md.j2", []),
    ("README.md", []),
    ("manifests/old.yaml", []),  # archived: never built
])
def test_changed_releases_follow_extends_constraints_and_templates(repo, rel, expected):
    _change(repo, rel)
    project = Project.at(repo.root)
    files = changed_files(project, "HEAD~1")
    assert files == [rel]
    assert _names(affected_releases(project, files, buildable(project))) == expected
    assert selection(project, "HEAD~1")["releases"] == expected


def _names(releases):
    return [loaded.release.release for loaded in releases]


def _edit_catalog(scratch, old, new):
    path = scratch.root / "templates" / "components.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    _git(scratch.root, "add", "-A")
    _git(scratch.root, "commit", "-qm", "catalogue")


@pytest.mark.parametrize("old, new, expected", [
    # how the notes list a component: no image changes, no release is selected
    ("  short: cuBLAS\n", "  short: cuBLAS (renamed)\n", []),
    ("  example: 2.10.0a0+b4e4ee81d3\n", "  example: 2.11.0\n", []),
    ("  display: APEX\n", "  display: APEX\n  notes_names: [Apex]\n", []),
    # what reaches the image of a release that names the component (dev and child have pytorch)
    ("  label: com.nvidia.pytorch.version\n", "  label: com.nvidia.torch.version\n", ["child", "dev"]),
    ("display: PyTorch\n", "display: PyTorch (renamed)\n", ["child", "dev"]),
    # ... and not the image of a release that does not name it
    ("  env: [CUBLAS_VERSION]\n", "  env: [CUBLAS_VERSION, CUBLAS_VER]\n", []),
])
def test_a_catalogue_change_selects_the_releases_whose_image_it_changes(repo, old, new, expected):
    _edit_catalog(repo, old, new)
    project = Project.at(repo.root)
    assert changed_files(project, "HEAD~1") == ["templates/components.yaml"]
    assert selection(project, "HEAD~1")["releases"] == expected


def test_a_catalogue_that_was_no_catalogue_before_selects_every_release(repo):
    path = repo.root / "templates" / "components.yaml"
    good = path.read_text()
    path.write_text("- not: a mapping\n")
    _git(repo.root, "commit", "-qam", "broken")
    path.write_text(good)
    _git(repo.root, "commit", "-qam", "fixed")
    assert selection(Project.at(repo.root), "HEAD~1")["releases"] == ["child", "dev"]


def test_the_stamp_ignores_the_document_fields_of_the_catalogue(scratch):
    from ngcbuild.render.stamp import inputs_digest

    project = Project.at(scratch.root)
    path = project.catalog
    before = inputs_digest(project, [], None)
    path.write_text(path.read_text().replace("  short: cuBLAS\n", "  short: cuBLAS (renamed)\n"))
    assert inputs_digest(project, [], None) == before
    path.write_text(path.read_text().replace("  label: com.nvidia.pytorch.version\n", "  label: com.nvidia.x\n"))
    assert inputs_digest(project, [], None) != before


@pytest.mark.parametrize("rel", [
    "src/ngcbuild/render/plan.py",
    "src/ngcbuild/smoke/checks/test_gpu.py",  # the stamp counts every module of ngcbuild, the checks too
    "src/ngcbuild/engine/new_module.py",  # added (or removed): not there now, still code
    "templates/image/components/torch/pip.j2",
])
def test_a_change_to_ngcbuilds_code_or_an_image_template_selects_every_buildable_release(rel):
    project = Project.at(REPO)
    assert _names(affected_releases(project, [rel], buildable(project))) == \
        buildable_releases(project) + derived_release_names(project)


@pytest.mark.parametrize("rel, expected", [
    ("requirements/team-vision.txt", ["dev", "team-vision"]),  # its base too: its job makes the record FROM
    ("constraints/team-vision.lock", ["dev", "team-vision"]),
    ("manifests/derived/team-vision.yaml", ["dev", "team-vision"]),
    ("manifests/dev.yaml", ["dev", "team-vision"]),  # the base's manifest
    ("constraints/dev.txt", ["dev", "team-vision"]),  # the base's constraints
    ("manifests/parts/debian-bookworm.yaml", ["cuda-dev", "dev", "team-vision"]),
    ("constraints/cuda-dev.txt", ["cuda-dev"]),
])
def test_a_derived_release_is_planned_after_its_base_when_its_inputs_or_its_base_change(rel, expected):
    project = Project.at(REPO)
    assert _names(affected_releases(project, [rel], buildable(project))) == expected


def test_a_derived_release_is_planned_when_its_base_is_rebuilt_for_any_reason():
    """A catalogue change that selects dev rebuilds dev's image: team-vision is built FROM the new one."""
    project = Project.at(REPO)
    releases = buildable(project)
    assert _names(changed.with_bases(releases, {"dev"})) == ["dev", "team-vision"]
    assert _names(changed.with_bases(releases, {"team-vision"})) == ["dev", "team-vision"]
    assert _names(changed.with_bases(releases, {"cuda-dev"})) == ["cuda-dev"]


def test_a_derived_release_gets_jobs_of_its_own_that_name_their_base():
    from ngcbuild.workflow.choose import narrow

    project = Project.at(REPO)
    releases = changed.with_bases(buildable(project), {"team-vision"})
    plan = {"releases": _names(releases), "jobs": [j for j in ci_jobs(releases) if "base" not in j],
            "derived_jobs": [j for j in ci_jobs(releases) if "base" in j]}
    assert [j["release"] for j in plan["jobs"]] == ["dev"]
    assert plan["derived_jobs"] == [{"release": "team-vision", "platform": "linux/amd64", "arch": "amd64",
                                     "runner": ["self-hosted", "linux", "x64", "gpu"], "base": "dev"}]
    chosen = narrow(plan, "team-vision")  # a dispatch naming the derived release builds its base too
    assert chosen["releases"] == ["dev", "team-vision"] and [j["release"] for j in chosen["jobs"]] == ["dev"]
    assert narrow(plan, "dev")["derived_jobs"] == []


@pytest.mark.parametrize("rel", ["tests/unit/test_plan.py", "README.md", "docs/tasks.md", "templates/docs/site/style.css",
                                 "src/ngcbuild/smoke/locks/pytest-py3.10.txt", "dev/bench.py", "tasks.py"])
def test_what_the_stamp_does_not_read_selects_nothing(rel):
    project = Project.at(REPO)
    assert affected_releases(project, [rel], buildable(project)) == []


def test_changed_matches_exactly_the_files_the_stamp_digests():
    """One definition (stamp.shared_inputs) for both: every file the digest reads is a shared input."""
    project = Project.at(REPO)
    digested = [p for folder, pattern in shared_inputs(project) for p in folder.rglob(pattern) if p.is_file()]
    assert any(p.name == "plan.py" for p in digested) and any(p.name == "Dockerfile.j2" for p in digested)
    assert all(is_shared_input(project, p) for p in digested)
    others = [REPO / "README.md", REPO / "tests" / "unit" / "test_plan.py", REPO / "manifests" / "dev.yaml",
              REPO / "templates" / "components.yaml"]  # the catalogue counts by its image fields (above)
    assert not any(is_shared_input(project, p) for p in others)


def test_each_release_is_loaded_once(repo, monkeypatch):
    _change(repo, "templates/image/Dockerfile.j2")
    loads = Counter()

    def counting(project, name):
        loads[name] += 1
        return load_release(project, name)

    monkeypatch.setattr(changed, "load_release", counting)
    result = selection(Project.at(repo.root), "HEAD~1")
    assert result["releases"] == ["child", "dev"] and len(result["jobs"]) == 2
    assert loads == {"child": 1, "dev": 1, "old": 1}


def test_without_a_base_every_buildable_release_is_selected(repo):
    result = selection(Project.at(repo.root), None)
    assert result["releases"] == ["child", "dev"] and result["changed_files"] is None


def test_jobs_carry_platform_and_runner_labels(repo):
    repo.manifest("child", "extends: dev\nsummary: c\nbuild:\n  platforms: [linux/amd64, linux/arm64]\n")
    project = Project.at(repo.root)
    jobs = ci_jobs([load_release(project, "child")])
    assert jobs == [
        {"release": "child", "platform": "linux/amd64", "arch": "amd64", "runner": ["self-hosted", "linux", "x64", "gpu"]},
        {"release": "child", "platform": "linux/arm64", "arch": "arm64",
         "runner": ["self-hosted", "linux", "arm64", "gpu"]},
    ]


def test_a_bad_since_is_a_user_error(repo):
    with pytest.raises(UserError, match="--since 'no-such-ref'"):
        changed_files(Project.at(repo.root), "no-such-ref")


def test_invoke_changed_prints_json(repo):
    _change(repo, "constraints/child.txt")
    result = repo.invoke("changed", "--since", "HEAD~1")
    assert result.returncode == 0, result.stderr
    import json
    assert json.loads(result.stdout)["releases"] == ["child"]


def test_cuda_dev_is_built_smoked_and_published_on_gpu_runners_like_any_release():
    """release.yml's plan (invoke changed) gives cuda-dev a GPU runner per platform;
    its build job smokes with --require-gpu and publishes, as for every release."""
    jobs = ci_jobs([load_release(Project.at(REPO), "cuda-dev")])
    assert [(j["platform"], "gpu" in j["runner"]) for j in jobs] == [("linux/amd64", True), ("linux/arm64", True)]
    workflow = (REPO / ".github" / "workflows" / "release.yml").read_text()
    steps = (REPO / ".github" / "actions" / "release-image" / "action.yml").read_text()
    assert 'RELEASE: ${{ matrix.release }}' in workflow and "uses: ./.github/actions/release-image" in workflow
    assert 'invoke smoke --release "$RELEASE" --require-gpu' in steps
