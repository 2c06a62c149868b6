"""Hostile inputs that a byte file in cases/ cannot express: links out of the project, FIFOs and
devices, file-system state, arguments, git refs, adversarial versions. Each case sets up a scratch
project, runs one `invoke` command as a user would, and is judged on: the exit status it must have,
no traceback, no hang (a time bound), no secret echoed, no leftover (build/ written before an exit-2
validation error, a file written by an injected option), and the engine never contacted.

The classes are the rows of RELIABILITY.md's "Hostile input" table.
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..conftest import REPO, ScratchProject

# A secret that lives outside the project: no message may ever show it.
SECRET = "s3cr3t-T0KEN-4f9a"
# the secret as a message or a file could carry it: itself, and base64 of a login with it (a Docker config)
SECRET_FORMS = (SECRET, *(base64.b64encode(f"{user}:{SECRET}".encode()).decode()[:-4] for user in ("u", "ci-bot")))
TIME_BOUND_S = 30
MAX_MESSAGE = 1000  # characters of a one-line error: short excerpts only
EVIL = "1" + "a" * 40 + "!"  # the catastrophic-backtracking version of the issue


@dataclass(frozen=True)
class Outcome:
    exit_status: int | None  # None: it hung (killed at the time bound)
    stdout: str
    stderr: str
    written: tuple = ()  # the files the command wrote or changed (HostileCase.scan_outputs)

    @property
    def hung(self) -> bool:
        return self.exit_status is None

    @property
    def traceback(self) -> bool:
        # "Exception ignored": what the interpreter prints for an error in its last flush (a pipe closed)
        return "Traceback" in self.stdout + self.stderr or "Exception ignored" in self.stderr


@dataclass(frozen=True)
class HostileCase:
    name: str
    klass: str
    argv: tuple[str, ...]
    setup: Callable[[ScratchProject, Path], None] = lambda project, outside: None
    exit_status: int = 2
    # must hold afterwards: a sentence saying what is wrong, or None
    after: Callable[[ScratchProject, Path], str | None] = lambda project, outside: None
    mentions: tuple[str, ...] = ()  # fragments the message must contain
    absent: tuple[str, ...] = ()  # fragments the message must not contain
    engine_allowed: bool = False
    extra_env: dict = field(default_factory=dict)
    shows: tuple[str, ...] = ()  # fragments stdout must contain (help, lists)
    hides: tuple[str, ...] = ()  # fragments stdout must not contain
    program: str = "invoke"  # or "ngcbuild", where invoke's own code fails before it loads tasks.py
    # servers the case talks to (fakes.py), started after `setup`: (project, outside) -> (placeholders
    # and their values, for argv and extra_env; the servers, closed when the command has ended)
    serve: Callable[[ScratchProject, Path], tuple[dict, list]] | None = None
    cwd: str = ""  # the folder of the project the command runs in (a subfolder: keygen's)
    time_bound: int = TIME_BOUND_S
    process: bool = False  # run as a fresh interpreter: the case tests its start (zygote.py)
    # where the command's standard output goes: "captured" (a pipe read to the end), "closed" (`>&-`) or
    # "head1" (a pipe whose reader takes one byte and goes away: `| head -c1`)
    stdout: str = "captured"
    # every file the command wrote or changed in the project (build/, keys/...) is searched for the secret
    # as well as its messages (the tasks' outputs walked with credential-bearing inputs)
    scan_outputs: bool = False


def dev_project(project: ScratchProject) -> None:
    project.copy_release("dev")


def with_git(project: ScratchProject) -> None:
    def git(*args):
        subprocess.run(["git", "-C", str(project.root), *args], check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")


def secret_file(outside: Path) -> Path:
    path = outside / "credentials"
    path.write_text(f"token={SECRET}\nuser:{SECRET}:0:0\n")
    return path


def nothing_built(project: ScratchProject, outside: Path) -> str | None:
    build = project.root / "build"
    if build.exists():
        return f"build/ was written: {sorted(p.name for p in build.rglob('*'))[:6]}"
    return None


def no_file(name: str):
    def check(project: ScratchProject, outside: Path) -> str | None:
        return f"{name} was written" if (project.root / name).exists() else None
    return check


def setup_all_checks(*checks):
    def check(project: ScratchProject, outside: Path) -> str | None:
        return next((found for found in (c(project, outside) for c in checks) if found), None)
    return check


def setup_all(*steps):
    def run(project: ScratchProject, outside: Path) -> None:
        for step in steps:
            step(project, outside)
    return run


def dev(project, outside):
    dev_project(project)


def git_repo(project, outside):
    dev_project(project)
    with_git(project)


def catalog_then_restored(text: Callable[[Path], str] | None):
    """Two commits: the catalogue as `text` makes it (None: a link to a secret outside the project), then
    as it was: `changed --since HEAD~1` reads the hostile one back from git."""
    def step(project, outside):
        path = project.root / "templates" / "components.yaml"
        good = path.read_bytes()
        path.unlink()
        if text is None:
            os.symlink(secret_file(outside), path)
        else:
            path.write_bytes(text(outside).encode("utf-8", "surrogateescape"))
        with_git(project)
        path.unlink()
        path.write_bytes(good)
        subprocess.run(["git", "-C", str(project.root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam",
                        "restored"], check=True, capture_output=True)
    return step


def replace_with_link(rel: str, target: Callable[[Path], str]):
    def step(project, outside):
        path = project.root / rel
        path.unlink(missing_ok=True)
        os.symlink(target(outside), path)
    return step


def replace_with_fifo(rel: str):
    def step(project, outside):
        path = project.root / rel
        path.unlink(missing_ok=True)
        os.mkfifo(path)
    return step


def replace_with_dir(rel: str):
    def step(project, outside):
        path = project.root / rel
        path.unlink(missing_ok=True)
        path.mkdir(parents=True)
    return step


def write(rel: str, text: str):
    def step(project, outside):
        path = project.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return step


def edit(rel: str, old: str, new: str):
    def step(project, outside):
        path = project.root / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new))
    return step


def record(text: str):
    return write("build/dev/record.json", text)


def copy_archived(project, outside):
    shutil.copy(REPO / "manifests" / "19.08.yaml", project.root / "manifests" / "19.08.yaml")


def build_a_file(project, outside):
    (project.root / "build").write_text("not a directory\n")


def build_release_a_file(project, outside):
    (project.root / "build").mkdir()
    (project.root / "build" / "dev").write_text("not a directory\n")


def notes_output_a_dir(project, outside):
    (project.root / "build" / "dev" / "release-notes.md").mkdir(parents=True)


def outside_with_secret_manifest(outside: Path) -> str:
    path = outside / "manifest.yaml"
    path.write_text(f"summary: {SECRET}\nnot valid: [\n")
    return str(path)


def pem_not(project, outside):
    (outside / "not.pem").write_text(f"password={SECRET}\n")


MANIFEST = "manifests/dev.yaml"
CONSTRAINTS = "constraints/dev.txt"
PY = (sys.executable,)


def cases() -> list[HostileCase]:
    c = []
    add = c.append

    # --- catastrophic backtracking: versions and pins that hang a backtracking regex
    for name, rel, old, new, argv in [
        ("backtrack-component-version", MANIFEST, "version: 2.13.0+cpu", f"version: '{EVIL}'", ("render", "--release", "dev")),
        ("backtrack-pin", CONSTRAINTS, "numpy==", f"numpy=={EVIL}\nnumpyx==", ("render", "--release", "dev")),
        ("backtrack-long-pin", CONSTRAINTS, "numpy==", "numpy==1" + "a1" * 2000 + "!\nnumpyx==", ("render", "--release", "dev")),
        ("backtrack-apt-pin", "manifests/parts/debian-bookworm.yaml", "3.11.2-1+b1", EVIL, ("render", "--release", "dev")),
        ("backtrack-matrix", MANIFEST, "version: 2.13.0+cpu", f"version: '{EVIL}'", ("matrix",)),
        ("backtrack-notes", MANIFEST, "version: 2.13.0+cpu", f"version: '{EVIL}'", ("notes", "--release", "dev")),
    ]:
        add(HostileCase(name, "catastrophic backtracking", argv, setup_all(dev, edit(rel, old, new)),
                        after=nothing_built))
    add(HostileCase("backtrack-base-arg", "catastrophic backtracking",
                    ("render", "--release", "dev", "--base-image", "a" + "-a" * 30 + "/" + "a" * 40 + "!"),
                    dev, after=nothing_built))

    # --- option injection into git
    for name, argv in [
        ("git-since-output", ("changed", "--since=--output=injected")),
        ("git-since-exec", ("changed", "--since=--ext-diff")),
        ("git-since-unknown", ("changed", "--since=no-such-branch")),
        ("git-since-range", ("changed", "--since=HEAD...HEAD~9")),
        ("git-since-with-releases", ("changed", "--releases", "dev", "--since", "--output=injected")),
    ]:
        add(HostileCase(name, "option injection into git", argv, git_repo, after=no_file("injected")))

    # --- the catalogue where the changes start (changed reads it from git to see which components changed)
    for name, hostile, status, shows in [
        ("git-catalog-huge-at-base", lambda outside: "x: " + "a" * (2 << 20) + "\n", 1, ()),
        ("git-catalog-link-at-base", None, 0, ('"dev"',)),
        ("git-catalog-not-utf8-at-base", lambda outside: "\udcff\udcfe: [\n", 0, ('"dev"',)),
        ("git-catalog-not-a-mapping-at-base", lambda outside: "- [" * 50 + "\n", 0, ('"dev"',)),
    ]:
        add(HostileCase(name, "hostile git history", ("changed", "--since", "HEAD~1"),
                        setup_all(dev, catalog_then_restored(hostile)), exit_status=status, shows=shows,
                        absent=(SECRET, "Traceback")))

    # --- files reached through links or special files
    add(HostileCase("link-constraints-outside", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link(CONSTRAINTS, lambda o: str(secret_file(o)))),
                    absent=(SECRET,), after=nothing_built))
    add(HostileCase("link-manifest-outside", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link(MANIFEST, outside_with_secret_manifest)),
                    absent=(SECRET,), after=nothing_built))
    add(HostileCase("link-part-outside", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link("manifests/parts/debian-bookworm.yaml",
                                                     outside_with_secret_manifest)),
                    absent=(SECRET,), after=nothing_built))
    add(HostileCase("constraints-dev-zero", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link(CONSTRAINTS, lambda o: "/dev/zero")), after=nothing_built))
    add(HostileCase("manifest-dev-zero", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link(MANIFEST, lambda o: "/dev/zero")), after=nothing_built))
    add(HostileCase("manifest-fifo", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_fifo(MANIFEST)), after=nothing_built))
    add(HostileCase("constraints-fifo", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_fifo(CONSTRAINTS)), after=nothing_built))
    add(HostileCase("manifest-directory", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_dir(MANIFEST)), after=nothing_built, absent=("did you mean",)))
    add(HostileCase("constraints-directory", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_dir(CONSTRAINTS)), after=nothing_built))
    add(HostileCase("catalog-link-outside", "links and special files", ("render", "--release", "dev"),
                    setup_all(dev, replace_with_link("templates/components.yaml",
                                                     lambda o: str(secret_file(o)))),
                    absent=(SECRET,), after=nothing_built))
    add(HostileCase("record-link-outside", "links and special files",
                    ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, write("build/dev/.keep", ""),
                              replace_with_link("build/dev/record.json", lambda o: str(secret_file(o)))),
                    absent=(SECRET,), exit_status=1, mentions=("record.json is damaged",)))
    add(HostileCase("record-fifo", "links and special files",
                    ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, write("build/dev/.keep", ""), replace_with_fifo("build/dev/record.json")),
                    exit_status=1, mentions=("record.json is damaged",)))

    # --- bump and diff --images: the proposal's name, its target files, the SBOMs read
    bumpable = dev  # dev states its policy (bump:)
    no_proposal = setup_all_checks(nothing_built, no_file("manifests/next.yaml"), no_file("constraints/next.txt"))
    for name, argv, mentions in [
        ("bump-as-option-like", ("bump", "--release", "dev", "--as=-x"), ("expected a release name",)),
        ("bump-as-flag", ("bump", "--release", "dev", "--as=--check"), ("needs a value",)),
        ("bump-as-path-like", ("bump", "--release", "dev", "--as=../../etc/passwd"), ("expected a release name",)),
        ("bump-as-absolute", ("bump", "--release", "dev", "--as=/tmp/next"), ("expected a release name",)),
        ("bump-as-newline", ("bump", "--release", "dev", "--as=next\nx"), ("expected a release name",)),
        ("bump-as-too-long", ("bump", "--release", "dev", "--as=" + "n" * 40), ("expected a release name",)),
        ("bump-as-itself", ("bump", "--release", "dev", "--as=dev"), ("that is the release being bumped",)),
        ("bump-release-path-like", ("bump", "--release=../x", "--as=next"), ("--release",)),
        ("bump-check-and-as", ("bump", "--release", "dev", "--check", "--as=next"), ("--as cannot go with --check",)),
        ("bump-no-as", ("bump", "--release", "dev"), ("--as",)),
    ]:
        add(HostileCase(name, "bump and image diff arguments", argv, bumpable, mentions=mentions, after=no_proposal))
    add(HostileCase("bump-no-policy", "bump and image diff arguments", ("bump", "--release", "dev", "--as=next"),
                    setup_all(dev, edit(MANIFEST, "\nbump:\n  leader: torch\n  leader_local: cpu\n", "\n")),
                    mentions=("bump", "no policy"), after=no_proposal))
    add(HostileCase("bump-as-existing-release", "bump and image diff arguments",
                    ("bump", "--release", "dev", "--as=other"),
                    setup_all(bumpable, write("manifests/other.yaml", "extends: dev\n"),
                              write("constraints/other.txt", "torch==2.13.0+cpu\n")),
                    mentions=("was not proposed by ngcbuild bump from dev",), after=nothing_built))
    add(HostileCase("bump-as-half-release", "bump and image diff arguments", ("bump", "--release", "dev", "--as=next"),
                    setup_all(bumpable, write("constraints/next.txt", "torch==1\n")),
                    mentions=("manifests/next.yaml is missing",), after=nothing_built))
    for name, rel, step in [
        ("bump-target-manifest-link", "manifests/next.yaml", lambda rel: replace_with_link(rel, lambda o: str(
            secret_file(o)))),
        ("bump-target-constraints-link", "constraints/next.txt", lambda rel: replace_with_link(rel, lambda o: str(
            secret_file(o)))),
        ("bump-target-manifest-fifo", "manifests/next.yaml", replace_with_fifo),
        ("bump-target-constraints-fifo", "constraints/next.txt", replace_with_fifo),
        ("bump-target-manifest-folder", "manifests/next.yaml", replace_with_dir),
        ("bump-report-link", "build/next/bump.md", lambda rel: setup_all(write("build/next/.keep", ""),
                                                                           replace_with_link(rel, lambda o: str(
                                                                               secret_file(o))))),
        ("bump-report-fifo", "build/next/bump.md", lambda rel: setup_all(write("build/next/.keep", ""),
                                                                           replace_with_fifo(rel))),
    ]:
        add(HostileCase(name, "bump and image diff arguments", ("bump", "--release", "dev", "--as=next"),
                        setup_all(bumpable, step(rel)), absent=(SECRET,), mentions=(rel,),
                        after=setup_all_checks(*(no_file(f) for f in ("manifests/next.yaml", "constraints/next.txt")
                                                 if f != rel))))
    add(HostileCase("diff-images-sbom-link", "bump and image diff arguments", ("diff", "dev", "dev", "--images"),
                    setup_all(dev, write("build/dev/record.json", "{}"),
                              replace_with_link("build/dev/sbom.cdx.json", lambda o: str(secret_file(o)))),
                    exit_status=1, absent=(SECRET,), mentions=("sbom.cdx.json is damaged",)))
    add(HostileCase("diff-images-sbom-fifo", "bump and image diff arguments", ("diff", "dev", "dev", "--images"),
                    setup_all(dev, write("build/dev/record.json", "{}"), replace_with_fifo("build/dev/sbom.cdx.json")),
                    exit_status=1, mentions=("sbom.cdx.json is damaged",)))
    add(HostileCase("diff-images-release-path", "bump and image diff arguments", ("diff", "../../etc", "dev", "--images"),
                    dev, mentions=("expected a release name",)))
    add(HostileCase("diff-images-not-built", "bump and image diff arguments", ("diff", "dev", "dev", "--images"),
                    dev, mentions=("ngcbuild sbom --release dev",)))

    # --- file-system state
    add(HostileCase("build-is-a-file", "file-system state", ("render", "--release", "dev"),
                    setup_all(dev, build_a_file), exit_status=1, mentions=("build",)))
    add(HostileCase("build-release-is-a-file", "file-system state", ("render", "--release", "dev"),
                    setup_all(dev, build_release_a_file), exit_status=1, mentions=("build/dev",)))
    add(HostileCase("notes-output-is-a-dir", "file-system state", ("notes", "--release", "dev"),
                    setup_all(dev, notes_output_a_dir), exit_status=1, mentions=("release-notes.md",)))
    add(HostileCase("record-is-a-dir", "file-system state",
                    ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, replace_with_dir("build/dev/record.json")), exit_status=1, mentions=("record.json is damaged",)))
    add(HostileCase("docs-site-is-a-file", "file-system state", ("docs", "--no-screenshot"),
                    setup_all(dev, write("build/site", "a file")), exit_status=1, mentions=("build/site",)))
    add(HostileCase("long-project-path", "file-system state", ("render", "--release", "dev"),
                    dev, exit_status=1, extra_env={"_NGCBUILD_DEEP": "1"}))

    # --- arguments checked late or never
    registry_cases = [
        ("registry-space", "local host:5000"), ("registry-upper", "LOCALHOST:5000"),
        ("registry-empty", ""), ("registry-credentials", f"user:{SECRET}@localhost:5000"),
        ("registry-port-range", "localhost:99999"), ("registry-scheme", "http://localhost:5000"),
    ]
    for name, value in registry_cases:
        add(HostileCase(f"build-{name}", "arguments", ("build", "--release", "dev", "--registry", value),
                        dev, after=nothing_built, absent=(SECRET,)))
        add(HostileCase(f"push-{name}", "arguments", ("push", "--release", "dev", "--registry", value),
                        setup_all(dev, record('{"image_id": "sha256:' + "0" * 64 + '", "tags": []}')),
                        absent=(SECRET,)))
        add(HostileCase(f"build-reuse-from-{name}", "arguments", ("build", "--release", "dev", "--reuse-from", value),
                        dev, after=nothing_built, absent=(SECRET,)))
        add(HostileCase(f"push-cache-to-{name}", "arguments",
                        ("push", "--release", "dev", "--registry", "127.0.0.1:9", "--cache-to", value),
                        setup_all(dev, record('{"image_id": "sha256:' + "0" * 64 + '", "tags": []}')),
                        absent=(SECRET,)))
    add(HostileCase("promote-from-credentials", "arguments",
                    ("promote", "--release", "dev", "--from", f"user:{SECRET}@localhost:5000", "--to", "localhost:5001"),
                    setup_all(dev, record("{}")), absent=(SECRET,),
                    mentions=("NGCBUILD_REGISTRY_USER",)))
    add(HostileCase("promote-to-upper", "arguments",
                    ("promote", "--release", "dev", "--from", "localhost:5000", "--to", "Registry:5001"),
                    setup_all(dev, record("{}"))))
    add(HostileCase("smoke-threshold-word", "arguments",
                    ("smoke", "--release", "dev", "--perf", "--baseline", "dev", "--threshold", "five"), dev,
                    after=nothing_built))
    add(HostileCase("smoke-threshold-nan", "arguments",
                    ("smoke", "--release", "dev", "--perf", "--baseline", "dev", "--threshold", "nan"), dev,
                    after=nothing_built))
    add(HostileCase("smoke-python-missing", "arguments",
                    ("smoke", "--host", "--expect-from-env", "--python", "/nonexistent/python"), dev,
                    after=nothing_built))
    add(HostileCase("mutate-jobs-zero", "arguments", ("mutate", "--release", "dev", "--jobs", "0"), dev,
                    after=nothing_built, mentions=("--jobs",)))
    add(HostileCase("mutate-image-credentials", "arguments",
                    ("mutate", "--release", "dev", "--image", f"user:{SECRET}@localhost:5000/x:y"), dev,
                    after=nothing_built, absent=(SECRET,), mentions=("--image",)))
    add(HostileCase("mutate-release-traversal", "arguments", ("mutate", "--release", "../dev"), dev,
                    after=nothing_built, mentions=("--release",)))
    add(HostileCase("repro-against-credentials", "arguments",
                    ("repro", "--release", "dev", "--against", f"user:{SECRET}@localhost:5000/x:y"), dev,
                    after=nothing_built, absent=(SECRET,), mentions=("--against",)))
    add(HostileCase("repro-against-option-like", "arguments", ("repro", "--release", "dev", "--against=-rf"), dev,
                    after=nothing_built, mentions=("--against",)))
    add(HostileCase("repro-release-traversal", "arguments", ("repro", "--release", "../dev"), dev,
                    after=nothing_built, mentions=("--release",)))
    for name, value in [("negative", "-1"), ("float", "1.7e9"), ("option-like", "--output=x"), ("huge", "9" * 30),
                        ("words", "yesterday")]:
        add(HostileCase(f"build-source-date-epoch-{name}", "arguments", ("build", "--release", "dev"), dev,
                        after=nothing_built, mentions=("SOURCE_DATE_EPOCH",), extra_env={"SOURCE_DATE_EPOCH": value}))
        add(HostileCase(f"repro-source-date-epoch-{name}", "arguments", ("repro", "--release", "dev"), dev,
                        after=nothing_built, mentions=("SOURCE_DATE_EPOCH",), extra_env={"SOURCE_DATE_EPOCH": value}))
    add(HostileCase("build-wheelhouse-file", "arguments",
                    ("build", "--release", "dev", "--wheelhouse", "manifests/dev.yaml"), dev, after=nothing_built))
    add(HostileCase("build-wheelhouse-missing", "arguments",
                    ("build", "--release", "dev", "--wheelhouse", "/nonexistent/wheels"), dev, after=nothing_built))
    add(HostileCase("build-ca-bundle-not-pem", "arguments",
                    ("build", "--release", "dev", "--ca-bundle", "OUTSIDE/not.pem"), setup_all(dev, pem_not),
                    after=nothing_built, absent=(SECRET,)))
    add(HostileCase("build-ca-bundle-dir", "arguments",
                    ("build", "--release", "dev", "--ca-bundle", "manifests"), dev, after=nothing_built))
    add(HostileCase("build-label-cr", "arguments", ("build", "--release", "dev", "--label", "a.b=x\ry"), dev,
                    after=nothing_built))
    add(HostileCase("build-label-tab-key", "arguments", ("build", "--release", "dev", "--label", "a\tb=x"), dev,
                    after=nothing_built))
    add(HostileCase("build-platform", "arguments", ("build", "--release", "dev", "--platform", "linux/s390x"), dev,
                    after=nothing_built))
    add(HostileCase("build-platform-not-listed", "arguments", ("build", "--release", "dev", "--platform", "linux/arm64"),
                    dev, after=nothing_built, mentions=("build.platforms", "--force-platform")))
    add(HostileCase("base-platform-unknown", "arguments", ("base", "--release", "dev", "--platform", "linux/mips64le"),
                    dev, after=nothing_built, mentions=("--platform",)))
    add(HostileCase("build-base-bad", "arguments", ("build", "--release", "dev", "--base-image", "Not A Ref"), dev,
                    after=nothing_built))
    add(HostileCase("record-is-a-list", "arguments", ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, record("[]")), exit_status=1, mentions=("record.json is damaged",)))
    add(HostileCase("record-is-a-string", "arguments", ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, record('"x"')), exit_status=1, mentions=("record.json is damaged",)))
    add(HostileCase("record-lacks-image", "arguments", ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, record('{"tags": 5}')), exit_status=1, mentions=("record.json is damaged",)))

    add(HostileCase("build-half-credentials", "arguments", ("build", "--release", "dev"), dev,
                    extra_env={"NGCBUILD_REGISTRY_USER": "someone"}, after=nothing_built,
                    mentions=("NGCBUILD_REGISTRY_PASSWORD",)))
    add(HostileCase("publish-half-credentials", "arguments", ("publish", "--release", "dev", "--registry", "127.0.0.1:9"),
                    dev, extra_env={"NGCBUILD_REGISTRY_PASSWORD": SECRET}, after=nothing_built, absent=(SECRET,)))

    add(HostileCase("build-archived", "arguments", ("build", "--release", "19.08"),
                    setup_all(dev, copy_archived), after=nothing_built, mentions=("archived",)))
    add(HostileCase("publish-without-record", "arguments", ("publish", "--release", "dev", "--registry", "127.0.0.1:9"),
                    dev, after=nothing_built, mentions=("record.json",)))

    # --- the workflow rehearsal (ngcbuild rehearse) and the dispatch's choice of releases
    rehearse = ("rehearse", "--releases", "dev", "--staging-registry", "localhost:5000",
                "--release-registry", "localhost:5001")
    for name, argv in [
        ("rehearse-staging-credentials", ("rehearse", "--releases", "dev",
                                          "--staging-registry", f"user:{SECRET}@localhost:5000",
                                          "--release-registry", "localhost:5001")),
        ("rehearse-registry-scheme", ("rehearse", "--releases", "dev", "--staging-registry", "localhost:5000",
                                      "--release-registry", "http://localhost:5001")),
        ("rehearse-same-registries", ("rehearse", "--releases", "dev", "--staging-registry", "localhost:5000",
                                      "--release-registry", "localhost:5000")),
        ("rehearse-release-injection", ("rehearse", "--releases", "dev;touch injected",
                                        "--staging-registry", "localhost:5000", "--release-registry", "localhost:5001")),
        ("rehearse-no-release", ("rehearse", "--releases", " , ", "--staging-registry", "localhost:5000",
                                 "--release-registry", "localhost:5001")),
        ("rehearse-registry-option-like", ("rehearse", "--releases", "dev", "--staging-registry=--release-registry",
                                           "--release-registry", "localhost:5001")),
        ("rehearse-secret-file-missing", (*rehearse, "--secret-file", "OUTSIDE/none.env")),
        ("rehearse-secret-file-dir", (*rehearse, "--secret-file", "manifests")),
        ("rehearse-secret-file-bad-line", (*rehearse, "--secret-file", "OUTSIDE/credentials")),
        ("rehearse-ci-unknown-job", ("rehearse", "--workflow", "ci", "--job", "deploy")),
        ("rehearse-unit-tests-option-like", ("rehearse", "--workflow", "ci", "--job", "unit", "--unit-tests=--co")),
        ("rehearse-unit-tests-injection", ("rehearse", "--workflow", "ci", "--job", "unit",
                                           "--unit-tests", "x\" ; touch injected ; \"")),
        ("rehearse-unit-tests-huge", ("rehearse", "--workflow", "ci", "--job", "unit", "--unit-tests", "a" * 5000)),
        ("rehearse-unit-tests-without-unit", ("rehearse", "--workflow", "ci", "--job", "lint", "--unit-tests", "x")),
        ("rehearse-unit-tests-release", (*rehearse, "--unit-tests", "x")),
        ("rehearse-unknown-workflow", ("rehearse", "--workflow", "../x")),
        ("changed-releases-unknown", ("changed", "--releases", "dev nope")),
        ("changed-releases-injection", ("changed", "--releases", "--output=injected")),
        ("changed-releases-huge", ("changed", "--releases", "dev " * 2000)),
    ]:
        add(HostileCase(name, "arguments", argv, setup_all(git_repo, lambda p, o: secret_file(o)),
                        after=setup_all_checks(nothing_built, no_file("injected")), absent=(SECRET,)))
    add(HostileCase("rehearse-act-missing", "arguments", rehearse, git_repo, after=nothing_built,
                    mentions=("act (nektos/act) is not installed",), extra_env={"PATH": "/usr/bin:/bin"}))

    # --- values echoed in messages: short, escaped, one line
    for name, text in [
        ("key-with-newline", '"sum\\nmary": x\n'),
        ("key-huge", "k" * 5000 + ": x\n"),
        ("value-huge-with-controls", "summary: \"" + "\\x1b[31m\\r" * 800 + "\"\n"),
    ]:
        add(HostileCase(name, "echoed values", ("render", "--release", "dev"),
                        setup_all(dev, edit(MANIFEST, "summary: CPU-only development release on Debian bookworm with a "
                                                      "PyTorch CPU wheel\n", text)), after=nothing_built,
                        absent=("\x1b[", "\r")))
    add(HostileCase("release-arg-huge", "echoed values", ("render", "--release", "x" * 5000), dev,
                    after=nothing_built, mentions=("5000 characters",)))
    add(HostileCase("label-huge", "echoed values", ("build", "--release", "dev", "--label", "a=" + "\x1b" * 3000), dev,
                    after=nothing_built, absent=("\x1b",)))

    # --- wrong help in errors
    add(HostileCase("extends-float", "wrong help", ("render", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "extends: parts/debian-bookworm", "extends: 20.10")),
                    mentions=("'20.10'",), absent=("'20.1'",), after=nothing_built))
    add(HostileCase("extends-float-in-list", "wrong help", ("render", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "extends: parts/debian-bookworm", "extends: [parts/debian-bookworm, 20.10]")),
                    mentions=("'20.10'",), absent=("'20.1'",), after=nothing_built))
    add(HostileCase("summary-float", "wrong help", ("render", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "summary: CPU-only development release on Debian bookworm with a PyTorch CPU wheel",
                                             "summary: 20.10")),
                    mentions=("'20.10'",), absent=("'20.1'",), after=nothing_built))
    add(HostileCase("version-float", "wrong help", ("render", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "version: 2.13.0+cpu", "version: 2.130")),
                    mentions=("'2.130'",), absent=("'2.13'",), after=nothing_built))
    add(HostileCase("stray-upper-case-manifest", "wrong help", ("matrix",),
                    setup_all(dev, write("manifests/Dev.yaml", "summary: x\n")),
                    mentions=("Dev.yaml",), absent=("--release",)))
    add(HostileCase("stray-bad-name-manifest-notes", "wrong help", ("notes", "--release", "dev"),
                    setup_all(dev, write("manifests/my release.yaml", "summary: x\n")),
                    mentions=("my release.yaml",), absent=("--release",)))

    entry_point_cases(add)
    old_spelling_cases(add)
    attestation_cases(add)
    docs_cases(add)
    guide_cases(add)
    records_cases(add)
    engine_address_cases(add)
    stamp_cases(add)
    validation_cases(add)
    chain_path_inherit_cases(add)
    audit_cases(add)
    derived_cases(add)
    resolver_cases(add)
    from .record_hostile import document_cases, record_value_cases  # build/R/'s files: their one readers

    record_value_cases(add)
    document_cases(add)
    from .trust import trust_cases  # the trust chain's cases (issue 32): registries, indexes, keys

    trust_cases(add)
    from .every_task import every_task_cases  # every task's outputs, secrets and printing (issue 43)
    from .round5 import round5_cases  # issue 43's other classes

    every_task_cases(add)
    round5_cases(add)
    from .push_hostile import push_cases  # ngcbuild's own push against a registry that misbehaves (issue 41)

    push_cases(add)
    from .round6 import round6_cases  # issue 54's classes

    round6_cases(add)
    from .mirror_hostile import mirror_cases  # issue 55: the index setting and the apt proxy of every task

    mirror_cases(add)
    from .store_hostile import store_cases  # issue 52: the layer store, whatever is found in it

    store_cases(add)
    from .variant_hostile import variant_cases  # issue 52 item 4: promote --zstd against a hostile target

    variant_cases(add)
    # outcomes are keyed by name: two cases of one name would silently share the first's outcome
    named = Counter(case.name for case in c)
    twice = sorted(name for name, count in named.items() if count > 1)
    if twice:
        raise ValueError(f"hostile cases named twice: {', '.join(twice)}")
    return c


def extends_chain(length: int, first: str = "link"):
    """manifests/link1.yaml extends link2 ... extends linkN, a copy of dev (its constraints as link1's)."""
    def step(project, outside):
        folder = project.root / "manifests"
        for number in range(1, length):
            (folder / f"{first}{number}.yaml").write_text(f"extends: {first}{number + 1}\n")
        shutil.copy(REPO / MANIFEST, folder / f"{first}{length}.yaml")
        shutil.copy(REPO / CONSTRAINTS, project.root / "constraints" / f"{first}1.txt")
    return step


def extends_diamonds(levels: int):
    """manifests/wide1.yaml extends [parts/w2a, parts/w2b], each of which extends [parts/w3a, parts/w3b]
    ... down to two copies of debian-bookworm: 2**levels paths to the bottom, each file small."""
    def step(project, outside):
        parts = project.root / "manifests" / "parts"
        for level in range(2, levels):
            for side in "ab":
                (parts / f"w{level}{side}.yaml").write_text(f"extends: [parts/w{level + 1}a, parts/w{level + 1}b]\n")
        for side in "ab":
            shutil.copy(parts / "debian-bookworm.yaml", parts / f"w{levels}{side}.yaml")
        text = (REPO / MANIFEST).read_text().replace("extends: parts/debian-bookworm", "extends: [parts/w2a, parts/w2b]")
        (project.root / "manifests" / "wide1.yaml").write_text(text)
        shutil.copy(REPO / CONSTRAINTS, project.root / "constraints" / "wide1.txt")
    return step


def link_loop(rel: str):
    def step(project, outside):
        os.symlink(Path(rel).name, project.root / rel)
    return step


def chain_path_inherit_cases(add) -> None:
    """The rest of round three's validation gaps: an `extends:` chain far longer than any real one,
    paths the system cannot look up (a name over NAME_MAX, a path over PATH_MAX, a loop of links),
    and `inherit:` of the wrong type wherever a manifest may hold it."""
    klass = "validation gaps"
    # every reader of releases goes through the one loader: the chain is refused in the release's words
    for name, argv, length in [
        ("extends-chain-long-render", ("render", "--release", "link1"), 150),
        ("extends-chain-runaway-notes", ("notes", "--release", "link1"), 1500),
        ("extends-chain-runaway-matrix", ("matrix",), 1500),
        ("extends-chain-runaway-diff", ("diff", "dev", "link1"), 1500),
        ("extends-chain-runaway-verify", ("verify", "--release", "link1"), 1500),
    ]:
        add(HostileCase(name, klass, argv, setup_all(dev, extends_chain(length)), after=nothing_built,
                        mentions=("link1.yaml: extends:", "link1 -> link2", "at most")))
    add(HostileCase("extends-chain-diamonds", klass, ("render", "--release", "wide1"),
                    setup_all(dev, extends_diamonds(40)), after=nothing_built,
                    mentions=("wide1.yaml: extends:", "at most")))
    add(HostileCase("extends-name-over-name-max", klass, ("render", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "extends: parts/debian-bookworm", "extends: parts/" + "n" * 300)),
                    after=nothing_built, mentions=("dev.yaml: extends:", "255")))
    add(HostileCase("extends-path-over-path-max", klass, ("notes", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "extends: parts/debian-bookworm", "extends: " + "deep/" * 900 + "x")),
                    after=nothing_built, mentions=("dev.yaml: extends:", "longer than")))
    add(HostileCase("extends-link-loop", klass, ("render", "--release", "dev"),
                    setup_all(dev, link_loop("manifests/parts/loop.yaml"),
                              edit(MANIFEST, "extends: parts/debian-bookworm", "extends: [parts/debian-bookworm, parts/loop]")),
                    after=nothing_built, mentions=("loop.yaml", "links")))
    # a project whose own path leaves no room for its files, or is itself over PATH_MAX: the machine's
    # trouble (exit 1), said as such, not a template or a manifest that is "not found"
    add(HostileCase("project-path-no-room", klass, ("render", "--release", "dev"), dev, exit_status=1,
                    extra_env={"_NGCBUILD_DEEP": "4040"}, mentions=("longer than",),
                    absent=("not found", "TemplateNotFound")))
    # over PATH_MAX invoke's own loader fails listing the folder for tasks.py (a traceback in invoke,
    # before any file of ours runs): the installed `ngcbuild` is the way in
    add(HostileCase("project-path-over-path-max", klass, ("render", "--release", "dev"), dev, exit_status=1,
                    extra_env={"_NGCBUILD_DEEP": "4200"}, mentions=("the project's folder", "longer than"),
                    program="ngcbuild"))
    # inherit: wherever a manifest may hold it, a list of release-specific keys or nothing
    for name, value in [("number", "5"), ("zero", "0"), ("string", "notes"), ("mapping", "{summary: true}"),
                        ("null", "null"), ("empty-string", "''"), ("false", "false")]:
        add(HostileCase(f"inherit-{name}-over-a-part", klass, ("render", "--release", "dev"),
                        setup_all(dev, edit(MANIFEST, "origin: public-wheels", f"origin: public-wheels\ninherit: {value}")),
                        after=nothing_built, mentions=("dev.yaml: inherit:", "expected a list")))
    add(HostileCase("inherit-unknown-key-over-a-part", klass, ("notes", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "origin: public-wheels", "origin: public-wheels\ninherit: [os.name]")),
                    after=nothing_built, mentions=("dev.yaml: inherit:", "os.name")))
    add(HostileCase("inherit-zero-in-a-part", klass, ("render", "--release", "dev"),
                    setup_all(dev, edit("manifests/parts/debian-bookworm.yaml", "\nbase:", "\ninherit: 0\nbase:")),
                    after=nothing_built, mentions=("debian-bookworm.yaml: inherit:",)))
    add(HostileCase("inherit-number-below-an-nvidia-release", klass, ("render", "--release", "next"),
                    setup_all(dev, lambda p, o: p.copy_release("25.12"),
                              write("manifests/next.yaml", "extends: '25.12'\nsummary: next\nbuild:\n  number: '1'\n"
                                                           "inherit: 7\n")),
                    after=nothing_built, mentions=("next.yaml: inherit:", "expected a list")))


