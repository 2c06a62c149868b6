"""The entry points: `ngcbuild` (python -m ngcbuild) and `invoke` run the same tasks, declared once in
the task table, from any folder of the project; usage errors exit 2 with one line and no traceback;
`TASK --help` is help, for every task and every option; old spellings name the new ones."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from dev.tasks import CHECKOUT_TASKS, TOOLS
from dev.tasks import namespace as checkout_namespace

from ngcbuild.cli.tasks import TASKS
from ngcbuild.cli.tasks import namespace as product_namespace
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


# --- help: every task, every option, both programs ------------------------------------------------

def _listed(stdout: str) -> list[str]:
    """The task names of `--list` (a name starts its line after two spaces; wrapped help is indented more)."""
    return [line.split()[0] for line in stdout.splitlines() if line.startswith("  ") and line[2:3].strip()]


def _shown_flags(context) -> dict[str, int]:
    """How invoke's parser takes each argument of a task (`--release`, `-k`, `--no-screenshot`, `OLD`),
    and how many words its help line shows before the help (the flag, its value, `...` for a list)."""
    shown = {"-h, --help": 2}
    for argument in context.args.values():
        name = argument.names[0]
        if argument.positional:
            shown[name.upper()] = 1
        elif argument.kind is bool and argument.default is True:
            shown[f"--no-{name}"] = 1
        else:
            flag = ("-" if len(name) == 1 else "--") + name
            shown[flag] = 1 + argument.takes_value + (argument.kind is list)
    return shown


def _help_lines(stdout: str, shown: dict[str, int]) -> dict[str, str]:
    """The help text on each option's line of a task's help (after its flag and value); an option line
    for no argument of the task is an error."""
    options = stdout.split("\nOptions:\n", 1)[1]
    found = {}
    for line in options.splitlines():
        if not re.match(r"^  [-A-Z]", line):
            continue  # a wrapped line of the help above
        flag = next((f for f in shown if line[2:] == f or line[2:].startswith(f + " ")), None)
        assert flag is not None, f"an option line for no argument of the task: {line!r}"
        found[flag] = " ".join(line.split()[shown[flag]:])
    return found


def _help(program: str, task: str):
    return program, task, run_command(program, task, "--help", cwd=REPO)


@pytest.fixture(scope="module")
def helps():
    """`TASK --help` of every task the real programs list, through ngcbuild and invoke (in parallel)."""
    listed = {program: _listed(run_command(program, "--list", cwd=REPO).stdout) for program in ("ngcbuild", "invoke")}
    jobs = [(program, task) for program, tasks in listed.items() for task in tasks]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: _help(*job), jobs))
    return listed, {(program, task): result for program, task, result in results}


def test_the_programs_list_exactly_the_declared_tasks(helps):
    listed, _ = helps
    assert listed["ngcbuild"] == [task.name for task in TASKS]
    assert listed["invoke"] == [task.name for task in CHECKOUT_TASKS]


def test_every_task_s_help_exits_0_and_every_option_has_its_line_of_help(helps):
    """Not a sample: every task either program lists, every option invoke's parser accepts for it."""
    _, results = helps
    contexts = {c.name: c for c in checkout_namespace.to_contexts()}
    assert len(results) == len(TASKS) + len(CHECKOUT_TASKS)
    for (program, task), result in results.items():
        where = f"{program} {task} --help"
        assert result.returncode == 0, (where, result.stderr)
        assert result.stderr == "", (where, result.stderr)
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"Usage: {program} {task}"), (where, lines[0])
        assert lines[2].strip(), f"{where}: no summary line"
        expected = _shown_flags(contexts[task])
        shown = _help_lines(result.stdout, expected)
        assert set(shown) == set(expected), (where, sorted(set(shown) ^ set(expected)))
        blank = [flag for flag, text in shown.items() if not text.strip()]
        assert not blank, f"{where}: blank help for {blank}"


def test_help_survives_the_arguments_being_read_twice():
    """invoke 2.2 pops each help string as it builds a task's arguments, so the second reading had
    none (every help line blank since e855bf0): the table's tasks give the same help every time."""
    first, second = (
        {c.name: {a.name: a.help for a in c.args.values()} for c in product_namespace.to_contexts()} for _ in range(2))
    assert first == second
    assert all(text for arguments in second.values() for text in arguments.values())


