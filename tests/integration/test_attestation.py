"""Signed provenance against real registries (Debian's docker-registry, Distribution 2.8): `dev`
pushed to a private staging registry, attested (provenance, SBOM), verified, promoted to a private
release registry with its attestations; and tampered variants of the attestation, each refused by
promote (exit 2, nothing in the target registry) and by verify-attestation.

The tampering is done with the registry protocol itself (an attacker who can push to staging) and,
for the truncated document, to the staging registry's storage (a damaged disk or a cut transfer).
"""

import base64
import json
import shutil
import urllib.request
import uuid

import pytest

from ngcbuild.registry.client import Registry
from ngcbuild.supply import attachments
from ngcbuild.supply.signing import load_signing_key, sign

from ..conftest import REPO
from .conftest import run_invoke

pytestmark = pytest.mark.engine
REPOSITORY = "nvidia/pytorch"


@pytest.fixture(scope="module")
def registries(engine):
    """Three private registries: staging, release (promoted to), untouched (what refused promotions
    aim at: it must stay empty)."""
    from .private import private_registries

    with private_registries("staging", "release", "untouched", engine=engine) as made:
        yield made


@pytest.fixture(scope="module")
def signed(dev_smoke, registries):
    """dev with its SBOM, pushed to staging and attested with a key made by `invoke keygen`."""
    keys = REPO / "build" / f"attest-test-{uuid.uuid4().hex[:8]}"
    staging = registries["staging"].address
    # this test attests the image with its SBOM alone: an audit report another test left of an earlier
    # SBOM would (rightly) be refused by attest
    (REPO / "build" / "dev" / "audit.json").unlink(missing_ok=True)
    try:
        for args in (("sbom", "--release", "dev"), ("push", "--release", "dev", "--registry", staging),
                     ("keygen", "--out", str(keys / "signing.key")),
                     ("attest", "--release", "dev", "--registry", staging, "--key", str(keys / "signing.key"))):
            result = run_invoke(*args)
            assert result.returncode == 0, f"{args[0]}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
        digest = record["pushed"][f"{staging}/{REPOSITORY}:dev-py3"]["digest"]
        yield {"keys": keys, "private": keys / "signing.key", "public": keys / "signing.key.pub",
               "digest": digest, "staging": staging, "record": record, "attest_output": result.stdout}
    finally:
        shutil.rmtree(keys, ignore_errors=True)


def catalog(address: str) -> list:
    return json.loads(urllib.request.urlopen(f"http://{address}/v2/_catalog", timeout=10).read())["repositories"]


def test_dev_is_attested_verified_and_promoted_with_its_attestations(signed, registries):
    staging, release = signed["staging"], registries["release"].address
    digest = signed["digest"]
    attested = signed["record"]["attested"][f"{staging}/{REPOSITORY}@{digest}"]
    assert set(attested["attachments"]) == {"provenance", "sbom"}
    assert attested["referrers_tag"] == digest.replace(":", "-")

    # the layout a consumer's tool finds: the referrers tag schema's index, one artifact per document
    index = json.loads(urllib.request.urlopen(urllib.request.Request(
        f"http://{staging}/v2/{REPOSITORY}/manifests/{digest.replace(':', '-')}",
        headers={"Accept": "application/vnd.oci.image.index.v1+json"}), timeout=10).read())
    assert {(m["artifactType"], m["annotations"]["io.ngcbuild.attachment"]) for m in index["manifests"]} == {
        ("application/vnd.dsse.envelope.v1+json", "provenance"), ("application/vnd.cyclonedx+json", "sbom")}

    checked = run_invoke("verify-attestation", "--registry-image", f"{staging}/{REPOSITORY}:dev-py3",
                         "--trusted-key", str(signed["public"]))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sbom_sha = signed["record"]["sbom"]["sha256"]
    for line in (f"subject:   {staging}/{REPOSITORY}@{digest} (matches)", "smoke:     passed",
                 "  manifests/dev.yaml sha256:", "  constraints/dev.txt sha256:", f"sbom sha256:{sbom_sha[:12]}",
                 f"signed by: {attested['key_id']}", "base:      docker://debian:bookworm-slim sha256:"):
        assert line in checked.stdout, checked.stdout

    promoted = run_invoke("promote", "--release", "dev", "--from", staging, "--to", release,
                          "--trusted-key", str(signed["public"]))
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert "attestations copied" in promoted.stdout
    on_target = run_invoke("verify-attestation", "--registry-image", f"{release}/{REPOSITORY}@{digest}",
                           "--trusted-key", str(signed["public"]))
    assert on_target.returncode == 0, on_target.stdout + on_target.stderr
    record = json.loads((REPO / "build" / "dev" / "record.json").read_text())
    assert record["promoted"][f"{release}/{REPOSITORY}:dev-py3"]["attestations"] == {
        digest: {"key_id": attested["key_id"], "attached": ["provenance", "sbom"]}}