def validation_cases(add) -> None:
    """Values the manifest model and the flags let through before round three."""
    klass = "validation gaps"
    summary = "summary: CPU-only development release on Debian bookworm with a PyTorch CPU wheel"
    for name, old, new in [
        ("summary-over-long", summary, "summary: " + "wide " * 1000),
        ("platforms-empty", "  number: '0'", "  number: '0'\n  platforms: []"),
    ]:
        add(HostileCase(name, klass, ("render", "--release", "dev"), setup_all(dev, edit(MANIFEST, old, new)),
                        after=nothing_built))
    for name, value in [("keep-arabic-digits", "\u0663"), ("keep-underscore", "1_0"), ("keep-spaces", " 2 "),
                        ("keep-fullwidth", "\uff12")]:
        add(HostileCase(name, klass, ("prune", "--keep", value), dev, mentions=("--keep",)))
    for name, value in [("threshold-underscore", "0_5"), ("threshold-arabic", "\u0660.\u0665")]:
        add(HostileCase(name, klass, ("smoke", "--release", "dev", "--perf", "--baseline", "dev", "--threshold", value),
                        dev, mentions=("--threshold",), after=nothing_built))
    add(HostileCase("label-value-over-long", klass, ("build", "--release", "dev", "--label", "ci.run=" + "r" * 5000),
                    dev, after=nothing_built, mentions=("--label",)))


