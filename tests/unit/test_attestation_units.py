"""Pure parts of the attestations, no registry: keys (made, refused), DSSE signatures (verified,
tampered), the provenance statement's shape. The registry side is tests/integration/test_attestation.py."""

import base64
import hashlib
import json
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from ngcbuild.core.errors import ManifestError, OperationError, UserError
from ngcbuild.core.project import Project
from ngcbuild.supply import provenance
from ngcbuild.supply.attest import documents_of
from ngcbuild.supply.signing import (
    PAYLOAD_TYPE,
    AttestationRejected,
    checked_path,
    key_id,
    load_signing_key,
    load_trusted_keys,
    make_key_pair,
    open_envelope,
    pae,
    sign,
    signing_key_path,
    trusted_key_paths,
)
from ngcbuild.workspace.record import Record

from ..conftest import REPO


@pytest.fixture
def keys(tmp_path):
    (tmp_path / ".gitignore").write_text((REPO / ".gitignore").read_text())  # a project's ignore rules
    private, public, made_id = make_key_pair(tmp_path, str(tmp_path / "keys" / "signing.key"))
    return {"private": private, "public": public, "id": made_id, "root": tmp_path}


def test_keygen_writes_a_private_key_only_its_owner_reads_and_the_public_key_beside_it(keys):
    assert stat.S_IMODE(os.stat(keys["private"]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(keys["public"]).st_mode) == 0o644
    assert keys["public"].name == "signing.key.pub"
    private = load_signing_key(keys["private"], keys["root"])
    [trusted] = load_trusted_keys([keys["public"]], keys["root"])
    assert key_id(private.public_key()) == trusted.key_id == keys["id"]
    assert not [p for p in keys["private"].parent.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_keygen_never_overwrites_and_stays_in_the_project(keys, tmp_path):
    before = keys["private"].read_bytes()
    with pytest.raises(UserError, match="never overwrites"):
        make_key_pair(keys["root"], str(keys["private"]))
    assert keys["private"].read_bytes() == before
    (tmp_path / "out").symlink_to("/tmp")
    with pytest.raises(UserError, match="inside the project"):
        make_key_pair(tmp_path, str(tmp_path / "out" / "k.key"))


def test_a_private_key_others_may_read_is_refused(keys):
    os.chmod(keys["private"], 0o640)
    with pytest.raises(ManifestError, match="readable by others.*0640.*chmod 600"):
        load_signing_key(keys["private"], keys["root"])


def test_keys_of_another_kind_or_with_a_passphrase_are_refused(tmp_path):
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "rsa.key"
    path.write_bytes(rsa_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    os.chmod(path, 0o600)
    with pytest.raises(ManifestError, match="expected an Ed25519 private key"):
        load_signing_key(path, tmp_path)
    public = tmp_path / "rsa.pub"
    public.write_bytes(rsa_key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(ManifestError, match="expected an Ed25519 public key"):
        load_trusted_keys([public], tmp_path)
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption

    locked = tmp_path / "locked.key"
    locked.write_bytes(ed25519.Ed25519PrivateKey.generate().private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"pass")))
    os.chmod(locked, 0o600)
    with pytest.raises(ManifestError, match="without a passphrase"):
        load_signing_key(locked, tmp_path)


def test_a_private_key_given_as_trusted_is_refused(keys):
    with pytest.raises(ManifestError, match="holds a private key"):
        load_trusted_keys([keys["private"]], keys["root"])


def test_key_paths_come_from_the_option_then_the_environment_never_an_option_like_value():
    assert str(signing_key_path(None, {"NGCBUILD_SIGNING_KEY_FILE": "k.key"})) == "k.key"
    assert str(signing_key_path("a.key", {"NGCBUILD_SIGNING_KEY_FILE": "k.key"})) == "a.key"
    with pytest.raises(UserError, match="no signing key"):
        signing_key_path(None, {})
    assert [str(p) for p in trusted_key_paths(None, {"NGCBUILD_TRUSTED_KEYS": "a.pub:b.pub"})] == ["a.pub", "b.pub"]
    with pytest.raises(UserError, match="no trusted key"):
        trusted_key_paths(None, {})
    for value in ("--release", "", "a\nb"):
        with pytest.raises(UserError, match="expected the path of a key file"):
            checked_path(value, "--key")


def test_pae_is_dsse_v1():
    assert pae("t", b"hello") == b"DSSEv1 1 t 5 hello"


def envelope_parts(data: bytes) -> dict:
    return json.loads(data)


def test_a_signed_envelope_opens_with_the_trusted_key_and_names_it(keys):
    private = load_signing_key(keys["private"], keys["root"])
    trusted = load_trusted_keys([keys["public"]], keys["root"])
    payload, key = open_envelope(sign(b'{"a": 1}', private), trusted, "here")
    assert payload == b'{"a": 1}' and key.key_id == keys["id"]


def test_tampered_envelopes_are_refused(keys):
    private = load_signing_key(keys["private"], keys["root"])
    trusted = load_trusted_keys([keys["public"]], keys["root"])
    good = envelope_parts(sign(b'{"subject": "a"}', private))
    other = envelope_parts(sign(b'{"subject": "b"}', private))

    changed = {**good, "payload": base64.b64encode(b'{"subject": "c"}').decode()}
    swapped = {**good, "signatures": other["signatures"]}  # a signature, but of another payload
    retyped = {**good, "payloadType": "text/plain"}
    stranger = envelope_parts(sign(b'{"subject": "a"}', ed25519.Ed25519PrivateKey.generate()))
    for envelope, why in ((changed, "no signature verifies"), (swapped, "no signature verifies"),
                          (retyped, "payloadType"), (stranger, "no signature verifies")):
        with pytest.raises(AttestationRejected, match=why):
            open_envelope(json.dumps(envelope).encode(), trusted, "here")
    for broken in (b"", b"{", b"[]", json.dumps({**good, "payload": "%%%"}).encode(),
                   json.dumps(good)[:40].encode()):
        with pytest.raises(AttestationRejected, match="not a DSSE envelope"):
            open_envelope(broken, trusted, "here")
    assert PAYLOAD_TYPE == "application/vnd.in-toto+json"


def test_the_statement_is_in_toto_v1_with_slsa_provenance_v1():
    record = {"platform": "linux/amd64", "base_image": "debian:bookworm-slim", "context_sha256": "c" * 64,
              "image_id": "sha256:" + "1" * 64, "built_at": "2026-01-01T00:00:00Z",
              "smoke": {"image_id": "sha256:" + "1" * 64, "passed": 3, "failed": 0, "errors": 0, "exit_code": 0}}
    files = [{"uri": "file:manifests/dev.yaml", "digest": {"sha256": "d" * 64}}]
    base = {"uri": "docker://debian:bookworm-slim", "name": "base image", "digest": {"sha256": "b" * 64}}
    made = provenance.statement(subject_name="h:5000/nvidia/pytorch", digest="sha256:" + "e" * 64, release="dev",
                                record=Record.from_json(record), files=files, base=base, registry="h:5000", checkout="f" * 40,
                                attached=["provenance", "sbom"],
                                byproducts=[{"name": "sbom.cdx.json", "digest": {"sha256": "a" * 64}}],
                                environ={"NGCBUILD_BUILDER_ID": "https://ci.example/runner"}, now="now")
    assert made["_type"] == "https://in-toto.io/Statement/v1"
    assert made["subject"] == [{"name": "h:5000/nvidia/pytorch", "digest": {"sha256": "e" * 64}}]
    assert made["predicateType"] == "https://slsa.dev/provenance/v1"
    definition, run = made["predicate"]["buildDefinition"], made["predicate"]["runDetails"]
    assert definition["resolvedDependencies"][:2] == [*files, base]
    assert definition["resolvedDependencies"][2]["digest"] == {"gitCommit": "f" * 40}
    assert definition["resolvedDependencies"][2]["annotations"] == {"recorded_by": "attest"}
    assert definition["internalParameters"]["attached"] == ["provenance", "sbom"]
    assert run["builder"]["id"] == "https://ci.example/runner"
    smoke, sbom = run["byproducts"]
    assert smoke["annotations"]["verdict"] == "passed" and sbom["digest"] == {"sha256": "a" * 64}
    failed = provenance.statement(subject_name="x", digest="sha256:" + "e" * 64, release="dev",
                                  record=Record.from_json({**record, "smoke": {**record["smoke"], "failed": 1,
                                                                               "exit_code": 1}}),
                                  files=[], base=base, registry="h", checkout=None, byproducts=[], attached=["provenance"],
                                  environ={}, now="n")
    assert failed["predicate"]["runDetails"]["byproducts"][0]["annotations"]["verdict"] == "failed"


def test_the_builder_is_the_workflow_on_github_actions():
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/r", "GITHUB_SERVER_URL": "https://github.com",
               "GITHUB_WORKFLOW_REF": "o/r/.github/workflows/release.yml@refs/heads/main", "GITHUB_RUN_ID": "7"}
    assert provenance.builder_id(environ) == "https://github.com/o/r/.github/workflows/release.yml@refs/heads/main"
    assert provenance.invocation_id(environ) == "https://github.com/o/r/actions/runs/7/attempts/1"


def test_only_the_sbom_and_audit_report_recorded_for_the_image_are_attached(scratch):
    """A report or SBOM left from an earlier image is never signed as this one's."""
    scratch.copy_release("dev")
    out = scratch.root / "build" / "dev"
    out.mkdir(parents=True)
    sbom = b'{"bomFormat": "CycloneDX", "components": []}\n'
    report = (b'{"verdict": "passed", "audited_at": "2026-01-01T00:00:00Z", "distributions": [], '
              b'"counts": {"checked_by": {}, "python_distributions": 0, "checked": 0}}\n')
    (out / "sbom.cdx.json").write_bytes(sbom)
    (out / "audit.json").write_bytes(report)
    digest = hashlib.sha256(sbom).hexdigest()
    record = {"image_id": "sha256:" + "a" * 64,
              "sbom": {"sha256": digest, "image_id": "sha256:" + "a" * 64},
              "audit": {"sha256": hashlib.sha256(report).hexdigest(), "sbom_sha256": digest}}
    project = Project(scratch.root)
    assert [kind for kind, _, _ in documents_of(project, "dev", Record.from_json(record))] == ["sbom", "audit"]
    stale = {**record, "audit": {**record["audit"], "sbom_sha256": "b" * 64}}  # the audit of another SBOM
    with pytest.raises(UserError, match="not the audit report `invoke audit` recorded"):
        documents_of(project, "dev", Record.from_json(stale))
    (out / "audit.json").write_bytes(report.replace(b"passed", b"failed"))  # changed after the audit recorded it
    with pytest.raises(UserError, match="invoke audit --release dev"):
        documents_of(project, "dev", Record.from_json(record))
    (out / "sbom.cdx.json").write_bytes(sbom + b" ")  # changed after `sbom` recorded it
    with pytest.raises(UserError, match="not the SBOM `invoke sbom` recorded in record.json"):
        documents_of(project, "dev", Record.from_json(record))
    (out / "sbom.cdx.json").write_bytes(sbom)
    other_image = {**record, "sbom": {**record["sbom"], "image_id": "sha256:" + "b" * 64}}
    with pytest.raises(OperationError, match="not the SBOM recorded for its image"):
        documents_of(project, "dev", Record.from_json(other_image))


def test_keygen_writes_the_private_key_only_where_the_ignore_rules_cover_it(tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / ".gitignore").write_text((REPO / ".gitignore").read_text())
    monkeypatch.chdir(root / "docs")
    made, public, _ = make_key_pair(root, None)  # from a subfolder: the project's keys/, not docs/keys/
    assert (made, public) == (root / "keys" / "signing.key", root / "keys" / "signing.key.pub")
    with pytest.raises(UserError, match="ignore rules"):
        make_key_pair(root, "keys/other.key")  # docs/keys/other.key: no rule covers it
    with pytest.raises(UserError, match="a public key's name"):
        make_key_pair(root, "../keys/x.pub")
    with pytest.raises(UserError, match="ignore rules"):
        make_key_pair(root, "../signing.key")  # the top level: no rule covers it
    assert not (root / "docs" / "keys").exists() and not (root / "signing.key").exists()
    assert sorted(p.name for p in (root / "keys").iterdir()) == ["signing.key", "signing.key.pub"]
    (root / ".gitignore").unlink()  # a project without ignore rules gets no private key at all
    with pytest.raises(UserError, match="ignore rules"):
        make_key_pair(root, "../keys/third.key")