def _envelope(registry: Registry, digest: str) -> dict:
    return json.loads(attachments.read(registry, REPOSITORY, digest)["provenance"].data)


def _statement(envelope: dict) -> dict:
    return json.loads(base64.b64decode(envelope["payload"]))


def _replace(registry: Registry, digest: str, kind: str, data: bytes) -> None:
    subject = registry.manifest(REPOSITORY, digest)
    attachments.push(registry, REPOSITORY, subject, [(kind, data, {})])


def payload_altered(signed, registry, registries):
    envelope = _envelope(registry, signed["digest"])
    statement = _statement(envelope)
    statement["predicate"]["runDetails"]["byproducts"][0]["annotations"]["verdict"] = "passed (edited)"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    _replace(registry, signed["digest"], "provenance", json.dumps(envelope).encode())


def untrusted_key(signed, registry, registries):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    payload = base64.b64decode(_envelope(registry, signed["digest"])["payload"])
    _replace(registry, signed["digest"], "provenance", sign(payload, Ed25519PrivateKey.generate()))


def another_subject(signed, registry, registries):
    """A statement the trusted key really signed, but about another image, attached to this one."""
    statement = _statement(_envelope(registry, signed["digest"]))
    statement["subject"][0]["digest"]["sha256"] = "0" * 64
    private = load_signing_key(signed["private"], REPO)
    _replace(registry, signed["digest"], "provenance", sign(json.dumps(statement).encode(), private))


def truncated(signed, registry, registries):
    layer = json.loads(attachments.read(registry, REPOSITORY, signed["digest"])["provenance"].manifest)["layers"][0]
    hex_digest = layer["digest"].removeprefix("sha256:")
    data = (registries["staging"].root / "data" / "docker" / "registry" / "v2" / "blobs" / "sha256" / hex_digest[:2]
            / hex_digest / "data")
    data.write_bytes(data.read_bytes()[: layer["size"] // 2])


def no_attestation(signed, registry, registries):
    body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                       "manifests": []}).encode()
    registry.put_manifest(REPOSITORY, signed["digest"].replace(":", "-"), body, "application/vnd.oci.image.index.v1+json")


def sbom_swapped(signed, registry, registries):
    _replace(registry, signed["digest"], "sbom", b'{"bomFormat": "CycloneDX", "components": []}\n')


TAMPERED = [
    (payload_altered, "no signature verifies with a trusted key"),
    (untrusted_key, "no signature verifies with a trusted key"),
    (another_subject, "the signed statement is about " + "0" * 64),
    (truncated, "the provenance document is damaged"),
    (no_attestation, "has no attestation"),
    (sbom_swapped, "the attached sbom"),
]


@pytest.mark.parametrize(("tamper", "message"), TAMPERED, ids=[t.__name__ for t, _ in TAMPERED])
def test_a_tampered_attestation_is_refused_and_nothing_is_promoted(signed, registries, tamper, message):
    staging, untouched = signed["staging"], registries["untouched"].address
    # each variant starts from a good attestation (a new envelope: its statement has a new time)
    again = run_invoke("attest", "--release", "dev", "--registry", staging, "--key", str(signed["private"]))
    assert again.returncode == 0, again.stdout + again.stderr
    tamper(signed, Registry(staging), registries)

    refused = run_invoke("promote", "--release", "dev", "--from", staging, "--to", untouched,
                         "--trusted-key", str(signed["public"]))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert message in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "Traceback" not in refused.stderr
    assert catalog(untouched) == [], "a refused promotion left something in the target registry"

    checked = run_invoke("verify-attestation", "--registry-image", f"{staging}/{REPOSITORY}@{signed['digest']}",
                         "--trusted-key", str(signed["public"]))
    assert checked.returncode == 2 and message in checked.stderr, checked.stdout + checked.stderr


def _target_state(address: str, digest: str) -> str:
    """"old": the tag is not there; "new": the tag serves `digest` and its attestation is there too;
    anything else is what an interrupted promote must never leave."""
    registry = Registry(address)
    served = registry.manifest(REPOSITORY, "dev-py3")
    if served is None:
        return "old"
    if served.digest != digest:
        return f"the tag serves {served.digest}"
    try:
        found = attachments.read(registry, REPOSITORY, digest)
    except Exception as exc:  # noqa: BLE001 - any failure to read it means: not there whole
        return f"the image without its attestation ({type(exc).__name__}: {str(exc)[:120]})"
    return "new" if "provenance" in found else "the image without its provenance"