@pytest.mark.parametrize("args", [("diff", "--help"), ("diff", "dev", "--help"), ("build", "--release", "--help"),
                                  ("--help", "diff"), ("smoke", "-h")])
def test_task_help_wherever_it_stands(args):
    result = run_command("ngcbuild", *args, cwd=REPO)
    assert result.returncode == 0, result.stderr
    task = next(a for a in args if not a.startswith("-") and a != "dev")
    assert result.stdout.startswith(f"Usage: ngcbuild {task}")
    assert not (REPO / "build" / "--help").exists()


def test_dash_h_is_help_never_an_option_of_the_task():
    result = run_command("ngcbuild", "smoke", "-h", cwd=REPO)
    assert result.returncode == 0
    assert "--host" in result.stdout and "Usage:" in result.stdout


def test_top_level_help_groups_the_tasks_by_stage_in_pipeline_order():
    result = run_command("ngcbuild", "--help", cwd=REPO)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    headings = [line.split(":")[0] for line in text.splitlines() if re.match(r"^[a-z]+: ", line)]
    assert headings == ["check", "build", "prove", "ship", "describe", "workflows"]
    # each task under its stage, in the table's order, with its one line
    for task in TASKS:
        section = text[text.index(f"\n{task.stage.name}: "):]
        line = next(line for line in section.splitlines() if line.startswith(f"  {task.name} "))
        assert task.summary.split()[0] in line, line
    assert text.index("\n  build ") < text.index("\n  smoke ") < text.index("\n  push ") < text.index("\n  notes ")


# --- usage errors and old spellings ---------------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["build"], "missing --release"),
    (["push", "--release", "dev"], "missing --registry"),
    (["promote", "--release", "dev", "--to", "localhost:5000"], "missing --from"),
    (["verify-attestation"], "missing --registry-image"),
    (["diff", "dev"], "diff: missing NEW"),
    (["build", "--release", "dev", "--no-such-option"], "--no-such-option"),
    (["no-such-task"], "no-such-task"),
    (["build", "--release"], "--release needs a value"),
    (["build", "--release", "dev", "--registry"], "--registry needs a value"),
    (["build", "--release", "dev", "--base-image"], "--base-image needs a value"),
    (["changed", "--since"], "--since needs a value"),
    (["prune", "--keep", "-1"], "--keep '-1': expected a whole number"),
])
def test_usage_errors_exit_2_with_one_line(args, says):
    result = run_command("ngcbuild", *args, cwd=REPO)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr


OLD_SPELLINGS = [
    (("render", "--release", "dev", "--base", "x"), "render --base is now --base-image"),
    (("build", "--release", "dev", "--base=x"), "build --base is now --base-image"),
    (("verify", "--release", "dev", "--base", "x"), "verify --base is now --base-image"),
    (("changed", "--base", "HEAD"), "changed --base is now --since"),
    (("matrix", "--json", "--changed"), "matrix --changed is now its own task: `ngcbuild changed"),
    (("matrix", "--base", "HEAD"), "matrix --base is now its own task: `ngcbuild changed"),
    (("matrix", "--releases", "dev"), "matrix --releases is now its own task: `ngcbuild changed"),
    (("rehearse", "--release", "dev"), "rehearse --release is now --releases"),
    (("rehearse", "--staging", "localhost:5000"), "rehearse --staging is now --staging-registry"),
    (("rehearse", "--registry", "localhost:5001"), "rehearse --registry is now --release-registry"),
    (("verify-attestation", "--image", "localhost:5000/a:b"), "verify-attestation --image is now --registry-image"),
    (("push", "--release", "dev", "--registry", "localhost:5000", "--cache"), "push --cache is now --cache-to"),
]


@pytest.mark.parametrize("program", ["ngcbuild", "invoke"])
@pytest.mark.parametrize("args, says", OLD_SPELLINGS, ids=[" ".join(a[:2]) for a, _ in OLD_SPELLINGS])
def test_an_old_spelling_names_the_new_one(program, args, says):
    result = run_command(program, *args, cwd=REPO)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == f"ngcbuild: {says}" or result.stderr.startswith(f"ngcbuild: {says}"), \
        result.stderr
    assert result.stderr.strip().count("\n") == 0 and result.stdout == ""