def security(text: str):
    """dev's manifest with a `security:` block (appended: the manifest has none)."""
    def step(project, outside):
        path = project.root / MANIFEST
        path.write_text(path.read_text() + "security:\n" + text)
    return step


AN_SBOM = ('{"bomFormat": "CycloneDX", "components": [{"name": "tqdm", "version": "4.70.1", '
           '"purl": "pkg:pypi/tqdm@4.70.1"}]}')


def sbom_file(text: str):
    return write("build/dev/sbom.cdx.json", text)


def sbom_linked_out(project, outside):
    (project.root / "build" / "dev").mkdir(parents=True, exist_ok=True)
    os.symlink(secret_file(outside), project.root / "build" / "dev" / "sbom.cdx.json")


def audit_linked_out(project, outside):
    (project.root / "build" / "dev").mkdir(parents=True, exist_ok=True)
    os.symlink(secret_file(outside), project.root / "build" / "dev" / "audit.json")


def audit_cases(add) -> None:
    """`invoke audit`: the manifest's security policy, validated as every key; the SBOM it reads and the
    report the notes read, both our outputs (damaged: exit 1, never a traceback, never network)."""
    klass = "security audit"
    argv = ("audit", "--release", "dev")
    entry = "  allow:\n    - {id: PYSEC-2017-94, reason: no caller, expires: %s}\n"
    for name, text, mention in [
        ("security-allow-not-a-list", "  allow: PYSEC-2017-94\n", "security.allow"),
        ("security-allow-option-id", "  allow:\n    - {id: '--index-url=http://evil', reason: no caller reaches it, expires: 2027-01-01}\n",
         "advisory id"),
        ("security-allow-id-newline", "  allow:\n    - {id: \"PYSEC-1\\n--x\", reason: no caller reaches it, expires: 2027-01-01}\n",
         "security.allow.0.id"),
        ("security-allow-month-13", entry % "2026-13-45", "not a date"),
        ("security-allow-feb-30-quoted", entry % "'2026-02-30'", "not a date"),
        ("security-allow-a-time", entry % "2026-12-31 10:00:00", "is a time"),
        ("security-allow-a-number", entry % "20261231", "not a date"),
        ("security-allow-a-word", entry % "never", "not a date"),
        ("security-allow-no-reason", "  allow:\n    - {id: PYSEC-2017-94, expires: 2027-01-01}\n", "reason"),
        ("security-allow-unknown-key", "  allow:\n    - {id: PYSEC-1, reason: no caller reaches it, expires: 2027-01-01, severity: low}\n",
         "unknown key"),
        ("security-allow-twice", "  allow:\n" + "    - {id: PYSEC-1, reason: no caller reaches it, expires: 2027-01-01}\n" * 2, "twice"),
        ("security-allow-huge-list", "  allow:\n" + "".join(f"    - {{id: PYSEC-{i}, reason: no caller reaches it, expires: 2027-01-01}}\n"
                                                              for i in range(1, 2001)), "security.allow"),
        ("security-allow-reason-over-long", "  allow:\n    - {id: PYSEC-1, reason: " + "x" * 5000
         + ", expires: 2027-01-01}\n", "reason"),
        ("security-min-checked-negative", "  min_checked: -1\n", "min_checked"),
        ("security-min-checked-word", "  min_checked: most\n", "min_checked"),
        ("security-unknown-key", "  deny: [PYSEC-1]\n", "unknown key"),
    ]:
        add(HostileCase(name, klass, argv, setup_all(dev, security(text)), mentions=(mention,), after=nothing_built))
    damaged = setup_all_checks(no_file("build/dev/audit.json"))
    for name, step, status, mention in [
        ("sbom-missing", record(GOOD_RECORD), 2, "invoke sbom"),
        ("sbom-link-outside", sbom_linked_out, 1, "outside"),
        ("sbom-fifo", replace_with_fifo("build/dev/sbom.cdx.json"), 1, "FIFO"),
        ("sbom-a-folder", replace_with_dir("build/dev/sbom.cdx.json"), 1, "directory"),
        ("sbom-not-json", sbom_file("{ not json"), 1, "sbom.cdx.json is damaged"),
        ("sbom-not-utf8", lambda p, o: (p.root / "build/dev/sbom.cdx.json").write_bytes(b'{"components": "\xff"}'), 1,
         "UTF-8"),
        ("sbom-deep-json", sbom_file("[" * 5000 + "]" * 5000), 1, "sbom.cdx.json is damaged"),
        ("sbom-purl-injection", sbom_file(AN_SBOM.replace("@4.70.1", "@4.70.1%0A--extra-index-url%3Devil")), 1,
         "components.0.purl"),
        ("sbom-not-recorded", sbom_file(AN_SBOM), 2, "not the SBOM"),
    ]:
        add(HostileCase(name, klass, argv, setup_all(dev, record(GOOD_RECORD), step), exit_status=status,
                        mentions=(mention,), absent=(SECRET,), after=damaged))
    notes = ("notes", "--release", "dev")
    for name, step, mention in [
        ("audit-report-not-json", write("build/dev/audit.json", '{"verdict": '), "audit.json is damaged"),
        ("audit-report-link-outside", audit_linked_out, "outside"),
        ("audit-report-fifo", setup_all(write("build/dev/audit.json", "{}"), replace_with_fifo("build/dev/audit.json")),
         "FIFO"),
        ("audit-report-verdict-a-number", write("build/dev/audit.json", '{"verdict": 1, "counts": {}}'), "verdict"),
        ("audit-report-a-list", write("build/dev/audit.json", "[]"), "audit.json is damaged"),
    ]:
        add(HostileCase(name, klass, notes, setup_all(dev, step), exit_status=1, mentions=(mention,), absent=(SECRET,),
                        after=no_file("build/dev/release-notes.md")))


