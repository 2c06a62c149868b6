"""verify says which key signs an apt repository whose key the manifest installs (base.apt_keys: NVIDIA's
CUDA repository, re-keyed from 7fa2af80 to 3bf863cc in April 2022), from a recorded repository served over
HTTP here (tests/data/apt-key: NVIDIA's is not reachable where the tests run): the key file's fingerprint, the
InRelease's signer and its RSA signature, each checked; malformed bytes are one reason, never a traceback."""

import dataclasses
import functools
import http.server
import threading
from pathlib import Path

import pytest

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.model import AptKey
from ngcbuild.verify import openpgp, report
from ngcbuild.verify.apt_keys import key_row, signing_verdict
from ngcbuild.verify.web import Web

from ..conftest import REPO

DATA = Path(__file__).resolve().parent.parent / "data" / "apt-key"
NEW = "C1195ABBDC89F6CE469EC1DAEDEE7B7AB9E283A4"  # gpg --with-colons --list-keys, when the files were made
OLD = "12CBF43E88440EFE3F2DFFD528A74563DB41F2D6"


def manifest_key(repository="https://repository.invalid/cuda/x86_64", fingerprint=NEW, replaces=(OLD,)) -> AptKey:
    return AptKey(repository=repository, url=f"{repository}/key.asc", fingerprint=fingerprint,
                  replaces=list(replaces), evidence="the recorded repository of tests/data/apt-key")


def signed(name="InRelease", edit=None) -> openpgp.Clearsigned:
    data = (DATA / name).read_bytes()
    return openpgp.read_clearsigned(edit(data) if edit else data)


def keys(name="new-key.asc"):
    return openpgp.read_keys((DATA / name).read_bytes())


def test_the_key_files_fingerprints_are_gpgs():
    assert [k.fingerprint for k in keys()] == [NEW] and [k.fingerprint for k in keys("old-key.asc")] == [OLD]
    assert keys()[0].key_id == NEW[-16:] and keys()[0].rsa[1] == 65537


def test_the_repository_signed_by_the_manifests_key_is_verified():
    status, reason = signing_verdict(manifest_key(), keys(), signed())
    assert status == report.VERIFIED, reason
    assert reason.startswith(f"its InRelease is signed by {NEW}, the key the build installs")
    assert signed().signature.hash_name == "sha512" and signed().signature.issuer == NEW


def test_a_repository_still_signed_by_the_rotated_out_key_fails_naming_it():
    status, reason = signing_verdict(manifest_key(), keys(), signed("InRelease.old-key"))
    assert status == report.FAILED
    assert reason.startswith(f"its InRelease is signed by {OLD}, the key the manifest replaces")
    # the old key does verify its own signature: the refusal is the key's, not a broken file
    assert openpgp.check(signed("InRelease.old-key"), keys("old-key.asc")[0]) is None


def test_a_repository_signed_by_some_other_key_fails():
    status, reason = signing_verdict(manifest_key(replaces=()), keys(), signed("InRelease.old-key"))
    assert (status, reason) == (report.FAILED, f"its InRelease is signed by {OLD}, not by the manifest's key {NEW}")


def test_a_key_file_that_is_not_the_manifests_key_fails():
    status, reason = signing_verdict(manifest_key(fingerprint=OLD), keys(), signed())
    assert status == report.FAILED and f"is {NEW}, not the manifest's {OLD}: the build would refuse it" in reason


@pytest.mark.parametrize("edit,why", [
    (lambda d: d.replace(b"24987 Packages", b"24988 Packages", 1), "the signed text does not match the signature"),
    (lambda d: d.replace(b"- - a line", b"- a line", 1), "the signed text does not match the signature"),
])
def test_a_changed_inrelease_fails_its_signature(edit, why):
    status, reason = signing_verdict(manifest_key(), keys(), signed(edit=edit))
    assert status == report.FAILED and why in reason, reason


def test_a_forged_signature_value_fails_the_rsa_check():
    original = signed()
    forged = dataclasses.replace(original, signature=dataclasses.replace(original.signature,
                                                                         value=original.signature.value ^ 1 << 40))
    assert openpgp.check(forged, keys()[0]) == "the RSA signature does not verify with the key"


@pytest.mark.parametrize("data,why", [
    (b"Origin: NVIDIA\n", "not a clearsigned message"),
    (b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n", "no blank line after the armor headers"),
    (b"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\ntext\n", "no BEGIN PGP SIGNATURE line"),
    (b"-----BEGIN PGP SIGNED MESSAGE-----\n\nt\n-----BEGIN PGP SIGNATURE-----\n\n!!!\n-----END PGP SIGNATURE-----\n",
     "not base64"),
    (b"-----BEGIN PGP SIGNED MESSAGE-----\n\nt\n-----BEGIN PGP SIGNATURE-----\n\nwv8AAAAA\n-----END PGP SIGNATURE-----\n",
     "truncated"),  # a new-format signature packet declaring 4 GB
    (b"-----BEGIN PGP SIGNED MESSAGE-----\n\nt\n-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n",
     "is not a packet header"),
])
def test_malformed_input_is_one_reason(data, why):
    with pytest.raises(openpgp.OpenPgpError, match=why):
        openpgp.read_clearsigned(data)


def test_an_oversized_or_keyless_file_is_refused():
    with pytest.raises(openpgp.OpenPgpError, match="over"):
        openpgp.read_clearsigned(b"x" * (openpgp.MAX_TEXT + 1))
    with pytest.raises(openpgp.OpenPgpError, match="no armored PGP PUBLIC KEY BLOCK"):
        openpgp.read_keys(b"not a key")


# --- the row, from the recorded repository served over HTTP (the way verify reads NVIDIA's) ---------------

@pytest.fixture(scope="module")
def served():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(DATA.parent))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_verify_reads_the_repository_and_its_key_and_says_who_signs(served):
    key = AptKey(repository=f"{served}/apt-key", url=f"{served}/apt-key/new-key.asc", fingerprint=NEW,
                 replaces=[OLD], evidence="recorded")
    row = key_row(key, Web(environ={}))
    assert (row.kind, row.name, row.pin, row.status) == ("apt-key", f"{served}/apt-key", NEW, report.VERIFIED), row
    assert row.reason.startswith(f"its InRelease is signed by {NEW}, the key the build installs (fetched from ")


def test_a_repository_without_inrelease_or_an_unreachable_one_is_not_verified(served):
    key = AptKey(repository=f"{served}/nothing-here", url=f"{served}/apt-key/new-key.asc", fingerprint=NEW,
                 evidence="recorded")
    row = key_row(key, Web(environ={}))
    assert row.status == report.NOT_VERIFIED and "HTTP 404" in row.reason, row
    gone = AptKey(repository="http://127.0.0.1:9/repo", url="http://127.0.0.1:9/repo/key.asc", fingerprint=NEW,
                  evidence="recorded")
    row = key_row(gone, Web(environ={}, deadline_s=5))
    assert row.status == report.NOT_VERIFIED and "unreachable from here" in row.reason, row
    assert row.reason.endswith("the build refuses any other key file by its fingerprint")


def test_20_12_and_20_02_install_nvidias_new_key_in_place_of_the_rotated_one():
    for release in ("20.12", "20.02"):
        (key,) = load_release(Project.at(REPO), release).release.base.apt_keys
        assert key.fingerprint == "EB693B3035CD5710E231E123A4B469963BF863CC"  # 3bf863cc
        assert key.replaces == ["AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"]  # 7fa2af80
        assert key.url == f"{key.repository}/3bf863cc.pub"
