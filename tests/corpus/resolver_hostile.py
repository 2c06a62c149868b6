"""Hostile inputs of the one resolver (resolver/: resolve, fit, bump) and of a derived release's lock:
index settings with credentials, queries, option-like or expanding values; `${...}` in a requirement;
option-like paths; an index that trickles, never ends or nests its JSON too deep; the exit statuses of
`bump --check` and `fit`; refusals as JSON; a lock edited by hand. Every index here is the tests' one
fake index (tests/fake_index.py) on the loopback: nothing reaches PyPI.

Each case runs as a user would (hostile.py's run_case): one line, its exit status, no secret shown,
no traceback, nothing left behind."""

from __future__ import annotations

import json

from ..fake_index import JSON_PAGE, FakeIndex, Wheel
from ..helpers import wheel_release_manifest
from .derived_hostile import LOCK, MANIFEST, REQUIREMENTS, no_lock_written, team
from .hostile import SECRET, HostileCase, dev, edit, nothing_built, setup_all, write

TEAM_Y = """extends: dev
summary: a team's one requirement on dev
derive:
  requirements: requirements/team-y.txt
"""
LEADER = "ngcbuild-test-leader"
TINY = wheel_release_manifest("a tiny release bumped from a local index", f"  leader: {LEADER}\n")
DEAD = "http://127.0.0.1:9/simple"  # the discard port: nothing listens there
USER = "ops"


def team_y(project, outside):
    dev(project, outside)
    write("manifests/derived/team-y.yaml", TEAM_Y)(project, outside)
    write("requirements/team-y.txt", "einops>=0.8\n")(project, outside)
    (project.root / "wh").mkdir()  # an empty wheelhouse: the release's own extra indexes are not read


def tiny(project, outside):
    write("manifests/tiny.yaml", TINY)(project, outside)
    write("constraints/tiny.txt", f"{LEADER}==1.0\n")(project, outside)


def index(*wheels: Wheel, **misbehaviour):
    """The fake index INDEX with these wheels (metadata files served), misbehaving as asked."""
    def serve(project, outside):
        made = FakeIndex(outside / "index.log")
        made.add_wheels(*wheels)
        for key, value in misbehaviour.items():
            setattr(made.misbehaviour, key, value)
        return {"INDEX": made.address}, [made]
    return serve


def index_with_login_and_files_elsewhere(project, outside):
    """INDEX wants ops:SECRET and lists einops's wheel on another host (127.0.0.2) that wants nothing."""
    files = FakeIndex(outside / "files.log", address="127.0.0.2")
    files.add_wheels(Wheel("einops", "0.8.2"))
    entries = files.entries("einops")
    for entry in entries:
        entry["url"] = f"http://{files.address}/files/{entry['filename']}"
    page = json.dumps({"meta": {"api-version": "1.1"}, "name": "einops", "files": entries}).encode()
    made = FakeIndex(outside / "index.log", answers={"/simple/einops/": (200, page, {"Content-Type": JSON_PAGE})},
                     credentials=(USER, SECRET))
    return {"INDEX": made.address}, [made, files]


def credentials_stayed_home(project, outside) -> str | None:
    """The lock holds no credential; the other host never got one; the index did (it asked for it)."""
    lock = project.root / "constraints" / "team-y.lock"
    if not lock.is_file():
        return "no lock was written"
    if SECRET in lock.read_text() or USER + ":" in lock.read_text():
        return "the lock holds the index's credentials"
    logged = [json.loads(line) for line in (outside / "files.log").read_text().splitlines() if line] \
        if (outside / "files.log").exists() else []
    if not logged:
        return "the other host was never asked for the wheel"
    if any(entry["authorization"] for entry in logged):
        return "credentials were sent to the other host"
    asked = [json.loads(line) for line in (outside / "index.log").read_text().splitlines() if line]
    if not any(entry["authorization"] for entry in asked):
        return "the index was never given its credentials"
    return None


def locked(name: str, line: str):
    def check(project, outside) -> str | None:
        lock = project.root / "constraints" / f"{name}.lock"
        if not lock.is_file():
            return f"constraints/{name}.lock was not written"
        return None if line in lock.read_text() else f"constraints/{name}.lock lacks {line!r}"
    return check


# --- the lock, written fresh (its header's digest is the inputs' own), its body then edited by hand ----

GOOD_BODY = f"""einops==0.8.2 \\
    --hash=sha256:{'a' * 64}
    # via -r {REQUIREMENTS}
tqdm==4.67.1 \\
    --hash=sha256:{'b' * 64}
    # via -r {REQUIREMENTS}
"""