def stamp(text: str):
    return write("build/dev/.rendered.json", text)


def stamp_bytes(data: bytes):
    def step(project, outside):
        path = project.root / "build" / "dev" / ".rendered.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return step


def a_good_stamp(**changes) -> str:
    import json as _json

    data = {"inputs": ["manifests/dev.yaml", "constraints/dev.txt"], "base": None, "inputs_sha256": "0" * 64,
            "context_sha256": "1" * 64, "names": {"release": "dev", "tag": "dev-py3", "repository_path": "nvidia/pytorch",
                                                   "default_platform": "linux/amd64", "base_image": "debian:bookworm"}}
    data.update(changes)
    return _json.dumps(data)


def stamp_cases(add) -> None:
    """build/R/.rendered.json tampered with: ignored with a note (the full path: render, then the
    engine, here a sentinel that answers nothing), never a traceback, never many hashes (round three)."""
    klass = "render stamp"
    for name, text in [
        ("stamp-deep-list", '{"inputs": ' + "[" * 100000 + "]" * 100000 + "}"),
        ("stamp-deep-names", a_good_stamp(names={"release": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {}}}}}}}}})),
        ("stamp-names-a-list", a_good_stamp(names=["dev"])),
        ("stamp-names-hostile-tag", a_good_stamp(names={"release": "dev", "tag": "dev py3;rm -rf /",
                                                        "repository_path": "nvidia/pytorch",
                                                        "default_platform": "linux/amd64", "base_image": "x"})),
        ("stamp-names-other-release", a_good_stamp(names={"release": "../25.12", "tag": "t", "repository_path": "a",
                                                          "default_platform": "p", "base_image": "b"})),
        ("stamp-one-file-many-times", a_good_stamp(inputs=["templates/components.yaml"] * 50000)),
        ("stamp-inputs-outside", a_good_stamp(inputs=["../../../../etc/passwd"])),
        ("stamp-inputs-numbers", a_good_stamp(inputs=[1, 2, 3])),
        ("stamp-hash-a-list", a_good_stamp(context_sha256=["x"])),
        ("stamp-not-utf8", b"{\"inputs\": [\"\xff\"]}"),
        ("stamp-huge", a_good_stamp(base="b" * (2 << 20))),
    ]:
        step = stamp(text) if isinstance(text, str) else stamp_bytes(text)
        add(HostileCase(name, klass, ("build", "--release", "dev"), setup_all(dev, step), exit_status=1,
                        engine_allowed=True, absent=("RecursionError",), shows=("is not a stamp ngcbuild wrote",)))


