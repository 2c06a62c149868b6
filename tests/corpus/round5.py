"""Issue 43's classes beside every task's walk (every_task.py): options that mean something only with
another, given alone; policy values that mean nothing; structures without a bound (JSON nested
thousands deep from a registry, an index, a token service, the engine); reads trickled a byte at a time
(a token, the attestations' referrers, a blob, the advisory data), each cut at the deadline with one
line naming the host; and the program's own printing (help, the list, the version) to a closed stream,
a pipe closed early and an ASCII locale."""

from __future__ import annotations

import socket
import threading

from . import fakes
from .fakes import REPOSITORY, Content, FakeRegistry
from .hostile import SECRET, HostileCase, dev, edit, nothing_built, setup_all
from .trust import VERIFY, attested, audited, index, own_tokens, registry, trusted_key

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a": ' * 20_000 + b"1" + b"}" * 20_000
MANIFEST = "manifests/dev.yaml"
TRICKLE_ENV = {"NGCBUILD_HTTP_DEADLINE_S": "5"}  # every read's deadline, for the trickled answers


def options_alone_cases(add) -> None:
    """Options the task table declares only with another (cli/declare.py: needs, excludes): one line
    naming what is missing, exit 2, nothing run (no engine, no build/)."""
    klass = "options alone"
    for name, argv, says in [
        ("smoke-baseline-without-perf", ("smoke", "--release", "dev", "--baseline", "dev"), "--perf"),
        ("smoke-threshold-without-baseline", ("smoke", "--release", "dev", "--threshold", "0.1"), "--baseline"),
        ("smoke-python-without-host", ("smoke", "--release", "dev", "--python", "python3"), "--host"),
        ("smoke-expect-from-env-without-host", ("smoke", "--expect-from-env"), "--host"),
        ("smoke-image-with-host", ("smoke", "--host", "--image", "debian:bookworm"), "--host"),
        ("smoke-baseline-with-host", ("smoke", "--host", "--perf", "--baseline", "dev"), "--host"),
        ("build-force-platform-without-platform", ("build", "--release", "dev", "--force-platform"), "--platform"),
        ("bump-as-with-check", ("bump", "--release", "dev", "--check", "--as", "next"), "--check"),
        ("rehearse-job-without-ci", ("rehearse", "--job", "lint"), "--workflow ci"),
        ("rehearse-as-without-bump", ("rehearse", "--workflow", "ci", "--as", "next"), "--workflow bump"),
        ("rehearse-releases-with-ci", ("rehearse", "--workflow", "ci", "--releases", "dev"), "--workflow release"),
        ("rehearse-secret-file-with-bump", ("rehearse", "--workflow", "bump", "--releases", "dev", "--as", "x",
                                           "--secret-file", "s.env"), "--workflow release"),
    ]:
        add(HostileCase(name, klass, argv, dev, mentions=(says,), after=nothing_built))


def security(text: str):
    def step(project, outside):
        path = project.root / MANIFEST
        path.write_text(path.read_text() + "security:\n" + text)
    return step


def values_cases(add) -> None:
    """Policy values that parse but mean nothing: refused where the manifest is loaded, one line naming the
    key, exit 2; and a setting of the environment that is no number of seconds."""
    klass = "values that mean nothing"
    allow = "  allow:\n    - {id: PYSEC-2017-94, reason: %s, expires: %s}\n"
    for name, step, says in [
        ("allow-expires-9999", security(allow % ("no caller reaches it", "9999-12-31")), "days ahead"),
        ("allow-expires-in-ten-years", security(allow % ("no caller reaches it", "2036-01-01")), "days ahead"),
        ("allow-reason-blank", security(allow % ("'   '", "2027-01-01")), "says nothing"),
        ("allow-reason-placeholder", security(allow % ("TODO", "2027-01-01")), "says nothing"),
        ("allow-reason-a-dash", security(allow % ("'-'", "2027-01-01")), "says nothing"),
        ("unresolved-ok-reason-blank", edit(MANIFEST, "  torch_with: [lapack, mkl]\n",
                                            "  torch_with: [lapack, mkl]\n  unresolved_ok: {libcuda: ' '}\n"),
         "says nothing"),
        ("bump-hold-reason-blank", edit(MANIFEST, "  leader: torch\n",
                                        "  leader: torch\n  hold: {numpy: {versions: '<3', reason: '.'}}\n"),
         "says nothing"),
    ]:
        add(HostileCase(name, klass, ("render", "--release", "dev"), setup_all(dev, step), mentions=(says,),
                        after=nothing_built))
    for value in ("0", "-5", "1e9", "soon", "99999"):
        add(HostileCase(f"http-deadline-{value}", klass, ("render", "--release", "dev"), dev,
                        extra_env={"NGCBUILD_HTTP_DEADLINE_S": value}, mentions=("NGCBUILD_HTTP_DEADLINE_S",),
                        after=nothing_built))


def _deep_registry(path_of):
    """The fake registry of an attested image, one of whose answers is JSON nested 100 000 deep."""
    def serve(project, outside):
        content = Content()
        digest = attested(content, trusted_key(project))
        made = FakeRegistry(outside / "registry.log", content)
        made.raw[path_of(digest)] = lambda handler: fakes.send(handler, 200, DEEP, {
            "Content-Type": "application/vnd.oci.image.manifest.v1+json"})
        return {"REG": made.address}, [made]
    return serve


