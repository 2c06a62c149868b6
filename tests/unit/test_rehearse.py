"""`ngcbuild rehearse`'s act command line, built from the real workflows: every pinned action but
checkout mapped to its stand-in, every runner label to this host, secrets only by file."""

import re

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.project import Project
from ngcbuild.workflow import rehearse

from ..conftest import REPO


@pytest.fixture
def project(monkeypatch):
    monkeypatch.setattr(rehearse.shutil, "which", lambda name: "/opt/act/bin/act" if name == "act" else None)
    monkeypatch.setattr(rehearse, "stand_ins", _stand_ins_without_install_check)
    return Project.at(REPO)


def _stand_ins_without_install_check(project, text):
    """stand_ins() as it maps, without requiring `npm ci` to have run in this checkout."""
    return [(action, project.root / rehearse.STAND_INS / action.partition("@")[0].partition("/")[2])
            for action in sorted(set(re.findall(r"uses:\s*([\w.-]+/[\w.-]+@[\w.-]+)", text)))
            if not action.startswith(rehearse.CHECKOUT + "@")]


def _pairs(command, flag):
    return [command[i + 1] for i, arg in enumerate(command) if arg == flag]


@pytest.mark.parametrize("workflow", ["release.yml", "ci.yml"])
def test_every_pinned_action_but_checkout_has_a_stand_in(workflow):
    text = (REPO / ".github" / "workflows" / workflow).read_text()
    for action in set(re.findall(r"uses:\s*([\w.-]+/[\w.-]+)@", text)) - {rehearse.CHECKOUT}:
        assert (REPO / ".ci" / "actions" / action.split("/")[1] / "action.yml").is_file(), action


def test_release_command(project, tmp_path):
    secrets = tmp_path / "secrets.env"
    secrets.write_text("RELEASE_REGISTRY_PASSWORD=hunter2\n")
    command = rehearse.act_command(project, "release.yml", "workflow_dispatch", tmp_path, run_id="42",
                                   variables={"STAGING_REGISTRY": "localhost:5000"}, secret_file=secrets)
    assert command[:2] == ["/opt/act/bin/act", "workflow_dispatch"]
    assert "hunter2" not in " ".join(command)
    assert _pairs(command, "--secret-file") == [str(secrets)]
    assert set(_pairs(command, "--platform")) >= {"ubuntu-24.04=-self-hosted", "self-hosted=-self-hosted"}
    mapped = dict(m.split("=", 1) for m in _pairs(command, "--local-repository"))
    assert {a.split("@")[0] for a in mapped} == {"actions/setup-python", "actions/upload-artifact",
                                                 "actions/download-artifact"}
    assert all(re.fullmatch(r"actions/[\w-]+@[0-9a-f]{40}", a) for a in mapped)
    assert _pairs(command, "--var") == ["STAGING_REGISTRY=localhost:5000"]
    assert "GITHUB_RUN_ID=42" in _pairs(command, "--env")
    assert "--no-cache-server" in command and _pairs(command, "--artifact-server-addr") == ["127.0.0.1"]


@pytest.mark.parametrize("text, ok", [("A=1\n# note\n\nB_2= x y \n", True), ("a=hunter2\n", False),
                                      ("hunter2\n", False), ("=hunter2\n", False), ("A hunter2=1\n", False)],
                         ids=["good", "lower-key", "no-equals", "no-key", "space-in-key"])
def test_secret_file_lines(tmp_path, text, ok):
    path = tmp_path / "s.env"
    path.write_text(text)
    if ok:
        assert rehearse.check_secret_file(str(path)) == path
    else:
        with pytest.raises(UserError) as caught:
            rehearse.check_secret_file(str(path))
        assert "line 1" in str(caught.value) and "hunter2" not in str(caught.value)  # a line may hold a secret


def test_act_missing_is_a_user_error(monkeypatch):
    monkeypatch.setattr(rehearse.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="act .nektos/act. is not installed"):
        rehearse.find_act()