def engine_address_cases(add) -> None:
    """`--engine` and DOCKER_HOST go through the one address parser: credentials refused and never
    shown, malformed addresses one message, ssh:// not offered (round three)."""
    klass = "engine addresses"
    for name, argv_tail, env in [
        ("engine-flag-password", ("--engine", f"tcp://ops:{SECRET}@127.0.0.1:2376"), {}),
        ("engine-flag-user-only", ("--engine", f"tcp://{SECRET}@127.0.0.1:2376"), {}),
        ("engine-env-password", (), {"DOCKER_HOST": f"tcp://ops:{SECRET}@127.0.0.1:2376"}),
        ("engine-flag-port-word", ("--engine", "tcp://127.0.0.1:dock"), {}),
        ("engine-flag-no-port", ("--engine", "tcp://127.0.0.1"), {}),
        ("engine-flag-unix-relative", ("--engine", "unix://docker.sock"), {}),
        ("engine-flag-unix-too-long", ("--engine", "unix:///" + "s" * 200), {}),
        ("engine-flag-ssh", ("--engine", "ssh://builder@127.0.0.1"), {}),
        ("engine-env-ssh-password", (), {"DOCKER_HOST": f"ssh://builder:{SECRET}@127.0.0.1"}),
        ("engine-env-control", (), {"DOCKER_HOST": "tcp://127.0.0.1:2376\x1b[2J"}),
        ("engine-env-http", (), {"DOCKER_HOST": "http://127.0.0.1:2375"}),
    ]:
        for task in (("build", "--release", "dev"), ("prune",)):
            add(HostileCase(f"{task[0]}-{name}", klass, (*task, *argv_tail), dev, extra_env=env,
                            absent=(SECRET, "\x1b"), after=nothing_built))
    add(HostileCase("push-engine-env-password", klass, ("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                    setup_all(dev, record('{"image_id": "sha256:' + "0" * 64 + '", "tags": []}')),
                    extra_env={"DOCKER_HOST": f"tcp://ops:{SECRET}@127.0.0.1:2376"}, absent=(SECRET,)))
    add(HostileCase("verify-base-credentials", klass,
                    ("verify", "--release", "dev", "--base-image", f"ops:{SECRET}@mirror.example/debian:bookworm"),
                    dev, absent=(SECRET,)))
    add(HostileCase("build-base-credentials", klass,
                    ("build", "--release", "dev", "--base-image", f"ops:{SECRET}@mirror.example/debian:bookworm"),
                    dev, absent=(SECRET,), after=nothing_built))
    add(HostileCase("verify-base-not-a-ref", klass, ("verify", "--release", "dev", "--base-image", "Not A Ref"), dev))
    add(HostileCase("smoke-engine-flag-password", klass,
                    ("smoke", "--release", "dev", "--engine", f"tcp://ops:{SECRET}@127.0.0.1:2376"),
                    dev, absent=(SECRET,), after=nothing_built))


GOOD_RECORD = ('{"release": "dev", "platform": "linux/amd64", "image_id": "sha256:' + "0" * 64 + '", '
               '"context_sha256": "' + "0" * 64 + '", "tags": [], "pushed": {}}')


def records_dir(project: ScratchProject) -> Path:
    folder = project.root / "artifacts" / "record-amd64"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def a_record(text: str):
    def step(project, outside):
        (records_dir(project) / "record.json").write_text(text)
    return step


def a_record_bytes(data: bytes):
    def step(project, outside):
        (records_dir(project) / "record.json").write_bytes(data)
    return step


def record_linked_out(project, outside):
    os.symlink(secret_file(outside), records_dir(project) / "record.json")


def record_a_fifo(project, outside):
    os.mkfifo(records_dir(project) / "record.json")


def record_a_device(project, outside):
    os.symlink("/dev/zero", records_dir(project) / "record.json")


def records_folder_linked_out(project, outside):
    (outside / "art").mkdir()
    (outside / "art" / "record.json").write_text('{"platform": "' + SECRET + '"}')
    os.symlink(outside / "art", project.root / "artifacts" / "linked", target_is_directory=True)


def records_cases(add) -> None:
    """`publish --records DIR` reads every record through the one reader, checks it field by field,
    before rendering anything (round three)."""
    klass = "platform records"
    argv = ("publish", "--release", "dev", "--registry", "127.0.0.1:9", "--records", "artifacts")
    for name, step, mention in [
        ("records-link-outside", record_linked_out, "outside"),
        ("records-fifo", record_a_fifo, "FIFO"),
        ("records-device", record_a_device, "record.json"),
        ("records-not-utf8", a_record_bytes(b'{"platform": "\xff\xfe"}'), "UTF-8"),
        ("records-deep-json", a_record("[" * 5000 + "]" * 5000), "record.json"),
        ("records-nested-object", a_record('{"platform": ' + '{"a": ' * 60 + "1" + "}" * 60 + "}"), "record.json"),
        ("records-platform-number", a_record(GOOD_RECORD.replace('"linux/amd64"', "7")), "platform"),
        ("records-tags-a-string", a_record(GOOD_RECORD.replace('"tags": []', '"tags": "x"')), "tags"),
        ("records-pushed-list", a_record(GOOD_RECORD.replace('"pushed": {}', '"pushed": [1]')), "pushed"),
        ("records-smoke-failed-word", a_record(GOOD_RECORD.replace('"pushed": {}', '"smoke": {"failed": "none"}')),
         "smoke.failed"),
        ("records-image-missing", a_record(GOOD_RECORD.replace('"image_id"', '"image"')), "image_id"),
    ]:
        add(HostileCase(name, klass, argv, setup_all(dev, step), mentions=(mention,), absent=(SECRET,),
                        after=nothing_built))
    add(HostileCase("records-folder-linked-out", klass, argv,
                    setup_all(dev, a_record(GOOD_RECORD), records_folder_linked_out), exit_status=1,
                    absent=(SECRET,), mentions=("linux/amd64",)))  # the linked folder is not entered
    add(HostileCase("records-registry-credentials", klass,
                    ("publish", "--release", "dev", "--registry", f"u:{SECRET}@127.0.0.1:9", "--records", "artifacts"),
                    setup_all(dev, a_record(GOOD_RECORD)), absent=(SECRET,), after=nothing_built))
    add(HostileCase("records-release-bad", klass,
                    ("publish", "--release", "Dev!", "--registry", "127.0.0.1:9", "--records", "artifacts"),
                    setup_all(dev, a_record(GOOD_RECORD)), after=nothing_built))


def old_site(project, outside):
    (project.root / "build" / "site" / "releases").mkdir(parents=True)
    (project.root / "build" / "site" / "index.html").write_text("the older complete site\n")


def site_link_outside(project, outside):
    (outside / "site" / "private").mkdir(parents=True)
    (outside / "site" / "private" / "credentials").write_text(SECRET)
    (project.root / "build").mkdir()
    os.symlink(outside / "site", project.root / "build" / "site")


def outside_site_untouched(project, outside):
    if not (outside / "site" / "private" / "credentials").is_file():
        return "the folder the link pointed at was emptied"
    return None


def old_site_kept(project, outside):
    index = project.root / "build" / "site" / "index.html"
    if not index.is_file() or "older complete site" not in index.read_text():
        return "the older site was removed before the new one was complete"
    strays = [p.name for p in (project.root / "build").iterdir() if p.name.startswith(".site.render-")]
    return f"a half-written site was left: {strays}" if strays else None


def docs_cases(add) -> None:
    """`docs` writes the whole site next to build/site and swaps it in (round three)."""
    klass = "docs atomic"
    add(HostileCase("docs-site-link-outside", klass, ("docs", "--no-screenshot"), setup_all(dev, site_link_outside),
                    exit_status=1, mentions=("build/site",), after=outside_site_untouched))
    add(HostileCase("docs-site-dangling-link", klass, ("docs", "--no-screenshot"),
                    setup_all(dev, write("build/.keep", ""), replace_with_link("build/site", lambda o: str(o / "nowhere"))),
                    exit_status=1, mentions=("build/site",)))
    add(HostileCase("docs-bad-manifest-keeps-site", klass, ("docs", "--no-screenshot"),
                    setup_all(dev, old_site, write("manifests/26.01.yaml", "extends: [\n")),
                    after=old_site_kept))
    add(HostileCase("docs-missing-style-keeps-site", klass, ("docs", "--no-screenshot"),
                    setup_all(dev, old_site, replace_with_dir("templates/docs/site/style.css")),
                    exit_status=1, after=old_site_kept))


def guide_cases(add) -> None:
    """The site's guide: `docs` reads the project's docs/*.md (a new surface: the one reader of user
    files). A page that is a link out of the project, a FIFO, huge, not UTF-8 or a folder is refused
    naming it (exit 2), nothing shown of what it points at, and the older site is kept."""
    klass = "the site's guide (docs/)"

    def folder_out(project, outside):
        (outside / "guide").mkdir()
        (outside / "guide" / "secret.md").write_text(f"# private\n{SECRET}\n")
        os.symlink(outside / "guide", project.root / "docs")

    def many_pages(project, outside):
        (project.root / "docs").mkdir()
        for n in range(201):
            (project.root / "docs" / f"p{n}.md").write_text("# a page\n")

    for name, setup, mention in [
        ("guide-page-link-outside", link_to_secret("docs/private.md"), "outside"),
        ("guide-folder-link-outside", folder_out, "outside"),
        ("guide-page-fifo", setup_all(write("docs/README.md", "# guide\n"), replace_with_fifo("docs/pipe.md")),
         "FIFO"),
        ("guide-page-huge", write("docs/huge.md", "# huge\n" + "x" * 1_100_000), "bytes"),
        ("guide-page-not-utf8", lambda p, o: (p.root / "docs").mkdir() or (p.root / "docs" / "bad.md").write_bytes(
            b"# bad\n\xff\xfe"), "UTF-8"),
        ("guide-page-is-a-folder", replace_with_dir("docs/folder.md"), "directory"),
        ("guide-too-many-pages", many_pages, "at most 200"),
    ]:
        add(HostileCase(name, klass, ("docs", "--no-screenshot"), setup_all(dev, old_site, setup),
                        mentions=(mention,), absent=(SECRET,), after=old_site_kept))


INVOKE_ONLY = ("--pty", "--dry", "--prompt-for-sudo-password", "--echo", "--warn-only", "--write-pyc")


def entry_point_cases(add) -> None:
    """`invoke TASK` parses and reports like `ngcbuild TASK` (round three)."""
    klass = "entry points"
    for name, argv, mention in [
        ("invoke-value-is-an-option", ("build", "--release", "dev", "--platform", "--no-cache"), "--platform needs a value"),
        ("invoke-value-eq-option", ("verify", "--release=--json"), "--release"),
        ("invoke-last-flag-no-value", ("notes", "--release"), "--release needs a value"),
        ("invoke-repeated-release", ("notes", "--release", "dev", "--release", "dev"), "--release was given more than once"),
        ("invoke-repeated-eq", ("render", "--release=dev", "--release=cuda-dev"), "more than once"),
        ("invoke-core-only-option", ("--dry", "render", "--release", "dev"), "--dry"),
        ("invoke-core-only-short", ("-w", "render", "--release", "dev"), "-w"),
        ("invoke-number-word", ("prune", "--keep", "many"), "--keep"),
    ]:
        add(HostileCase(name, klass, argv, dev, mentions=(mention,), absent=("No idea", "Flag <"), after=nothing_built))
    # invoke-only options the installed `ngcbuild` must refuse before invoke acts on them
    for name, argv, mention in [
        ("ngcbuild-completion-script", ("--print-completion-script", "bash"), "--print-completion-script"),
        ("ngcbuild-debug", ("--debug", "--list"), "--debug"),
    ]:
        add(HostileCase(name, klass, argv, dev, mentions=(mention,), hides=("complete -F", "invoke.program"),
                        program="ngcbuild"))
    add(HostileCase("invoke-bare-lists-tasks", klass, (), dev, exit_status=0,
                    shows=("render", "publish", "--list"), hides=INVOKE_ONLY))
    add(HostileCase("invoke-list", klass, ("--list",), dev, exit_status=0, shows=("verify",), hides=INVOKE_ONLY))
    add(HostileCase("invoke-task-help", klass, ("render", "--help"), dev, exit_status=0, shows=("--release",),
                    hides=INVOKE_ONLY))
    # a task's --help is help wherever it stands: where a positional or an option's value was expected too
    for name, argv, shows in [
        ("help-of-a-positional-task", ("diff", "--help"), ("OLD", "NEW", "--json")),
        ("help-after-one-positional", ("diff", "dev", "-h"), ("OLD",)),
        ("help-where-a-value-goes", ("build", "--release", "--help"), ("--base-image", "--registry")),
        ("help-where-a-repeated-value-goes", ("verify-attestation", "--trusted-key", "--help"),
         ("--registry-image",)),
    ]:
        add(HostileCase(name, klass, argv, dev, exit_status=0, shows=shows, hides=INVOKE_ONLY, after=nothing_built))


def old_spelling_cases(add) -> None:
    """Options renamed so that a name has one meaning across tasks (and `matrix --changed`, which was
    the task `changed`): the old spelling, however it is typed and whatever its value, is one line
    naming the new one, exit 2, before the value is used (a credential in it never shown, a value
    meant for git never reaching git, nothing built)."""
    klass = "old spellings"
    mirror = f"ops:{SECRET}@mirror.example/debian:bookworm"
    for name, argv, now in [
        ("old-build-base", ("build", "--release", "dev", "--base", mirror), "--base-image"),
        ("old-build-base-eq", ("build", "--release", "dev", f"--base={mirror}"), "--base-image"),
        ("old-render-base-after-value-flag", ("render", "--release", "--base", "x"), "--base-image"),
        ("old-verify-base", ("verify", "--release", "dev", "--base", "Not A Ref"), "--base-image"),
        ("old-changed-base", ("changed", "--base=--output=injected"), "--since"),
        ("old-matrix-changed", ("matrix", "--json", "--changed", "--base=--output=injected"), "`ngcbuild changed"),
        ("old-matrix-releases", ("matrix", "--releases", "dev " * 2000), "`ngcbuild changed"),
        ("old-rehearse-release", ("rehearse", "--release", "dev;touch injected"), "--releases"),
        ("old-rehearse-staging", ("rehearse", "--releases", "dev", "--staging", f"u:{SECRET}@localhost:5000"),
         "--staging-registry"),
        ("old-rehearse-registry", ("rehearse", "--releases", "dev", "--registry", "localhost:5001"),
         "--release-registry"),
        ("old-verify-attestation-image", ("verify-attestation", "--image",
                                          f"u:{SECRET}@localhost:5000/nvidia/pytorch:dev-py3"), "--registry-image"),
    ]:
        add(HostileCase(name, klass, argv, git_repo, mentions=(now, "is now"), absent=(SECRET, "Traceback"),
                        after=setup_all_checks(nothing_built, no_file("injected"))))
    # the installed command answers the same way
    add(HostileCase("old-spelling-through-ngcbuild", klass, ("changed", "--base", "HEAD"), git_repo,
                    mentions=("--since",), program="ngcbuild", after=nothing_built))
    # the new names, given an option as their value, are a usage error naming them
    for name, argv, mention in [
        ("new-base-image-option-like", ("build", "--release", "dev", "--base-image", "--force"),
         "--base-image needs a value"),
        ("new-since-option-like", ("changed", "--since", "--releases"), "--since"),
        ("new-registry-image-option-like", ("verify-attestation", "--registry-image", "--trusted-key"),
         "--registry-image needs a value"),
    ]:
        add(HostileCase(name, klass, argv, git_repo, mentions=(mention,), absent=("No idea", "Flag <"),
                        after=setup_all_checks(nothing_built, no_file("injected"))))


def a_key(rel: str, mode: int = 0o600, public: bool = False):
    """An Ed25519 key made for the case at `rel` (the private key, or its public half)."""
    def step(project, outside):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

        key = Ed25519PrivateKey.generate()
        path = project.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo) if public
                         else key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
        os.chmod(path, mode)
    return step


