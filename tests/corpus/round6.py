"""Issue 54's classes (hostile input, round six): a secret in a value that names an image, a URL or a
time, wherever it stands in it (masked before any cut); text from an image, an engine or a registry
escaped; an index that refuses our credentials; values out of their bounds."""

from __future__ import annotations

import json
import socket
import threading

from .hostile import SECRET, HostileCase, a_key, dev, nothing_built, setup_all

# a login long enough that a cut at 40 characters before the mask would show the secret
EPOCH_URL = f"https://ci-bot:{SECRET}{'x' * 40}@host.example/epoch"


def secrets_cases(add) -> None:
    """A secret where the reference grammar does not expect a login (after the host, where the digest goes)
    and a URL with a login in SOURCE_DATE_EPOCH: one line, exit 2, never the secret nor a piece of it."""
    klass = "secrets printed"
    key = setup_all(dev, a_key("k.pub", 0o644, public=True))
    for name, argv, setup in [
        ("verify-image-token-as-digest", ("verify-attestation", "--registry-image", f"host.example/p:dev@{SECRET}",
                                          "--trusted-key", "k.pub"), key),
        ("verify-image-login-after-host", ("verify-attestation", "--registry-image",
                                           f"host.example/p:{SECRET}@x/nvidia/pytorch:dev", "--trusted-key", "k.pub"),
         key),
        ("repro-against-token-as-digest", ("repro", "--release", "dev", "--against", f"host.example/p:dev@{SECRET}"),
         dev),
        ("repro-against-login-after-host", ("repro", "--release", "dev", "--against",
                                            f"host.example/p:{SECRET}@x/nvidia/pytorch:dev"), dev),
    ]:
        add(HostileCase(name, klass, argv, setup, absent=(SECRET, SECRET[:6]), after=nothing_built))
    for task in ("build", "repro"):
        add(HostileCase(f"{task}-epoch-url-with-login", klass, (task, "--release", "dev"), dev,
                        extra_env={"SOURCE_DATE_EPOCH": EPOCH_URL}, mentions=("SOURCE_DATE_EPOCH",),
                        absent=(SECRET, SECRET[:6]), after=nothing_built))




# an engine's words holding a terminal's escapes (a title set, the screen cleared) and a forged second line
ENGINE_WORDS = "no\x1b]0;owned\x07 such image\x1b[2J\nERROR: a forged second line"


