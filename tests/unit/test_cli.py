"""The entry points: `ngcbuild` (python -m ngcbuild) and `invoke` run the same tasks, from any folder
of the project; usage errors exit 2 with one line and no traceback; `TASK --help` is help."""

import pytest

from tests.conftest import REPO, run_command


@pytest.fixture
def project(scratch):
    scratch.copy_release("dev")
    (scratch.root / "docs" / "deep").mkdir(parents=True)
    return scratch


def test_ngcbuild_works_from_a_subfolder_on_the_whole_project(project):
    result = project.ngcbuild("render", "--release", "dev", cwd=project.root / "docs" / "deep")
    assert result.returncode == 0, result.stderr
    assert (project.root / "build" / "dev" / "Dockerfile").is_file()
    assert not (project.root / "docs" / "deep" / "build").exists()


def test_invoke_works_from_a_subfolder_too(project):
    result = run_command("invoke", "render", "--release", "dev", cwd=project.root / "docs")
    assert result.returncode == 0, result.stderr
    assert (project.root / "build" / "dev" / "Dockerfile").is_file()


@pytest.mark.parametrize("program", ["ngcbuild", "invoke"])
@pytest.mark.parametrize("task", ["build", "smoke", "render", "push"])
def test_task_help_after_the_task_name(program, task):
    result = run_command(program, task, "--help", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout and f" {task} " in result.stdout
    assert "--release" in result.stdout
    assert not (REPO / "build" / "--help").exists()


def test_dash_h_is_help_never_an_option_of_the_task():
    result = run_command("ngcbuild", "smoke", "-h", cwd=REPO)
    assert result.returncode == 0
    assert "--host" in result.stdout and "Usage:" in result.stdout


@pytest.mark.parametrize("args, says", [
    (["build"], "missing --release"),
    (["push", "--release", "dev"], "missing --registry"),
    (["promote", "--release", "dev", "--to", "localhost:5000"], "missing --from"),
    (["build", "--release", "dev", "--no-such-option"], "--no-such-option"),
    (["no-such-task"], "no-such-task"),
    (["build", "--release"], "--release needs a value"),
    (["build", "--release", "dev", "--registry"], "--registry needs a value"),
    (["prune", "--keep", "-1"], "--keep '-1': expected a whole number"),
])
def test_usage_errors_exit_2_with_one_line(args, says):
    result = run_command("ngcbuild", *args, cwd=REPO)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr


def test_outside_any_project_is_a_clean_error(tmp_path):
    result = run_command("ngcbuild", "render", "--release", "dev", cwd=tmp_path)
    assert result.returncode == 2
    assert "not inside an ngcbuild project" in result.stderr
    assert not (tmp_path / "build").exists()


USER_TASKS = ("build", "smoke", "push", "render", "notes", "matrix", "diff", "changed", "publish", "promote",
              "sbom", "verify", "prune", "base", "docs")
TOOLS = ("test", "golden", "bench", "reliability")  # the project's own (dev/tasks.py): a checkout has them


def _listed(stdout: str) -> set[str]:
    """The task names of `--list` (a name starts its line after two spaces; wrapped help is indented more)."""
    return {line.split()[0] for line in stdout.splitlines() if line.startswith("  ") and line[2:3].strip()}


def test_the_installed_command_lists_only_the_users_tasks():
    result = run_command("ngcbuild", "--list", cwd=REPO)
    assert result.returncode == 0, result.stderr
    listed = _listed(result.stdout)
    assert set(USER_TASKS) <= listed and not listed & set(TOOLS), listed


def test_invoke_in_the_checkout_adds_the_projects_tools():
    result = run_command("invoke", "--list", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert set(USER_TASKS) | set(TOOLS) <= _listed(result.stdout)
    assert _listed(result.stdout) - set(TOOLS) == _listed(run_command("ngcbuild", "--list", cwd=REPO).stdout)


def test_a_tools_usage_error_exits_2_with_one_line():
    result = run_command("invoke", "bench", "--runs", "abc", cwd=REPO)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == "ngcbuild: --runs 'abc': expected a whole number of at least 1"


def test_a_users_project_lists_the_users_tasks(project):
    """A scratch project's tasks.py is a user's (no dev/ there): its tasks are ngcbuild's."""
    result = run_command("invoke", "--list", cwd=project.root)
    assert result.returncode == 0, result.stderr
    assert set(USER_TASKS) <= _listed(result.stdout) and not _listed(result.stdout) & set(TOOLS)


def test_version_names_the_installed_ngcbuild():
    from importlib.metadata import version

    result = run_command("ngcbuild", "--version", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ngcbuild {version('ngcbuild')}"
