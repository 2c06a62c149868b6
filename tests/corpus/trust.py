"""Hostile cases of the trust chain (issue 32), each through `invoke` as a user would meet it, against
the fake registry, token service and index of fakes.py: where credentials go (and never go), whether
a registry's bytes are the digest asked for whatever its headers say, answers of the wrong shape or
size, error bodies and signed text full of escape sequences, the audit's mirror, and keygen's output.
The servers' logs (under the case's `outside`) are read afterwards: a credential that reached a host
it was not declared for, or any host before it asked, is a leftover of the case.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from . import fakes
from .fakes import REPOSITORY, Content, FakeIndex, FakeRegistry, FakeTokens, image_manifest, project_json, statement
from .hostile import GOOD_RECORD, SECRET, HostileCase, dev, nothing_built, record, setup_all, write

USER = "ci-bot"
IMAGE = f"REG/{REPOSITORY}:dev-py3"
VERIFY = ("verify-attestation", "--registry-image", IMAGE, "--trusted-key", "k.pub")


# --- what the servers saw ---------------------------------------------------------------------------

def _logged(outside: Path) -> list[tuple[str, dict]]:
    found = []
    for log in sorted(outside.glob("*.log")):
        for line in log.read_text().splitlines():
            if line:
                found.append((log.stem, json.loads(line)))
    return found


def _carries_secret(authorization: str | None) -> bool:
    if not authorization:
        return False
    if SECRET in authorization:
        return True
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic":
        try:
            return SECRET in base64.b64decode(value).decode("utf-8", "replace")
        except ValueError:
            return False
    return False


def secret_never_sent(*servers: str):
    """The password reached none of `servers` (log names; all of them when none is named)."""
    def check(project, outside) -> str | None:
        sent = [name for name, entry in _logged(outside) if (not servers or name in servers)
                and _carries_secret(entry.get("authorization"))]
        return f"the password was sent to {sorted(set(sent))}" if sent else None
    return check


def no_authorization_before_a_401(project, outside) -> str | None:
    """Nothing was authenticated on a registry that never asked (it answers everything anonymously)."""
    sent = [entry["path"] for name, entry in _logged(outside) if entry.get("authorization")]
    return f"credentials were sent unasked ({sent[:2]})" if sent else None


def all_of(*checks):
    def check(project, outside) -> str | None:
        return next((found for found in (c(project, outside) for c in checks) if found), None)
    return check


# --- the servers of a case --------------------------------------------------------------------------

def trusted_key(project) -> Ed25519PrivateKey:
    """A key whose public half the project trusts (k.pub)."""
    key = Ed25519PrivateKey.generate()
    path = project.root / "k.pub"
    path.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    os.chmod(path, 0o644)
    return key


def registry(build=None, auth=None, tokens=None, **knobs):
    """A case's servers: the fake registry REG whose content `build(content, key)` makes (an image
    attested by the project's trusted key by default), with `auth`; `tokens(outside, registry)` makes
    a token service and returns it and the realm."""
    def serve(project, outside):
        key = trusted_key(project)
        content = Content()
        (build or attested)(content, key)
        servers, places, realm_of = [], {}, None
        if tokens is not None:
            realm_of = tokens
        made = FakeRegistry(outside / "registry.log", content, auth=auth, **knobs)
        servers.append(made)
        if realm_of is not None:
            token_server, realm = realm_of(outside, made)
            made.auth = ("bearer", realm)
            if token_server is not None:
                servers.append(token_server)
        places["REG"] = made.address
        return places, servers
    return serve


def attested(content: Content, key) -> str:
    digest = content.add_manifest(image_manifest("attested"), fakes.OCI_MANIFEST, tag="dev-py3")
    content.attest(digest, key)
    return digest


def unattested(content: Content, key) -> str:
    return content.add_manifest(image_manifest("plain"), fakes.OCI_MANIFEST, tag="dev-py3")


def credentials_for(host: str) -> dict:
    return {"NGCBUILD_REGISTRY_USER": USER, "NGCBUILD_REGISTRY_PASSWORD": SECRET, "NGCBUILD_REGISTRY_HOST": host}


def docker_config(entries: dict, helper: str | None = None, helper_script: str | None = None):
    """A Docker config in OUTSIDE/docker (entries: auths by host; REG is the fake's address), and a
    credential helper docker-credential-fake in OUTSIDE/bin when `helper_script` is given."""
    def step(project, outside, places):
        folder = outside / "docker"
        folder.mkdir(exist_ok=True)
        auths = {k.replace("REG", places["REG"]): {"auth": base64.b64encode(v.encode()).decode()}
                 for k, v in entries.items()}
        config = {"auths": auths}
        if helper:
            config["credHelpers"] = {places["REG"]: helper}
        (folder / "config.json").write_text(json.dumps(config))
        if helper_script is not None:
            (outside / "bin").mkdir(exist_ok=True)
            path = outside / "bin" / "docker-credential-fake"
            path.write_text(helper_script)
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return step


def with_config(serve, *steps):
    def both(project, outside):
        places, servers = serve(project, outside)
        for step in steps:
            step(project, outside, places)
        return places, servers
    return both


CONFIG_ENV = {"DOCKER_CONFIG": "OUTSIDE/docker"}
HELPER_ENV = {**CONFIG_ENV, "PATH": "OUTSIDE/bin:" + os.environ.get("PATH", "/usr/bin:/bin")}


def other_host_tokens(users: dict | None = None, anonymous: bool = False):
    """A token service on 127.0.0.2 (another host), over plain HTTP."""
    def make(outside, made):
        server = FakeTokens(outside / "tokens.log", made, users=users, anonymous=anonymous, address="127.0.0.2")
        return server, f"http://{server.address}/token"
    return make


def own_tokens(users: dict | None = None, body: bytes | None = None, raw=None):
    """The registry's own token service: /token on its host and port (plain HTTP on the loopback, where
    credentials may go)."""
    def make(outside, made):
        made.raw["/token"] = lambda handler: fakes.token_answer(handler, made, users or {}, False, body, raw)
        return None, f"http://{made.address}/token"
    return make


# --- the cases ---------------------------------------------------------------------------------------

def trust_cases(add) -> None:
    credential_cases(add)
    registry_answer_cases(add)
    audit_index_cases(add)
    output_cases(add)


def credential_cases(add) -> None:
    klass = "credential scope"
    basic = ("basic", {USER: SECRET})
    for name, serve, env, status, mentions, after in [
        # our variables for another host: never sent to this one (it asks, and is refused them)
        ("cred-env-for-another-host", registry(auth=basic), credentials_for("release.example:5000"), 1,
         ("access denied", "docker login"), secret_never_sent()),
        # the old form, no host named: refused before any registry is asked
        ("cred-env-without-host", registry(auth=basic),
         {"NGCBUILD_REGISTRY_USER": USER, "NGCBUILD_REGISTRY_PASSWORD": SECRET}, 2, ("NGCBUILD_REGISTRY_HOST",),
         secret_never_sent()),
        ("cred-env-host-only", registry(), {"NGCBUILD_REGISTRY_HOST": "REG"}, 2, ("NGCBUILD_REGISTRY_USER",), None),
        ("cred-env-host-not-a-host", registry(), {**credentials_for("REG"), "NGCBUILD_REGISTRY_HOST": "http://x/y"},
         2, ("NGCBUILD_REGISTRY_HOST",), secret_never_sent()),
        # declared for this host, which never asks: nothing sent before a 401 (the image is not attested: 2)
        ("cred-not-before-a-401", registry(unattested), credentials_for("REG"), 2, ("no attestation",),
         no_authorization_before_a_401),
        # declared for this host, which asks: sent, and the image verifies
        ("cred-basic-after-a-401", registry(auth=basic), credentials_for("REG"), 0, (), None),
        # a Bearer challenge whose token service is plain HTTP on another host: never given the password
        ("cred-realm-plain-http-elsewhere", registry(tokens=other_host_tokens({USER: SECRET})), credentials_for("REG"),
         1, ("not sent",), secret_never_sent()),
        # ... and on the registry's own host, it is (the token then opens the registry)
        ("cred-realm-own-host", registry(tokens=own_tokens({USER: SECRET})), credentials_for("REG"), 0, (), None),
        ("cred-realm-not-http", registry(auth=("bearer", "file:///etc/passwd")), credentials_for("REG"), 1,
         ("not an http(s) URL",), secret_never_sent()),
        ("cred-realm-scheme-injection", registry(auth=("bearer", 'https://x" realm="file:///etc/passwd')),
         credentials_for("REG"), 1, ("token service",), secret_never_sent()),
    ]:
        add(HostileCase(name, klass, VERIFY, dev, serve=serve, extra_env=env, exit_status=status, mentions=mentions,
                        absent=(SECRET,), **({"after": after} if after else {}), time_bound=60))
    # the Docker config: its entry for this host is used (after a 401), another host's never
    for name, steps, env, status, mentions, after in [
        ("config-auths-used", (docker_config({"REG": f"{USER}:{SECRET}"}),), CONFIG_ENV, 0, (), None),
        ("config-auths-of-another-host", (docker_config({"release.example:5000": f"{USER}:{SECRET}"}),), CONFIG_ENV,
         1, ("access denied",), secret_never_sent()),
        ("config-https-key-used", (docker_config({"https://REG/v1/": f"{USER}:{SECRET}"}),), CONFIG_ENV, 0, (), None),
        ("config-helper-used", (docker_config({}, "fake", "#!/bin/sh\ncat >/dev/null\n"
                                               f"printf '{{\"ServerURL\":\"x\",\"Username\":\"{USER}\","
                                               f"\"Secret\":\"{SECRET}\"}}'\n"),), HELPER_ENV, 0, (), None),
        ("config-helper-garbage", (docker_config({}, "fake", "#!/bin/sh\ncat >/dev/null\nprintf '\\033[2Jnot json'\n"),),
         HELPER_ENV, 1, ("not its JSON",), None),
        ("config-helper-fails", (docker_config({}, "fake", "#!/bin/sh\ncat >/dev/null\necho '\\033[31mboom' >&2\n"
                                                           "echo 'keychain locked'\nexit 3\n"),),
         HELPER_ENV, 1, ("docker-credential-fake failed",), None),
        ("config-helper-missing", (docker_config({}, "nosuchhelper"),), CONFIG_ENV, 2, ("not on PATH",), None),
        ("config-helper-name-traversal", (docker_config({}, "../../../bin/sh"),), CONFIG_ENV, 2,
         ("credential helper",), None),
        ("config-helper-endless", (docker_config({}, "fake", "#!/bin/sh\ncat >/dev/null\nyes\n"),), HELPER_ENV, 1,
         ("more than",), None),
    ]:
        add(HostileCase(name, klass, VERIFY, dev, serve=with_config(registry(auth=basic), *steps), extra_env=env,
                        exit_status=status, mentions=mentions, absent=(SECRET, "\x1b"),
                        **({"after": after} if after else {}), time_bound=60))
    for name, make, mentions in [
        ("config-not-json", lambda path, reg: path.write_text("{auths"), ("not valid JSON",)),
        ("config-fifo", lambda path, reg: os.mkfifo(path), ("FIFO",)),
        ("config-auths-a-list", lambda path, reg: path.write_text('{"auths": []}'), ("auths",)),
        ("config-auth-not-base64", lambda path, reg: path.write_text(
            json.dumps({"auths": {reg: {"auth": f"{SECRET}!!"}}})), ("not base64",)),
        ("config-huge", lambda path, reg: path.write_text('{"auths": {}, "x": "' + "x" * (2 << 20) + '"}'),
         ("bytes",)),
    ]:
        def broken(project, outside, places, make=make):
            (outside / "docker").mkdir(exist_ok=True)
            make(outside / "docker" / "config.json", places["REG"])
        add(HostileCase(name, klass, VERIFY, dev, serve=with_config(registry(auth=basic), broken), extra_env=CONFIG_ENV,
                        mentions=mentions, absent=(SECRET,)))
    # one registry named two ways is one registry
    add(HostileCase("promote-same-registry-two-ways", klass,
                    ("promote", "--release", "dev", "--from", "localhost:5000", "--to", "127.0.0.1:5000",
                     "--trusted-key", "k.pub"), setup_all(dev, record("{}")), mentions=("same registry",)))
    add(HostileCase("promote-same-registry-default-port", klass,
                    ("promote", "--release", "dev", "--from", "registry.example", "--to", "registry.example:443",
                     "--trusted-key", "k.pub"), setup_all(dev, record("{}")), mentions=("same registry",)))
    add(HostileCase("rehearse-same-registry-two-ways", klass,
                    ("rehearse", "--releases", "dev", "--staging-registry", "localhost:5000", "--release-registry",
                     "127.0.0.1:5000"),
                    dev, mentions=("--release-registry",)))


def lying_header(project, outside):
    """An attested image A, and the tag serving an unattested image B while the header names A."""
    key = trusted_key(project)
    content = Content()
    digest = attested(content, key)
    content.tags["dev-py3"] = content.add_manifest(image_manifest("not attested"), fakes.OCI_MANIFEST)
    made = FakeRegistry(outside / "registry.log", content, lie=digest)
    return {"REG": made.address}, [made]


def swapped_bytes(project, outside):
    """The digest of an attested image asked for; another image's bytes served for it (and the header
    naming the digest asked)."""
    key = trusted_key(project)
    content = Content()
    digest = attested(content, key)
    other = image_manifest("not attested")
    made = FakeRegistry(outside / "registry.log", content, swap={digest: other}, lie=digest)
    return {"REG": made.address, "DIGEST": digest}, [made]


def listing(entries):
    """The tag serves an OCI index whose `manifests` is entries(digest of an attested image)."""
    def build(content, key):
        digest = attested(content, key)
        body = json.dumps({"schemaVersion": 2, "mediaType": fakes.OCI_INDEX, "manifests": entries(digest, content)})
        content.add_manifest(body.encode(), fakes.OCI_INDEX, tag="dev-py3")
    return build


def one_image_many_times(digest, content):
    entry = {"mediaType": fakes.OCI_MANIFEST, "digest": digest, "size": len(content.manifests[digest][0]),
             "platform": {"os": "linux", "architecture": "amd64"}}
    return [entry] * 5000


def signed(payload_of, keyid=None):
    """An image whose provenance is `payload_of(digest)` (bytes), signed by the trusted key."""
    def build(content, key):
        digest = content.add_manifest(image_manifest("signed"), fakes.OCI_MANIFEST, tag="dev-py3")
        content.attest(digest, key, payload=payload_of(digest), keyid=keyid)
    return build


def signed_by_another(keyid):
    def build(content, key):
        digest = content.add_manifest(image_manifest("signed"), fakes.OCI_MANIFEST, tag="dev-py3")
        content.attest(digest, Ed25519PrivateKey.generate(), keyid=keyid)
    return build


def statement_with(**changes):
    return signed(lambda digest: json.dumps(statement(digest, **changes)).encode())


ERROR_BODY = b"\x1b[2J\x1b]0;owned\x07<html>stack trace: password=" + SECRET.encode() + b"</html>"


def registry_answer_cases(add) -> None:
    klass = "registry answers"
    manifest_path = f"/v2/{REPOSITORY}/manifests/dev-py3"
    for name, serve, argv, status, mentions, shows, hides in [
        # a header naming the attested digest over an unattested manifest's bytes
        ("manifest-header-lies", lying_header, VERIFY, 2, ("its bytes are",), (), ("verified:",)),
        # the digest asked for, and other bytes served for it
        ("manifest-bytes-not-the-digest", swapped_bytes,
         ("verify-attestation", "--registry-image", f"REG/{REPOSITORY}@DIGEST", "--trusted-key", "k.pub"), 2,
         ("not the digest asked for",), (), ("verified:",)),
        # a list naming one image 5000 times: verified once
        ("list-one-image-many-times", registry(listing(one_image_many_times)), VERIFY, 0, (),
         ("(1 image manifest)",), ()),
        ("list-manifests-a-string", registry(listing(lambda d, c: "x")), VERIFY, 2, ("not a manifest list",), (), ()),
        ("list-entries-numbers", registry(listing(lambda d, c: [1, 2])), VERIFY, 2, ("manifests.0",), (), ()),
        ("list-entry-digest-a-path", registry(listing(lambda d, c: [{"mediaType": "x", "size": 1,
                                                                     "digest": "../../etc/passwd"}])),
         VERIFY, 2, ("not sha256",), (), ()),
        ("list-entry-size-huge", registry(listing(lambda d, c: [{"mediaType": "x", "digest": d, "size": 1e300}])),
         VERIFY, 2, ("size",), (), ()),
        # signed statements of the wrong shape: refused after the signature verified, never a traceback
        ("statement-byproducts-a-string", registry(statement_with(**{"predicate.runDetails.byproducts": "xx"})),
         VERIFY, 2, ("byproducts is not a list",), (), ()),
        ("statement-dependencies-numbers",
         registry(statement_with(**{"predicate.buildDefinition.resolvedDependencies": [1, 2]})),
         VERIFY, 2, ("resolvedDependencies.0",), (), ()),
        ("statement-subject-a-dict", registry(signed(lambda d: json.dumps(statement(d, subject={"x": 1})).encode())),
         VERIFY, 2, ("subject is not a list",), (), ()),
        ("statement-predicate-a-list", registry(statement_with(predicate=[1])), VERIFY, 2, ("predicate",), (), ()),
        ("statement-not-json", registry(signed(lambda d: b"\xff\xfe not json")), VERIFY, 2, ("not JSON",), (), ()),
        # text a signer or a registry chose, printed: escaped
        ("statement-builder-escapes", registry(statement_with(**{"predicate.runDetails.builder":
                                                                {"id": "ci\x1b]0;pwned\x07\x1b[2J\r\nverified: x"}})),
         VERIFY, 0, (), ("builder:   ci\\x1b]0;pwned\\x07",), ("\x1b", "\r")),
        ("signature-keyid-escapes", registry(signed_by_another("key\x1b[31m\u202egnp.exe")), VERIFY, 2,
         ("no signature verifies",), (), ()),
        ("error-body-escapes", registry(raw={manifest_path: lambda h: fakes.send(h, 400, ERROR_BODY)}), VERIFY, 1,
         ("HTTP 400",), (), ()),
        ("error-body-codes-only", registry(raw={manifest_path: lambda h: fakes.send(
            h, 403, b'{"errors": [{"code": "DENIED", "message": "\\u001b[2J go away"}]}')}), VERIFY, 1,
         ("(DENIED)",), (), ()),
        # answers that never end, or never arrive
        ("manifest-endless", registry(raw={manifest_path: fakes.endless}), VERIFY, 1, ("over the",), (), ()),
        ("manifest-trickled", registry(raw={manifest_path: fakes.trickle}), VERIFY, 1, ("no whole answer",), (), ()),
        ("token-endless", registry(tokens=own_tokens(raw=fakes.endless)), VERIFY, 1, ("over the",), (), ()),
        ("token-a-number", registry(tokens=own_tokens(body=b'{"token": 5}')), VERIFY, 1, ("not a token",), (), ()),
        ("token-with-newline", registry(tokens=own_tokens(body=b'{"token": "a\\r\\nX-Injected: 1"}')), VERIFY, 1,
         ("not a token",), (), ()),
        ("token-not-json", registry(tokens=own_tokens(body=b"<html>\x1b[2J</html>")), VERIFY, 1, ("not a token",),
         (), ()),
    ]:
        # the trickled answer is cut at the deadline NGCBUILD_HTTP_DEADLINE_S sets (the manifest's own is a
        # minute): the same mechanism, in a tenth of the time
        add(HostileCase(name, klass, argv, dev, serve=serve, exit_status=status, mentions=mentions, shows=shows,
                        hides=hides, absent=("\x1b", "\r", SECRET, "stack trace"),
                        extra_env={"NGCBUILD_HTTP_DEADLINE_S": "5"} if name == "manifest-trickled" else {},
                        time_bound=150 if name == "manifest-trickled" else 45))


# --- the audit's index ------------------------------------------------------------------------------

AUDIT_SBOM = json.dumps({"bomFormat": "CycloneDX", "components": [
    {"name": "tqdm", "version": "4.70.1", "purl": "pkg:pypi/tqdm@4.70.1"},
    {"name": "torch", "version": "2.13.0+cpu", "purl": "pkg:pypi/torch@2.13.0%2Bcpu"}]})


def audited(project, outside):
    """dev with an SBOM of tqdm and a local torch build, recorded for the record's image."""
    import hashlib

    dev(project, outside)
    data = json.loads(GOOD_RECORD)
    data["sbom"] = {"sha256": hashlib.sha256(AUDIT_SBOM.encode()).hexdigest(), "image_id": data["image_id"]}
    write("build/dev/sbom.cdx.json", AUDIT_SBOM)(project, outside)
    write("build/dev/record.json", json.dumps(data))(project, outside)