def test_every_old_spelling_is_answered_and_the_answers_are_tested():
    """Each renamed option of the table (the product's and the tools') is refused here or in the corpus."""
    declared = {(task.name, old.old) for task in CHECKOUT_TASKS for old in task.renamed}
    tested = {(args[0], arg.split("=")[0]) for args, _ in OLD_SPELLINGS for arg in args[1:]
              if (args[0], arg.split("=")[0]) in declared}
    assert declared - tested == {("bench", "--cache")}  # a tool's: tested below
    result = run_command("invoke", "bench", "--cache", cwd=REPO)
    assert result.returncode == 2 and "bench --cache is now --cache-figure" in result.stderr


def test_old_spellings_last_one_release_cycle():
    """Old spellings are kept for one release cycle: the version after the next drops them."""
    from importlib.metadata import version

    from packaging.version import Version

    assert Version(version("ngcbuild")) < Version("0.3"), \
        "remove the old spellings (Renamed entries of the task table) and their tests"


def test_outside_any_project_is_a_clean_error(tmp_path):
    result = run_command("ngcbuild", "render", "--release", "dev", cwd=tmp_path)
    assert result.returncode == 2
    assert "not inside an ngcbuild project" in result.stderr
    assert not (tmp_path / "build").exists()


# --- which tasks each program offers --------------------------------------------------------------

def test_the_installed_command_lists_only_the_users_tasks():
    result = run_command("ngcbuild", "--list", cwd=REPO)
    assert result.returncode == 0, result.stderr
    listed = set(_listed(result.stdout))
    assert listed == {t.name for t in TASKS} and not listed & {t.name for t in TOOLS}, listed


def test_invoke_in_the_checkout_adds_the_projects_tools():
    result = run_command("invoke", "--list", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert set(_listed(result.stdout)) - {t.name for t in TOOLS} == \
        set(_listed(run_command("ngcbuild", "--list", cwd=REPO).stdout))
    assert "develop: " in result.stdout


def test_a_tools_usage_error_exits_2_with_one_line():
    result = run_command("invoke", "bench", "--runs", "abc", cwd=REPO)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == "ngcbuild: --runs 'abc': expected a whole number from 1 to 999999999"


def test_a_users_project_lists_the_users_tasks(project):
    """A scratch project's tasks.py is a user's (no dev/ there): its tasks are ngcbuild's."""
    result = run_command("invoke", "--list", cwd=project.root)
    assert result.returncode == 0, result.stderr
    assert set(_listed(result.stdout)) == {t.name for t in TASKS}


def test_version_names_the_installed_ngcbuild():
    from importlib.metadata import version

    result = run_command("ngcbuild", "--version", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ngcbuild {version('ngcbuild')}"


# --- the table itself -----------------------------------------------------------------------------

def test_each_task_calls_a_function_that_takes_exactly_its_options():
    """A task is one entry plus one function: the function's keywords are the options' (Option.keyword)."""
    import inspect

    for task in CHECKOUT_TASKS:
        parameters = inspect.signature(task.run).parameters
        keywords = [option.keyword for option in task.options]
        assert set(keywords) == set(parameters), (task.name, sorted(set(keywords) ^ set(parameters)))


def test_an_option_name_has_one_meaning_across_tasks():
    """The same flag takes the same kind of value everywhere (a release, a registry, an engine...)."""
    kinds: dict[str, set] = {}
    for task in CHECKOUT_TASKS:
        for option in task.options:
            if not option.positional:
                kinds.setdefault(option.name, set()).add(option.value)
    mixed = {name: values for name, values in kinds.items() if len(values) > 1}
    assert not mixed, mixed


def test_a_broken_table_is_refused_naming_the_mistake():
    from ngcbuild.cli.declare import Option, Stage, Task, check_table

    stage = Stage("s", "a stage")
    with pytest.raises(ValueError, match="x --a: the help must be one line"):
        check_table((Task("x", stage, "one line", print, (Option("a", ""),)),), (stage,))
    with pytest.raises(ValueError, match="declared twice"):
        check_table((Task("x", stage, "one", print), Task("x", stage, "two", print)), (stage,))
    with pytest.raises(ValueError, match="'class' cannot be a keyword argument"):
        check_table((Task("x", stage, "one", print, (Option("class", "a keyword"),)),), (stage,))