def link_to_secret(rel: str):
    def step(project, outside):
        path = project.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(secret_file(outside), path)
    return step


def outside_has_no(name: str):
    def check(project: ScratchProject, outside: Path) -> str | None:
        return f"{name} was written outside the project" if (outside / name).exists() else None
    return check


def key_unchanged(project: ScratchProject, outside: Path) -> str | None:
    path = project.root / "keys" / "signing.key"
    return None if path.read_text() == "kept\n" else "keygen replaced an existing key"


def attestation_cases(add) -> None:
    """The surfaces of signed provenance: keygen's output, the signing key, the trusted keys, --registry-image.
    Each is refused before any file is written, any registry asked or the engine contacted."""
    klass = "keys and attestations"
    attest = ("attest", "--release", "dev", "--registry", "localhost:5000", "--key", "keys/signing.key")
    verify = ("verify-attestation", "--registry-image", "localhost:5000/nvidia/pytorch:dev-py3", "--trusted-key")
    promote = ("promote", "--release", "dev", "--from", "localhost:5000", "--to", "localhost:5001")
    for name, argv, setup, mentions, after, env in [
        ("keygen-out-outside", ("keygen", "--out", "OUTSIDE/k.key"), dev, ("inside the project",),
         outside_has_no("k.key"), {}),
        ("keygen-keys-link-out", ("keygen",), setup_all(dev, lambda p, o: os.symlink(o, p.root / "keys")),
         ("inside the project",), outside_has_no("signing.key"), {}),
        ("keygen-out-option-like", ("keygen", "--out=--release"), dev, ("expected the path of a key file",),
         nothing_built, {}),
        ("keygen-never-overwrites", ("keygen",), setup_all(dev, write("keys/signing.key", "kept\n")),
         ("never overwrites",), key_unchanged, {}),
        ("attest-key-world-readable", attest, setup_all(dev, a_key("keys/signing.key", 0o644)),
         ("chmod 600",), nothing_built, {}),
        ("attest-key-group-readable", attest, setup_all(dev, a_key("keys/signing.key", 0o640)),
         ("readable by others",), nothing_built, {}),
        ("attest-key-link-outside", attest, setup_all(dev, link_to_secret("keys/signing.key")),
         ("outside",), nothing_built, {}),
        ("attest-key-fifo", attest, setup_all(dev, lambda p, o: (p.root / "keys").mkdir(),
                                              replace_with_fifo("keys/signing.key")),
         ("FIFO",), nothing_built, {}),
        ("attest-key-not-a-key", attest, setup_all(dev, write("keys/signing.key", f"token={SECRET}\n"),
                                                   lambda p, o: os.chmod(p.root / "keys/signing.key", 0o600)),
         ("not a PEM private key",), nothing_built, {}),
        ("attest-key-env-option-like", attest[:-2], dev, ("NGCBUILD_SIGNING_KEY_FILE",), nothing_built,
         {"NGCBUILD_SIGNING_KEY_FILE": "--release"}),
        ("attest-no-key", attest[:-2], dev, ("no signing key",), nothing_built, {}),
        ("attest-registry-credentials", ("attest", "--release", "dev", "--registry", f"u:{SECRET}@localhost:5000"),
         setup_all(dev, a_key("keys/signing.key")), ("NGCBUILD_REGISTRY_USER",), nothing_built, {}),
        ("verify-image-credentials", ("verify-attestation", "--registry-image",
                                      f"u:{SECRET}@localhost:5000/nvidia/pytorch:dev-py3", "--trusted-key", "k.pub"),
         setup_all(dev, a_key("k.pub", 0o644, public=True)), ("NGCBUILD_REGISTRY_USER",), nothing_built, {}),
        ("verify-image-option-like", ("verify-attestation", "--registry-image=--trusted-key"), dev,
         ("--registry-image",),
         nothing_built, {}),
        ("verify-image-without-host", ("verify-attestation", "--registry-image", "nvidia/pytorch:dev-py3",
                                       "--trusted-key", "k.pub"), setup_all(dev, a_key("k.pub", 0o644, public=True)),
         ("registry host",), nothing_built, {}),
        ("verify-trusted-key-is-private", (*verify, "k.key"), setup_all(dev, a_key("k.key")),
         ("holds a private key",), nothing_built, {}),
        ("verify-trusted-key-link-outside", (*verify, "k.pub"), setup_all(dev, link_to_secret("k.pub")),
         ("outside",), nothing_built, {}),
        ("promote-no-trusted-key", promote, setup_all(dev, record("{}")), ("no trusted key",), None, {}),
        ("promote-trusted-key-not-pem", (*promote, "--trusted-key", "k.pub"),
         setup_all(dev, record("{}"), write("k.pub", f"token={SECRET}\n")), ("not a PEM public key",), None, {}),
        ("promote-trusted-env-option-like", promote, setup_all(dev, record("{}")), ("NGCBUILD_TRUSTED_KEYS",),
         None, {"NGCBUILD_TRUSTED_KEYS": "--to"}),
    ]:
        extra = {"after": after} if after else {}
        add(HostileCase(name, klass, argv, setup, mentions=mentions, absent=(SECRET,), extra_env=env, **extra))