def index(answers: dict, extra: dict | None = None):
    """The fake index INDEX (PyPI's JSON API under /pypi, a simple index under /simple); `extra`: a
    second server EXTRA (another host, 127.0.0.2) with its own answers."""
    def serve(project, outside):
        servers, places, answered = [], {}, dict(answers)
        if extra is not None:
            other = FakeIndex(outside / "extra.log", extra, address="127.0.0.2")
            servers.append(other)
            places["EXTRA"] = other.address
            answered = {path: (a[0], a[1].replace("EXTRA", other.address)) if a[0] == "redirect" else a
                        for path, a in answered.items()}
        made = FakeIndex(outside / "index.log", answered)
        servers.append(made)
        places["INDEX"] = made.address
        return places, servers
    return serve


TQDM_LATEST = {"/pypi/tqdm/json": (200, project_json("4.70.1")),
               "/pypi/torch/2.13.0/json": (200, project_json("2.13.0"))}
ADVISORY = {"id": "PYSEC-2099-1\x1b[2J", "aliases": ["CVE-2099-1\r"], "fixed_in": ["9.9"],
            "summary": "bad \x1b]0;owned\x07 thing"}


def index_asked(project, outside) -> str | None:
    """The audit asked the fake index (the mirror), not PyPI."""
    log = outside / "index.log"
    return None if log.exists() and log.read_text().strip() else "the mirror was never asked"