def _code_env() -> dict:
    """The environment of a process running the code under test (NGCBUILD_CODE_UNDER_TEST: another
    checkout's src/, for a "before" figure)."""
    import os

    code = os.environ.get("NGCBUILD_CODE_UNDER_TEST")
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = os.pathsep.join([code, env.get("PYTHONPATH", "")])
    return env


def test_an_interrupted_promote_leaves_the_old_state_or_the_whole_new_one(signed, tmp_path, figures):
    """SIGINT to promote while the target holds its request (a proxy in front of the target registry
    keeps it waiting, then drops it): at the first write, at the image's first blob, at the write of the
    referrers index (the attestations' last) and at the write of the tag; then at moments spread over
    whole runs. Afterwards the target
    either has no tag (old) or the tag with its attestation (new), never the image without its
    attestation; an uninterrupted rerun then finishes it."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    from .private import FaultProxy, PrivateRegistry

    # a good attestation to start from (the tampering tests leave theirs in staging)
    again = run_invoke("attest", "--release", "dev", "--registry", signed["staging"], "--key", str(signed["private"]))
    assert again.returncode == 0, again.stdout + again.stderr
    seen = []

    def promote(address: str):
        return subprocess.Popen([sys.executable, "-m", "ngcbuild", "promote", "--release", "dev", "--from",
                                 signed["staging"], "--to", address, "--trusted-key", str(signed["public"])],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, env=_code_env())

    holds = {  # where the target holds the request: the first write of all; the first blob after the
        # referrers index (the attestations' last write: what follows is the image's); the tag
        "the first write": lambda method, path: method in ("PUT", "POST", "PATCH"),
        "the image's first blob": lambda method, path: method in ("POST", "PATCH") and "/blobs/uploads/" in path,
        "the referrers index": lambda method, path: method == "PUT" and "/manifests/sha256-" in path,
        "the tag": lambda method, path: method == "PUT" and path.endswith("/manifests/dev-py3"),
    }
    for where, matches in holds.items():
        target = PrivateRegistry()
        target.start()
        reached, release = threading.Event(), threading.Event()
        armed = {"on": where != "the image's first blob"}

        def hold(method, path, matches=matches, reached=reached, release=release, armed=armed, where=where):
            if method == "PUT" and "/manifests/sha256-" in path and where == "the image's first blob":
                armed["on"] = True  # the referrers index is written: the image's blobs come next
            if armed["on"] and matches(method, path) and not reached.is_set():
                reached.set()
                release.wait(60)
                return False  # dropped, as a connection cut by the interrupt
            return True

        proxy = FaultProxy(target.address, on_request=hold)
        try:
            process = promote(proxy.address)
            held = reached.wait(180)
            process.send_signal(signal.SIGINT)
            release.set()
            out, err = process.communicate(timeout=300)
            state = _target_state(proxy.address, signed["digest"])
        finally:
            release.set()
            proxy.close()
            target.close()
        seen.append((where if held else f"{where} (never reached)", process.returncode, state, err.strip()[-200:]))

    target = PrivateRegistry()
    target.start()
    try:
        for moment in (1.0, 2.0, 3.0, 5.0):
            process = promote(target.address)
            time.sleep(moment)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=600)
            seen.append((f"{moment}s", process.returncode, _target_state(target.address, signed["digest"]),
                         err.strip()[-200:]))
        finished = subprocess.run(promote(target.address).args, cwd=REPO, capture_output=True, text=True, timeout=900,
                                  env=_code_env())
        final = _target_state(target.address, signed["digest"])
    finally:
        target.close()
    # 130: interrupted; 0: it had finished; -2: the signal came while the interpreter was shutting down
    bad = [s for s in seen if s[2] not in ("old", "new") or s[1] not in (0, 130, -2) or "Traceback" in s[3]
           or "never reached" in s[0]]
    figures(suite="hostile", case="SIGINT to promote at 4 held writes and 4 moments", input="promote",
            klass="interrupts in threaded work", clean=not bad and final == "new", traceback=False, hang=False,
            secret=False, leftovers=len(bad), exit_status=None,
            message=", ".join(f"{m}: exit {code}, {state}" for m, code, state, _ in seen)[:300])
    assert not bad, seen
    assert [state for _, _, state, _ in seen[:4]] == ["old"] * 4, seen
    assert finished.returncode == 0 and final == "new", (finished.stdout + finished.stderr)[-2000:]