class DeepEngine:
    """A Docker engine on a Unix socket that answers its ping, then every call with JSON nested deep."""

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
    def _answer(conn):
        with conn:
            try:
                request = conn.recv(65536).decode("latin-1")
                body = b"OK" if " /_ping" in request.split("\r\n", 1)[0] else DEEP_OBJECT
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            except OSError:
                pass

    def close(self):
        self.server.close()


def deep_engine(project, outside):
    engine = DeepEngine(outside / "deep-engine.sock")
    return {"DEEP_ENGINE": engine.path}, [engine]


def structures_cases(add) -> None:
    """JSON nested 100 000 deep where ngcbuild reads JSON from outside: refused in one line (exit 1 or 2),
    never a RecursionError."""
    klass = "structures without a bound"
    manifest = f"/v2/{REPOSITORY}/manifests/dev-py3"
    for name, serve, status in [
        ("registry-manifest-nested-deep", _deep_registry(lambda digest: manifest), 2),
        ("registry-referrers-nested-deep",
         _deep_registry(lambda digest: f"/v2/{REPOSITORY}/manifests/{digest.replace(':', '-')}"), 2),
        ("token-nested-deep", registry(tokens=own_tokens(body=DEEP)), 1),
    ]:
        add(HostileCase(name, klass, VERIFY, dev, serve=serve, exit_status=status, absent=(SECRET,), time_bound=45))
    add(HostileCase("advisory-answer-nested-deep", klass, ("audit", "--release", "dev", "--pypi-mirror",
                                                           "http://INDEX/pypi"), audited,
                    serve=index({"/pypi/tqdm/json": (200, DEEP), "/pypi/torch/2.13.0/json": (200, DEEP_OBJECT)}),
                    exit_status=1, mentions=("not checked",), time_bound=45))
    add(HostileCase("engine-answer-nested-deep", klass, ("prune",), dev, serve=deep_engine, exit_status=1,
                    extra_env={"DOCKER_HOST": "unix://DEEP_ENGINE"}, time_bound=45))
    add(HostileCase("docker-config-nested-deep", klass, VERIFY, dev,
                    serve=_with_deep_config(registry(auth=("basic", {"ci-bot": SECRET}))), exit_status=2, extra_env={"DOCKER_CONFIG": "OUTSIDE/docker"},
                    mentions=("config.json",), time_bound=45))


def _with_deep_config(serve):
    def both(project, outside):
        places, servers = serve(project, outside)
        (outside / "docker").mkdir(exist_ok=True)
        (outside / "docker" / "config.json").write_bytes(DEEP)
        return places, servers
    return both


def _trickled_registry(path_of):
    def serve(project, outside):
        content = Content()
        digest = attested(content, trusted_key(project))
        made = FakeRegistry(outside / "registry.log", content)
        made.raw[path_of(content, digest)] = fakes.trickle
        return {"REG": made.address}, [made]
    return serve


def _envelope_blob(content: Content, digest: str) -> str:
    return next(d for d, data in content.blobs.items() if data.startswith(b'{"payload'))


def deadline_cases(add) -> None:
    """Answers trickled a byte at a time, wherever ngcbuild reads: each ends at the deadline (5 s here) with
    one line naming the host it waited on."""
    klass = "reads without a deadline"
    for name, serve in [
        ("token-trickled", registry(tokens=own_tokens(raw=fakes.trickle))),
        ("referrers-trickled", _trickled_registry(
            lambda content, digest: f"/v2/{REPOSITORY}/manifests/{digest.replace(':', '-')}")),
        ("attestation-blob-trickled", _trickled_registry(
            lambda content, digest: f"/v2/{REPOSITORY}/blobs/{_envelope_blob(content, digest)}")),
    ]:
        add(HostileCase(name, klass, VERIFY, dev, serve=serve, exit_status=1, mentions=("127.0.0.1", "within 5s"),
                        extra_env=TRICKLE_ENV, time_bound=45))
    add(HostileCase("advisory-answer-trickled", klass, ("audit", "--release", "dev", "--pypi-mirror",
                                                        "http://INDEX/pypi"), audited,
                    serve=index({"/pypi/tqdm/json": fakes.trickle, "/pypi/torch/2.13.0/json": fakes.trickle}),
                    exit_status=1, mentions=("not checked",), shows=("within 5s",), extra_env=TRICKLE_ENV,
                    time_bound=45))


def program_printing_cases(add) -> None:
    """The program's own output (help, the task list, the version, a usage error) to a closed stream, a
    pipe closed after a byte, and an ASCII locale: the status it would have had, no traceback."""
    klass = "printing"
    ascii_locale = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    for name, argv, status in [("list", ("--list",), 0), ("help", ("--help",), 0), ("task-help", ("build", "--help"), 0),
                               ("version", ("--version",), 0), ("usage-error", ("render",), 2)]:
        for variant, stdout, env in [("stdout-closed", "closed", {}), ("pipe-closed", "head1", {}),
                                     ("ascii-locale", "captured", ascii_locale)]:
            add(HostileCase(f"program-{name}-{variant}", klass, argv, dev, exit_status=status, stdout=stdout,
                            extra_env=env, program="ngcbuild"))
    add(HostileCase("notes-non-ascii-in-a-real-ascii-locale", klass, ("notes", "--release", "dev"),
                    setup_all(dev, edit(MANIFEST, "summary: ", "summary: naïve — “ß” 漢字 ")), exit_status=0,
                    extra_env=ascii_locale, process=True, scan_outputs=True))


def round5_cases(add) -> None:
    options_alone_cases(add)
    values_cases(add)
    structures_cases(add)
    deadline_cases(add)
    program_printing_cases(add)