def audit_index_cases(add) -> None:
    klass = "audit index"
    mirror = ("audit", "--release", "dev", "--pypi-mirror", "http://INDEX/pypi")
    for name, argv, serve, env, status, mentions, shows, hides, after in [
        ("mirror-option-used", mirror, index(TQDM_LATEST), {}, 0, (), ("| tqdm | 4.70.1 | checked |",), (),
         index_asked),
        ("mirror-env-used", ("audit", "--release", "dev"), index(TQDM_LATEST),
         {"NGCBUILD_PYPI_MIRROR": "http://INDEX/pypi/"}, 0, (), ("| tqdm | 4.70.1 | checked |",), (), index_asked),
        ("mirror-local-build-by-public-version", mirror, index(TQDM_LATEST), {}, 0, (),
         ("public version 2.13.0 of a local build",), (), None),
        ("mirror-credentials-never-shown", ("audit", "--release", "dev", "--pypi-mirror",
                                            f"http://{USER}:{SECRET}@INDEX/pypi"),
         index({"/pypi/tqdm/json": (400, b"{}"), "/pypi/torch/json": (400, b"{}")}), {}, 1, ("not checked",), (),
         (), None),
        ("mirror-redirect-keeps-credentials-home", ("audit", "--release", "dev", "--pypi-mirror",
                                                    f"http://{USER}:{SECRET}@INDEX/pypi"),
         index({"/pypi/tqdm/json": ("redirect", "http://EXTRA/pypi/tqdm/json"),
                "/pypi/torch/2.13.0/json": (200, project_json("2.13.0"))},
               extra={"/pypi/tqdm/json": (200, project_json("4.70.1"))}), {}, 0, (), ("| tqdm | 4.70.1 | checked |",),
         (), secret_never_sent("extra")),
        ("index-endless", mirror, index({"/pypi/tqdm/json": fakes.endless, "/pypi/torch/json": fakes.endless}),
         {}, 1, ("not checked",), ("over the",), (), None),
        ("index-wrong-shape", mirror, index({"/pypi/tqdm/json": (200, b"[1, 2]"),
                                             "/pypi/torch/json": (200, b'{"info": {"version": 5}}')}),
         {}, 1, ("not checked",), ("could not be read",), (), None),
        ("index-advisory-escapes", mirror,
         index({**TQDM_LATEST, "/pypi/tqdm/json": (200, project_json("4.70.1", [ADVISORY]))}), {}, 1,
         ("failed",), ("PYSEC-2099-1\\x1b[2J",), ("\x1b", "\r"), None),
        ("index-advisory-repeated", mirror,
         index({**TQDM_LATEST, "/pypi/tqdm/json": (200, project_json("4.70.1", [ADVISORY] * 9000))}), {}, 1,
         ("1 problem",), ("1 advisories",), (), None),
        ("index-advisory-chain", mirror,
         index({**TQDM_LATEST, "/pypi/tqdm/json": (200, project_json("4.70.1", [
             {"id": f"A-{i}", "aliases": [f"A-{i + 1}"]} for i in range(9000)]))}), {}, 1,
         ("1 problem",), ("1 advisories",), (), None),
    ]:
        add(HostileCase(name, klass, argv, audited, serve=serve, extra_env=env, exit_status=status, mentions=mentions,
                        shows=shows, hides=hides, absent=(SECRET, "\x1b"), time_bound=60,
                        **({"after": after} if after else {})))
    # the mirror setting, refused before anything is asked or written
    for name, value in [
        ("mirror-plain-http-remote", "http://mirror.example/pypi"),
        ("mirror-file-scheme", "file:///etc/passwd"),
        ("mirror-option-like", "--release"),
        ("mirror-control-characters", "https://mirror.example/\x1b[2Jpypi"),
        ("mirror-with-query", f"https://mirror.example/pypi?token={SECRET}"),
        ("mirror-credentials-and-garbage", f"https://{USER}:{SECRET}@mirror example/pypi"),
        ("mirror-huge", "https://mirror.example/" + "p" * 5000),
        ("mirror-no-host", "https:///pypi"),
    ]:
        add(HostileCase(name, klass, ("audit", "--release", "dev", f"--pypi-mirror={value}"), audited,
                        mentions=("--pypi-mirror",), absent=(SECRET, "\x1b"),
                        after=lambda p, o: None if not (p.root / "build/dev/audit.json").exists() else "audit.json written"))
    add(HostileCase("mirror-env-file-scheme", klass, ("audit", "--release", "dev"), audited,
                    extra_env={"NGCBUILD_PYPI_MIRROR": f"file://u:{SECRET}@x/pypi"}, mentions=("NGCBUILD_PYPI_MIRROR",),
                    absent=(SECRET,)))