def fresh_lock(body: str, written: str | None = None):
    """team-x's lock with the header `resolve` writes (the digest of the inputs as they are, the digest of
    the body it wrote: `written`, GOOD_BODY unless given) and `body`."""
    def step(project, outside):
        from ngcbuild.core.project import Project
        from ngcbuild.manifest.loader import load_release
        from ngcbuild.manifest.lock import BODY_KEY, INPUTS_KEY, body_digest

        inputs = load_release(Project.at(project.root), "team-x").derived.inputs
        header = (f"# {LOCK}: what derived release team-x adds to dev (a corpus case)\n"
                  f"# {INPUTS_KEY}: {inputs}\n# {BODY_KEY}: {body_digest(GOOD_BODY if written is None else written)}\n"
                  "# release: team-x\n# base: dev\n")
        write(LOCK, header + body)(project, outside)
    return step


def hand_edited(old: str, new: str):
    return setup_all(team, fresh_lock(GOOD_BODY.replace(old, new)))


def resolver_cases(add) -> None:
    klass = "resolver: index settings, clean room, exit statuses"
    resolve_y = ("resolve", "--release", "team-y", "--wheelhouse", "wh")
    einops = Wheel("einops", "0.8.2")
    for name, argv, setup, serve, env, status, mentions, shows, after, bound in [
        # the index setting: the ecosystem's options and variables, each URL checked, credentials never shown
        ("index-url-used", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y, index(einops), {}, 0, (), (),
         locked("team-y", "einops==0.8.2"), 60),
        ("index-env-uv-over-pip", resolve_y, team_y, index(einops),
         {"UV_INDEX_URL": "http://INDEX/simple", "PIP_INDEX_URL": DEAD}, 0, (), (), locked("team-y", "einops==0.8.2"),
         60),
        ("index-option-over-env", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y, index(einops),
         {"UV_INDEX_URL": DEAD, "PIP_INDEX_URL": DEAD}, 0, (), (), locked("team-y", "einops==0.8.2"), 60),
        ("index-credentials-stay-home", (*resolve_y, "--index-url", f"http://{USER}:{SECRET}@INDEX/simple"), team_y,
         index_with_login_and_files_elsewhere, {}, 0, (), (), credentials_stayed_home, 60),
        ("index-credentials-in-a-failure", (*resolve_y, "--index-url", f"http://{USER}:{SECRET}@127.0.0.1:9/simple"),
         team_y, None, {}, 1, ("uv could not resolve", "127.0.0.1:9"), (), no_lock_written, 60),
        ("index-url-with-token-query", (*resolve_y, "--index-url", f"https://mirror.example/simple?token={SECRET}"),
         team_y, None, {}, 2, ("--index-url", "query"), (), no_lock_written, 30),
        ("index-url-option-like", (*resolve_y, "--index-url=--extra-index-url"), team_y, None, {}, 2,
         ("--index-url",), (), no_lock_written, 30),
        ("index-env-option-like", resolve_y, team_y, None, {"PIP_INDEX_URL": "--extra-index-url"}, 2,
         ("$PIP_INDEX_URL", "looks like an option"), (), no_lock_written, 30),
        ("index-url-expands", (*resolve_y, "--index-url", "https://mirror.example/${NGCBUILD_REGISTRY_PASSWORD}/simple"),
         team_y, None, {"NGCBUILD_REGISTRY_PASSWORD": SECRET}, 2, ("--index-url", "${...}"), (), no_lock_written, 30),
        ("index-env-file-scheme", resolve_y, team_y, None, {"PIP_INDEX_URL": f"ftp://{USER}:{SECRET}@x.example/s"}, 2,
         ("$PIP_INDEX_URL",), (), no_lock_written, 30),
        ("extra-index-env-plain-remote", resolve_y, team_y, None,
         {"UV_EXTRA_INDEX_URL": "https://ok.example/simple http://mirror.example/simple"}, 2,
         ("$UV_EXTRA_INDEX_URL", "plain http://"), (), no_lock_written, 30),
        # the clean room: nothing of the caller's reaches uv, ${...} expands nothing, no value is an option
        ("requirement-expands-a-secret", resolve_y,
         setup_all(team_y, write("requirements/team-y.txt",
                                 "einops @ https://files.example/${NGCBUILD_REGISTRY_PASSWORD}/einops-0.8.2.tar.gz"
                                 f"#sha256={'c' * 64}\n")),
         None, {"NGCBUILD_REGISTRY_PASSWORD": SECRET}, 2, ("line 1", "${...}"), (), no_lock_written, 30),
        ("requirement-expands-in-a-version", resolve_y, setup_all(team_y, write("requirements/team-y.txt",
                                                                                "einops>=${HOME}\n")),
         None, {}, 2, ("line 1", "${...}"), (), no_lock_written, 30),
        ("callers-uv-settings-ignored", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y, index(einops),
         {"UV_CONSTRAINT": "OUTSIDE/missing.txt", "UV_OVERRIDE": "OUTSIDE/missing.txt", "UV_NO_INDEX": "1"}, 0, (), (),
         locked("team-y", "einops==0.8.2"), 60),
        ("wheelhouse-option-like", ("resolve", "--release", "team-y", "--wheelhouse=--no-index", "--index-url",
                                    "http://INDEX/simple"),
         setup_all(team_y, lambda p, o: (p.root / "--no-index").mkdir()), index(einops), {}, 0, (), (),
         locked("team-y", "einops==0.8.2"), 60),
        ("keyring-provider-unknown", resolve_y, team_y, None, {"UV_KEYRING_PROVIDER": "import"}, 2,
         ("UV_KEYRING_PROVIDER",), (), no_lock_written, 30),
        ("deadline-not-a-number", resolve_y, team_y, None, {"NGCBUILD_RESOLVER_DEADLINE_S": "soon"}, 2,
         ("NGCBUILD_RESOLVER_DEADLINE_S",), (), no_lock_written, 30),
        # an index that never gives a whole answer: one deadline for the run, one line naming the host
        ("index-trickled", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y, index(einops, trickle_s=0.2),
         {"NGCBUILD_RESOLVER_DEADLINE_S": "5"}, 1, ("127.0.0.1", "deadline"), (), no_lock_written, 40),
        ("resolve-index-endless", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y, index(einops, endless_pages=True),
         {"NGCBUILD_RESOLVER_DEADLINE_S": "5"}, 1, ("127.0.0.1", "deadline"), (), no_lock_written, 40),
        ("index-nested-json", (*resolve_y, "--index-url", "http://INDEX/simple"), team_y,
         index(einops, page_body=b'{"files": ' + b"[" * 100000 + b"]" * 100000 + b"}"), {}, 1,
         ("uv could not resolve",), (), no_lock_written, 60),
        # exit statuses: bump --check 0 current, 1 newer, 3 could not check; fit 1 when nothing was checked
        ("bump-check-current", ("bump", "--check", "--release", "tiny", "--index-url", "http://INDEX/simple"), tiny,
         index(Wheel(LEADER, "1.0")), {}, 0, (), ("is current",), nothing_built, 60),
        ("bump-check-newer", ("bump", "--check", "--release", "tiny", "--index-url", "http://INDEX/simple"), tiny,
         index(Wheel(LEADER, "1.0"), Wheel(LEADER, "1.1")), {}, 1, ("a newer set", "1.0 -> 1.1"), (), nothing_built,
         60),
        ("bump-check-unreachable", ("bump", "--check", "--release", "tiny", "--index-url", DEAD), tiny, None, {}, 3,
         ("could not check", "127.0.0.1:9"), (), nothing_built, 60),
        ("bump-check-deadline", ("bump", "--check", "--release", "tiny", "--index-url", "http://INDEX/simple"), tiny,
         index(Wheel(LEADER, "1.0"), trickle_s=0.2), {"NGCBUILD_RESOLVER_DEADLINE_S": "5"}, 3,
         ("could not check", "127.0.0.1"), (), nothing_built, 40),
        ("verify-index-trickled", ("verify", "--release", "tiny", "--index-url", "http://INDEX/simple"), tiny,
         index(Wheel(LEADER, "1.0"), trickle_s=0.2), {"NGCBUILD_RESOLVER_DEADLINE_S": "5"}, 1,
         ("verify tiny", "deadline of 5 s", "NGCBUILD_RESOLVER_DEADLINE_S"), ("no whole answer within",), nothing_built,
         40),
        ("bump-hold-blank-reason", ("bump", "--check", "--release", "tiny"),
         setup_all(tiny, edit("manifests/tiny.yaml", f"  leader: {LEADER}\n",
                              f"  leader: {LEADER}\n  hold:\n    numpy: {{versions: '<3', reason: '   '}}\n")),
         None, {}, 2, ("bump.hold.numpy.reason", "says nothing"), (), nothing_built, 30),
        ("bump-derived-with-as", ("bump", "--release", "team-y", "--as", "team-z"), team_y, None, {}, 2,
         ("--as", "derived release"), (), nothing_built, 30),
        ("bump-base-release-of-ours", ("bump", "--check", "--release", "tiny", "--base-release", "dev"), tiny, None,
         {}, 2, ("--base-release",), (), nothing_built, 30),
        ("fit-nothing-checked", ("fit", "--requirements", "requirements/team-y.txt", "--wheelhouse", "wh",
                                 "--index-url", DEAD), team_y, None, {}, 1, ("no release could be checked",),
         ("| dev | not checked |",), nothing_built, 60),
        ("fit-refusal-as-json", ("fit", "--requirements", "nowhere.txt", "--json"), team_y, None, {}, 2,
         ("nowhere.txt", "not found"), ('"error": ', '"exit": 2'), nothing_built, 30),
        ("resolve-refusal-as-json", ("resolve", "--release", "team-y", "--json", "--index-url", "ftp://x.example/s"),
         team_y, None, {}, 2, ("--index-url",), ('"error": ', '"exit": 2'), no_lock_written, 30),
        # read "as of a day" from an index that says no file's upload time (devpi's mirror): one line, exit 1,
        # never "no version of ..." conflicts
        ("resolve-as-of-an-index-without-upload-times", (*resolve_y, "--index-url", "http://INDEX/simple"),
         setup_all(team_y, edit("manifests/derived/team-y.yaml", "derive:\n", "derive:\n  index_as_of: 2026-11-20\n")),
         index(einops, no_upload_times=True), {}, 1, ("derive.index_as_of", "no upload time", "einops"), (),
         no_lock_written, 60),
        ("fit-as-of-an-index-without-upload-times", ("fit", "--requirements", "requirements/team-y.txt", "--wheelhouse",
                                                     "wh", "--index-as-of", "2026-11-20", "--index-url",
                                                     "http://INDEX/simple"),
         team_y, index(einops, no_upload_times=True), {}, 1, ("--index-as-of", "no upload time"), (), nothing_built, 60),
        ("fit-index-as-of-not-a-day", ("fit", "--requirements", "requirements/team-y.txt", "--index-as-of",
                                       "yesterday"), team_y, None, {}, 2, ("--index-as-of",), (), nothing_built, 30),
    ]:
        add(HostileCase(name, klass, argv, setup, serve=serve, extra_env=env, exit_status=status, mentions=mentions,
                        shows=shows, absent=(SECRET,), after=after, time_bound=bound))

    # a lock edited by hand: refused before anything renders, naming its line and what resolve would write
    klass = "derived releases: a lock edited by hand"
    render = ("render", "--release", "team-x")
    for name, setup, mentions in [
        ("lock-protected-pin-moved", hand_edited("tqdm==4.67.1", f"torch==2.14.0+cpu \\\n    --hash=sha256:{'d' * 64}\n"
                                                 f"    # via -r {REQUIREMENTS}\ntqdm==4.67.1"),
         ("line 9", "torch==2.14.0+cpu moves dev's protected pin", "no entry for torch")),
        ("lock-base-pin-moved", hand_edited("tqdm==4.67.1", f"numpy==2.0.0 \\\n    --hash=sha256:{'d' * 64}\n"
                                            "    # via einops\ntqdm==4.67.1"),
         ("line 9", "numpy==2.0.0 moves dev's pin numpy==2.4.6", "no override")),
        ("lock-below-the-requirement", hand_edited("einops==0.8.2", "einops==0.7.0"),
         ("line 6", "einops==0.7.0 does not satisfy the team's requirement einops>=0.8", "a version that does")),
        ("lock-url-nothing-requires", hand_edited("tqdm==4.67.1", f"evil @ https://{USER}:{SECRET}@evil.example/"
                                                  f"evil-1.0.tar.gz \\\n    --hash=sha256:{'d' * 64}\n"
                                                  "    # via einops\ntqdm==4.67.1"),
         ("line 9", "a URL entry that no requirement", "***@evil.example")),
        ("lock-entry-without-hashes", hand_edited(f"einops==0.8.2 \\\n    --hash=sha256:{'a' * 64}\n", "einops==0.8.2\n"),
         ("line 6", "carries no --hash", "every hash")),
        ("lock-entry-nothing-requires", hand_edited("tqdm==4.67.1", f"leftpad==1.0 \\\n    --hash=sha256:{'d' * 64}\n"
                                                    "    # via nobody-we-know\ntqdm==4.67.1"),
         ("line 9", "leftpad==1.0 is required by nothing the team asks for", "no entry for it")),
        ("lock-requirement-missing", hand_edited(f"einops==0.8.2 \\\n    --hash=sha256:{'a' * 64}\n"
                                                 f"    # via -r {REQUIREMENTS}\n", ""),
         ("einops>=0.8", "has no entry", "resolve would lock it")),
        ("override-blank-reason", setup_all(team, fresh_lock(GOOD_BODY),
                                            edit(MANIFEST, "reason: the team's notebooks pin tqdm 4.67", "reason: '   '")),
         ("derive.overrides.0.reason", "says nothing")),
    ]:
        add(HostileCase(name, klass, render, setup, mentions=mentions, absent=(SECRET,), after=nothing_built))