def run_case(case: HostileCase, root: Path, engine_socket: str,
             zygotes=None) -> tuple[Outcome, ScratchProject, Path]:
    """Set `case` up under `root` and run its command the way a user would: forked from one of
    `zygotes` (zygote.py: the imports done once) unless the case tests the interpreter's own start, else
    as a fresh process."""
    outside = root / "outside"
    outside.mkdir(parents=True)
    project_dir = root / "project"
    project = ScratchProject(project_dir)
    case.setup(project, outside)
    places, servers = case.serve(project, outside) if case.serve is not None else ({}, [])
    places = {"OUTSIDE": str(outside), **places}

    def placed(text: str) -> str:
        for name, value in places.items():
            text = text.replace(name, value)
        return text

    argv = [placed(a) for a in case.argv]
    env = {**os.environ, "DOCKER_HOST": f"unix://{engine_socket}", **{k: placed(v) for k, v in case.extra_env.items()}}
    # the checkout under test, not whichever copy of ngcbuild is installed; NGCBUILD_CODE_UNDER_TEST
    # names another checkout's src/ (the same cases and judge against older code: a "before" figure)
    code = os.environ.get("NGCBUILD_CODE_UNDER_TEST") or str(REPO / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH", "")) if p)
    env.pop("_NGCBUILD_DEEP", None)
    env.pop("PIP_FIND_LINKS", None)
    for var in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        env.pop(var, None)
    # a layer store of the case's own (image/store.py): what one case's push kept never answers another's
    if "NGCBUILD_LAYER_STORE" not in case.extra_env:
        env["NGCBUILD_LAYER_STORE"] = str(outside / "layer-store")
    for var in ("NGCBUILD_REGISTRY_USER", "NGCBUILD_REGISTRY_PASSWORD", "NGCBUILD_REGISTRY_HOST",
                "NGCBUILD_PYPI_MIRROR", "UV_INDEX_URL", "PIP_INDEX_URL", "UV_EXTRA_INDEX_URL", "PIP_EXTRA_INDEX_URL",
                "NGCBUILD_RESOLVER_DEADLINE_S", "NGCBUILD_APT_PROXY", "NETRC"):
        if var not in case.extra_env:
            env.pop(var, None)  # the test run's own, if any, are no part of the case
    steps = [str(project.root / case.cwd)]
    before = _files(project.root) if case.scan_outputs else {}
    if case.extra_env.get("_NGCBUILD_DEEP"):
        project, steps = _deepen(project, int(case.extra_env["_NGCBUILD_DEEP"]))
    try:
        if zygotes is not None and not needs_a_process(case):
            status, out, err = zygotes.run(case.program, argv, steps, env, root, case.time_bound, case.stdout)
            outcome = Outcome(status, out, err)
        else:
            outcome = _in_a_process(case, argv, steps, env)
    finally:
        for server in servers:
            server.close()
    if case.scan_outputs:
        outcome = replace(outcome, written=tuple(path for path, seen in _files(project.root).items()
                                                 if before.get(path) != seen))
    return outcome, project, outside


def _files(root: Path) -> dict[Path, tuple[int, int]]:
    """Every regular file under `root` (links not followed) with its size and time of change."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                found[path] = (info.st_size, info.st_mtime_ns)
    return found


def needs_a_process(case: HostileCase) -> bool:
    """Whether the case tests what only a fresh interpreter shows: its own start (locale, encodings,
    PYTHON* variables), closed descriptors, signals."""
    emulated = ("PYTHONUTF8", "PYTHONIOENCODING", "LC_ALL", "LANG")  # what the zygote sets up as the interpreter would
    return case.process or any(k.startswith(("PYTHON", "LC_")) and k not in emulated for k in case.extra_env)


def _in_a_process(case: HostileCase, argv: list[str], steps: list[str], env: dict) -> Outcome:
    command = [*PY, "-m", case.program, *argv]
    cwd = steps[0]
    if len(steps) > 1 or case.stdout != "captured":
        # through a shell: a path too long for one chdir entered one step at a time; stdout closed or
        # piped into `head -c1` (the command's own status kept)
        run = " ".join(_quote(a) for a in command)
        run = {"captured": f"exec {run}", "closed": f"exec {run} >&-",
               "head1": f"set -o pipefail; {run} | head -c1 >/dev/null; exit ${{PIPESTATUS[0]}}"}[case.stdout]
        command = ["bash", "-c", " && ".join([*(f"cd {_quote(s)}" for s in steps[1:]), run])]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, timeout=case.time_bound, env=env,
                              stdin=subprocess.DEVNULL)
        return Outcome(done.returncode, _text(done.stdout), _text(done.stderr))
    except subprocess.TimeoutExpired as exc:
        return Outcome(None, _text(exc.stdout), _text(exc.stderr))


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _deepen(project: ScratchProject, total: int):
    """Move the project under a path of `total` characters: 1 stands for 4040, just short of PATH_MAX
    (4096), so that invoke still finds tasks.py but the files deeper in the project (templates,
    build/R/...) have paths too long to open; over 4096, the project's own path is too long.
    The command enters the path one step at a time (the steps returned)."""
    base = project.root.parent
    wanted = (4040 if total == 1 else total) - len(str(base)) - len("/project")
    segments = [("d" * 200)] * (wanted // 201)
    segments.append("e" * (wanted - 201 * len(segments) - 1))
    fd = os.open(base, os.O_RDONLY)
    try:
        for segment in segments:
            os.mkdir(segment, dir_fd=fd)
            inner = os.open(segment, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.rename(project.root, "project", dst_dir_fd=fd)
    finally:
        os.close(fd)
    deep = ScratchProject.__new__(ScratchProject)
    deep.root = base.joinpath(*segments, "project")
    return deep, [str(base), *segments, "project"]


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def judge(case: HostileCase, outcome: Outcome, project: ScratchProject, outside: Path, connections: int) -> list[str]:
    """What is wrong with the outcome (empty: clean)."""
    problems = []
    text = outcome.stdout + outcome.stderr
    message = outcome.stderr.strip()
    if outcome.hung:
        return [f"hung (killed after {case.time_bound}s)"]
    if outcome.traceback:
        problems.append("traceback: " + text.strip().splitlines()[-1][:200])
    if outcome.exit_status != case.exit_status:
        problems.append(f"exit {outcome.exit_status}, expected {case.exit_status}: {message[-200:]!r}")
    if any(form in text for form in SECRET_FORMS):
        problems.append("secret echoed")
    for path in outcome.written:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if any(form.encode() in data for form in SECRET_FORMS):
            problems.append(f"secret echoed in {path.relative_to(project.root)}")
    for fragment in case.mentions:
        if fragment not in message:
            problems.append(f"message lacks {fragment!r}: {message[-200:]!r}")
    for fragment in case.absent:
        if fragment != SECRET and fragment in message:
            problems.append(f"message says {fragment!r}: {message[-200:]!r}")
    if not case.exit_status == 0 and len(message.splitlines()) != 1:
        problems.append(f"{len(message.splitlines())} lines of error")
    if len(message) > MAX_MESSAGE:
        problems.append(f"a message of {len(message)} characters")
    for fragment in case.shows:
        if fragment not in outcome.stdout:
            problems.append(f"output lacks {fragment!r}")
    for fragment in case.hides:
        if fragment in outcome.stdout:
            problems.append(f"output shows {fragment!r}")
    if connections and not case.engine_allowed:
        problems.append("the engine was contacted")
    try:
        left = case.after(project, outside)
    except OSError:  # a path too long to look at
        left = None
    if left:
        problems.append("leftover: " + left)
    return problems


def cleanup(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():  # too deep for rmtree's paths: remove it with relative steps
        subprocess.run(["rm", "-rf", "--", root.name], cwd=root.parent, check=False)


__all__ = ["REPO", "HostileCase", "cases", "run_case", "judge", "cleanup", "SECRET"]


from .derived_hostile import derived_cases  # noqa: E402  (it builds on this module's helpers)
from .resolver_hostile import resolver_cases  # noqa: E402  (likewise)