# --- outputs ----------------------------------------------------------------------------------------

def linked_to_manifest(rel: str):
    def step(project, outside):
        path = project.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        os.symlink(os.path.relpath(project.root / "manifests" / "dev.yaml", path.parent), path)
    return step


def manifest_intact(project, outside) -> str | None:
    text = (project.root / "manifests" / "dev.yaml").read_text()
    return None if text.startswith(("extends:", "#", "summary")) and "{" not in text[:1] else "the manifest was overwritten"


def no_key_outside_keys(project, outside) -> str | None:
    stray = [str(p.relative_to(project.root)) for p in project.root.rglob("*")
             if p.is_file() and "PRIVATE KEY" in p.read_text(errors="replace")
             and p.parent != project.root / "keys"]
    named_pub = [str(p.relative_to(project.root)) for p in project.root.rglob("*.pub")
                 if "PRIVATE KEY" in p.read_text(errors="replace")]
    if stray:
        return f"a private key was written where git does not ignore it: {stray}"
    if named_pub:
        return f"a private key was written under a public name: {named_pub}"
    return None


def output_cases(add) -> None:
    klass = "outputs and keys"
    add(HostileCase("audit-report-linked-to-the-manifest", klass, ("audit", "--release", "dev"),
                    setup_all(audited, linked_to_manifest("build/dev/audit.json")), serve=index(TQDM_LATEST),
                    extra_env={"NGCBUILD_PYPI_MIRROR": "http://INDEX/pypi"}, mentions=("symbolic link",),
                    after=manifest_intact, time_bound=60))
    add(HostileCase("keygen-from-a-subfolder", klass, ("keygen",), setup_all(dev, write("docs/.keep", "")),
                    cwd="docs", exit_status=0, after=no_key_outside_keys))
    add(HostileCase("keygen-out-a-public-name", klass, ("keygen", "--out", "keys/x.pub"), dev,
                    mentions=("public key's name",), after=no_key_outside_keys))
    add(HostileCase("keygen-out-not-ignored", klass, ("keygen", "--out", "notes/release.key"), dev,
                    mentions=("ignore rules",), after=no_key_outside_keys))
    add(HostileCase("keygen-out-top-level", klass, ("keygen", "--out", "signing.key"), dev,
                    mentions=("ignore rules",), after=no_key_outside_keys))
    add(HostileCase("keygen-out-pub-pub", klass, ("keygen", "--out", "keys/a.key.pub"), dev,
                    mentions=("public key's name",), after=no_key_outside_keys))
    # keys of a kind cryptography cannot load (an EC curve it does not support): refused, never a traceback
    add(HostileCase("trusted-key-unsupported-curve", klass,
                    ("verify-attestation", "--registry-image", IMAGE, "--trusted-key", "odd.pub"),
                    setup_all(dev, odd_curve_key("odd.pub", public=True)), serve=registry(),
                    mentions=("odd.pub", "public key")))
    add(HostileCase("signing-key-unsupported-curve", klass,
                    ("attest", "--release", "dev", "--registry", "localhost:5000", "--key", "keys/odd.key"),
                    setup_all(dev, odd_curve_key("keys/odd.key", public=False)), mentions=("odd.key", "private key"),
                    after=nothing_built))


def odd_curve_key(rel: str, public: bool):
    """An EC key on secp112r1, which OpenSSL makes and cryptography cannot load."""
    import subprocess

    def step(project, outside):
        path = project.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        private = outside / "odd.pem"
        subprocess.run(["openssl", "ecparam", "-name", "secp112r1", "-genkey", "-noout", "-out", str(private)],
                       check=True, capture_output=True)
        if public:
            subprocess.run(["openssl", "ec", "-in", str(private), "-pubout", "-out", str(path)], check=True,
                           capture_output=True)
        else:
            subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", str(private), "-out", str(path)],
                           check=True, capture_output=True)
            os.chmod(path, 0o600)
    return step