class RefusingEngine:
    """A Docker engine on a Unix socket that answers its ping and version, has no image, and refuses every
    pull and build inside the stream (as the engine does) with ENGINE_WORDS; anything else, a 500 saying
    them."""

    def __init__(self, path):
        self.path = str(path)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _reply(first_line: str) -> tuple[str, bytes]:
        method, target = (first_line.split(" ") + ["", ""])[:2]
        path = target.split("?", 1)[0]
        refusal = json.dumps({"message": ENGINE_WORDS}).encode()
        if path.endswith("/_ping"):
            return "200 OK", b"OK"
        if path.endswith("/version"):
            return "200 OK", json.dumps({"ApiVersion": "1.41", "Version": "20.10.24", "Os": "linux",
                                         "Arch": "amd64"}).encode()
        if path.endswith("/images/json"):
            return "200 OK", b"[]"
        if method == "GET" and path.endswith("/json") and "/images/" in path:  # the engine's words for it
            return "404 Not Found", json.dumps({"message": "No such image: " + ENGINE_WORDS}).encode()
        if method == "POST" and (path.endswith("/images/create") or path.endswith("/build")):
            return "200 OK", [json.dumps({"stream": "Step 1/1 : FROM x\n"}).encode(),
                              json.dumps({"error": ENGINE_WORDS, "errorDetail": {"message": ENGINE_WORDS}}).encode()]
        return "500 Internal Server Error", refusal

    def _answer(self, conn):
        with conn:
            try:
                request = conn.recv(65536).decode("latin-1")
                status, body = self._reply(request.split("\r\n", 1)[0])
                head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\n"
                if isinstance(body, list):  # a stream: one JSON object a chunk, as the engine sends it
                    conn.sendall(f"{head}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
                                 + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in body) + b"0\r\n\r\n")
                else:
                    conn.sendall(f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
            except OSError:
                pass

    def close(self):
        self.server.close()


def refusing_engine(project, outside):
    engine = RefusingEngine(outside / "refusing-engine.sock")
    return {"REFUSING_ENGINE": engine.path}, [engine]


def escaping_cases(add) -> None:
    """An engine whose refusals hold escape sequences and a newline: every task that asks it says so in one
    line (exit 1; an image it has not, exit 2), with the escapes shown escaped on both streams. (A build is
    left out: against an engine without the base image it would bootstrap one with debootstrap.)"""
    klass = "printing"
    raw = ("\x1b", "\x07", "forged second line\n")
    for name, argv, status in [
        ("engine-refusal-escapes-repro", ("repro", "--release", "dev", "--against", "host.example/p:dev"), 1),
        ("engine-refusal-escapes-prune", ("prune",), 1),
        ("engine-refusal-escapes-smoke", ("smoke", "--release", "dev", "--image", "host.example/p:dev"), 2),
    ]:
        add(HostileCase(name, klass, argv, dev, serve=refusing_engine, exit_status=status, engine_allowed=True,
                        extra_env={"DOCKER_HOST": "unix://REFUSING_ENGINE"}, absent=raw, hides=raw,
                        **({} if argv[0] == "repro" else {"after": nothing_built})))


class StallingPullEngine(RefusingEngine):
    """The engine of RefusingEngine, whose pull (`POST /images/create`) never answers (`endless` False: not even
    its headers) or answers and then streams "Waiting" events forever, a few a second."""

    def __init__(self, path, endless: bool):
        self.endless, self.closed = endless, threading.Event()
        super().__init__(path)

    def _answer(self, conn):
        request = conn.recv(65536, socket.MSG_PEEK).decode("latin-1")
        if "/images/create" not in request.split("\r\n", 1)[0]:
            return super()._answer(conn)
        with conn:
            try:
                conn.recv(65536)
                if self.endless:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n")
                    event = json.dumps({"status": "Waiting", "id": "0123456789ab"}).encode() + b"\r\n"
                    while not self.closed.wait(0.2):
                        conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
                else:
                    self.closed.wait(120)
            except OSError:
                pass

    def close(self):
        self.closed.set()
        super().close()


def stalling_pull_engine(endless: bool):
    def serve(project, outside):
        engine = StallingPullEngine(outside / "stalling-engine.sock", endless)
        return {"STALLING_ENGINE": engine.path}, [engine]
    return serve


def pull_deadline_cases(add) -> None:
    """`repro --against REF`'s pull, which the engine never answers or never ends: cut by the pull's one
    deadline (here $NGCBUILD_HTTP_DEADLINE_S, the most any one request may take), in one line, exit 1."""
    klass = "reads without a deadline"
    for name, endless in (("repro-against-pull-never-answered", False), ("repro-against-pull-never-ends", True)):
        add(HostileCase(name, klass, ("repro", "--release", "dev", "--against", "host.example/p:dev"), dev,
                        serve=stalling_pull_engine(endless), exit_status=1, engine_allowed=True, time_bound=40,
                        extra_env={"DOCKER_HOST": "unix://STALLING_ENGINE", "NGCBUILD_HTTP_DEADLINE_S": "4"},
                        mentions=("the engine's pull of host.example/p:dev did not end within 4s",),
                        absent=("Traceback",), after=nothing_built))


def checkout_tools(project, outside):
    """The scratch project given this checkout's own tasks (tasks.py and dev/: `bench`), as a checkout has."""
    import shutil

    from ..conftest import REPO

    shutil.copy(REPO / "tasks.py", project.root / "tasks.py")
    shutil.copytree(REPO / "dev", project.root / "dev", ignore=shutil.ignore_patterns("__pycache__"))


def bench_cases(add) -> None:
    """`invoke bench --repro` with the engine unreachable (its child build fails), with stdout open or closed:
    the child's line, named, exit 1; a bad --runs, exit 2; never a traceback of the bench."""
    from .hostile import git_repo

    klass = "exit statuses"
    setup = setup_all(git_repo, checkout_tools)
    gone = {"DOCKER_HOST": "unix://OUTSIDE/no-engine.sock"}
    for name, stdout in (("bench-repro-engine-unreachable", "captured"),
                         ("bench-repro-engine-unreachable-stdout-closed", "closed")):
        add(HostileCase(name, klass, ("bench", "--repro", "--release", "dev"), setup, exit_status=1,
                        extra_env=gone, stdout=stdout, time_bound=60, absent=("Traceback", "RuntimeError"),
                        mentions=("build --release dev --no-cache --force` exited 1", "cannot reach the Docker engine")))
    add(HostileCase("bench-repro-runs-not-a-number", klass, ("bench", "--repro", "--runs", "x"), setup,
                    exit_status=2, extra_env=gone, mentions=("--runs",), absent=("Traceback",)))


def login_index(status: int = 401):
    """The fake index INDEX wanting ops:SECRET (tests/fake_index.py's login), with einops; `status` 403: it
    forbids instead (a login it knows but will not serve)."""
    def serve(project, outside):
        from ..fake_index import FakeIndex, Wheel

        made = FakeIndex(outside / "index.log", credentials=("ops", SECRET))
        made.add_wheels(Wheel("einops", "0.8.2"))
        if status == 403:
            made.answers["/simple/einops/"] = (403, b"forbidden")
        return {"INDEX": made.address}, [made]
    return serve


def refused_index_cases(add) -> None:
    """An index that refuses our credentials (none, or wrong ones: 401; forbidden: 403) is a failure that
    says so, exit 1, in every task that resolves: never a conflict of the team's requirements (exit 2), never
    "fits: none" (exit 0)."""
    from .resolver_hostile import no_lock_written, team_y

    klass = "resolver: index settings, clean room, exit statuses"
    resolve = ("resolve", "--release", "team-y", "--wheelhouse", "wh", "--index-url")
    fit = ("fit", "--requirements", "requirements/team-y.txt", "--wheelhouse", "wh", "--index-url")
    for name, argv, serve, after in [
        ("resolve-index-wants-a-login", (*resolve, "http://INDEX/simple"), login_index(), no_lock_written),
        ("resolve-index-refuses-the-login", (*resolve, "http://ops:wrong@INDEX/simple"), login_index(),
         no_lock_written),
        ("resolve-index-forbids", (*resolve, f"http://ops:{SECRET}@INDEX/simple"), login_index(403), no_lock_written),
        ("fit-index-wants-a-login", (*fit, "http://INDEX/simple"), login_index(), nothing_built),
        ("fit-index-refuses-the-login", (*fit, "http://ops:wrong@INDEX/simple"), login_index(), nothing_built),
        ("fit-index-forbids", (*fit, f"http://ops:{SECRET}@INDEX/simple"), login_index(403), nothing_built),
    ]:
        add(HostileCase(name, klass, argv, team_y, serve=serve, exit_status=1, mentions=("refused our credentials",),
                        absent=(SECRET, "conflict", "fits: none"), hides=("fits: none",), after=after,
                        time_bound=60))


def bounds_cases(add) -> None:
    """Values past what they can mean, refused where they are read (one line, exit 2, nothing run): an index
    read as of a day to come, a proposal named as a derived release, a repro of what no build makes, more
    mutants at once than an engine runs; and a team's requirements file read wherever it lives (bounded,
    never a FIFO), a plain path outside the project never called a link."""
    import os

    from .derived_hostile import copy_team_vision
    from .hostile import copy_archived, edit, secret_file, write
    from .resolver_hostile import index, no_lock_written, team_y

    klass = "values that mean nothing"
    as_of_9999 = setup_all(team_y, edit("manifests/derived/team-y.yaml", "derive:\n",
                                        "derive:\n  index_as_of: 9999-12-31\n"))
    for name, argv, setup, mentions, after in [
        ("index-as-of-9999-in-a-manifest", ("resolve", "--release", "team-y", "--wheelhouse", "wh"), as_of_9999,
         ("manifests/derived/team-y.yaml", "derive.index_as_of", "in the future"), no_lock_written),
        ("index-as-of-9999-renders-nothing", ("render", "--release", "team-y"), as_of_9999,
         ("derive.index_as_of",), nothing_built),
        ("fit-index-as-of-9999", ("fit", "--requirements", "requirements/team-y.txt", "--index-as-of", "9999-12-31"),
         team_y, ("--index-as-of", "in the future"), nothing_built),
        ("bump-as-a-derived-release", ("bump", "--release", "dev", "--as", "team-vision"),
         setup_all(dev, lambda p, o: copy_team_vision(p)), ("--as team-vision", "derived release"), nothing_built),
        ("repro-archived-release", ("repro", "--release", "19.08"), setup_all(dev, copy_archived), ("archived",),
         nothing_built),
        ("repro-platform-not-listed", ("repro", "--release", "dev", "--platform", "linux/arm64"), dev,
         ("build.platforms", "linux/arm64"), nothing_built),
        ("mutate-jobs-a-billion", ("mutate", "--release", "dev", "--jobs", "1000000000"), dev,
         ("--jobs", "from 1 to 64"), nothing_built),
        ("mutate-jobs-past-the-bound", ("mutate", "--release", "dev", "--jobs", "65"), dev,
         ("--jobs", "from 1 to 64"), nothing_built),
        ("fit-requirements-outside-a-fifo", ("fit", "--requirements", "OUTSIDE/req.fifo"),
         setup_all(team_y, lambda p, o: os.mkfifo(o / "req.fifo")), ("FIFO",), nothing_built),
        ("fit-requirements-outside-a-device", ("fit", "--requirements", "/dev/zero"), team_y, ("device",),
         nothing_built),
        ("fit-requirements-outside-credentials", ("fit", "--requirements", "OUTSIDE/credentials"),
         setup_all(team_y, lambda p, o: secret_file(o)), ("line 1", "not shown"), nothing_built),
        ("trusted-key-plain-path-outside", ("verify-attestation", "--registry-image",
                                            "localhost:5000/nvidia/pytorch:dev-py3", "--trusted-key", "OUTSIDE/k.pub"),
         setup_all(dev, lambda p, o: a_key("../outside/k.pub", 0o644, public=True)(p, o)), ("is outside",),
         nothing_built),
    ]:
        add(HostileCase(name, klass, argv, setup, mentions=mentions, absent=(SECRET, "a link"), after=after))
    # a team's file in its own checkout, beside the project: read, resolved, fits
    add(HostileCase("fit-requirements-in-the-teams-checkout", klass,
                    ("fit", "--requirements", "OUTSIDE/team/requirements.txt", "--wheelhouse", "wh", "--index-url",
                     "http://INDEX/simple"),
                    setup_all(team_y, lambda p, o: write("../outside/team/requirements.txt", "einops>=0.8\n")(p, o)),
                    serve=index(_einops()), exit_status=0, shows=("fits: dev",), after=nothing_built, time_bound=60))


def _einops():
    from ..fake_index import Wheel

    return Wheel("einops", "0.8.2")


def lock_body_cases(add) -> None:
    """A lock's body edited by hand where no rule of the lock's check sees it (a `# via` forged, a version
    moved within the team's specifier), or its body digest gone or forged: one line naming the lock file,
    exit 2, nothing rendered. A lock is exactly what `resolve` writes."""
    from .derived_hostile import LOCK, REQUIREMENTS, team
    from .resolver_hostile import GOOD_BODY, fresh_lock

    klass = "derived releases: a lock edited by hand"
    forged_via = GOOD_BODY.replace("tqdm==4.67.1", f"leftpad==1.0 \\\n    --hash=sha256:{'d' * 64}\n"
                                                   "    # via einops\ntqdm==4.67.1")
    for name, setup, mentions in [
        ("lock-via-forged", setup_all(team, fresh_lock(forged_via)), (LOCK, "not the ones")),
        ("lock-version-moved-within-the-specifier",
         setup_all(team, fresh_lock(GOOD_BODY.replace("einops==0.8.2", "einops==0.8.3"))), (LOCK, "not the ones")),
        ("lock-hash-swapped", setup_all(team, fresh_lock(GOOD_BODY.replace("a" * 64, "e" * 64))),
         (LOCK, "not the ones")),
        ("lock-via-moved-to-another-requirer",
         setup_all(team, fresh_lock(GOOD_BODY.replace(f"    # via -r {REQUIREMENTS}\ntqdm", "    # via tqdm\ntqdm"))),
         (LOCK, "not the ones")),
        ("lock-body-digest-recomputed-for-the-old-body", setup_all(team, fresh_lock(
            GOOD_BODY.replace("einops==0.8.2", "einops==0.8.3"), written=GOOD_BODY)), (LOCK, "not the ones")),
        ("lock-without-body-digest", setup_all(team, fresh_lock(GOOD_BODY), _drop_body_digest), (LOCK, "body-sha256")),
        ("lock-body-digest-twice", setup_all(team, fresh_lock(GOOD_BODY), _body_digest_twice), (LOCK, "body-sha256")),
    ]:
        add(HostileCase(name, klass, ("render", "--release", "team-x"), setup, mentions=mentions, absent=(SECRET,),
                        after=nothing_built))


def via_chain(count: int, broken_at: int | None = None) -> str:
    """A lock body of `count` entries after GOOD_BODY's, each `# via` the next and the last `# via einops` (a
    team requirement): every entry reached, but only through the whole chain (2.2 MB for 20,000, under the
    lock's 5 MB cap); `broken_at`: that entry's `# via` names nothing locked, so it and all before it are
    reached by nothing."""
    from .resolver_hostile import GOOD_BODY

    names = [f"chain{number:05d}" for number in range(count)]
    entries = []
    for number, name in enumerate(names):
        via = names[number + 1] if number + 1 < count else "einops"
        if number == broken_at:
            via = "nothing-locked"
        entries.append(f"{name}==1.0 \\\n    --hash=sha256:{'c' * 64}\n    # via {via}\n")
    return GOOD_BODY + "".join(entries)


def lock_shape_cases(add) -> None:
    """A lock under its size cap whose shape made the lock's check quadratic (20,000 entries, each `# via` the
    next: render ran past two minutes): checked in linear time, refused in one line, exit 2."""
    from .derived_hostile import LOCK, team
    from .resolver_hostile import fresh_lock

    klass = "structures without a bound"
    for name, body, mentions in [
        ("lock-via-chain-20000", via_chain(20_000), (LOCK, "not the ones")),
        ("lock-via-chain-20000-broken-in-the-middle", via_chain(20_000, broken_at=10_000),
         (LOCK, "chain00000==1.0 is required by nothing")),
    ]:
        add(HostileCase(name, klass, ("render", "--release", "team-x"), setup_all(team, fresh_lock(body)),
                        mentions=mentions, absent=("Traceback",), after=nothing_built, time_bound=30))


def _drop_body_digest(project, outside):
    from .derived_hostile import LOCK

    path = project.root / LOCK
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if not line.startswith("# body-sha256:")))


def _body_digest_twice(project, outside):
    from .derived_hostile import LOCK

    path = project.root / LOCK
    text = path.read_text()
    line = next(line for line in text.splitlines(keepends=True) if line.startswith("# body-sha256:"))
    path.write_text(text.replace(line, line + line))


def round6_cases(add) -> None:
    secrets_cases(add)
    escaping_cases(add)
    refused_index_cases(add)
    pull_deadline_cases(add)
    bench_cases(add)
    bounds_cases(add)
    lock_body_cases(add)
    lock_shape_cases(add)
