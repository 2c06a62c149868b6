"""Which key signs each apt repository whose key the manifest installs (base.apt_keys: NVIDIA's CUDA
repository, re-keyed in April 2022): the key fetched from the manifest's address must have the manifest's
fingerprint, and the repository's InRelease must be signed by it (or a subkey of it), its signature
checked (openpgp.py). A repository still signed by a key the manifest replaces, or by another, fails the
row; one this machine cannot reach is "not verified" with the reason (the build checks the key's
fingerprint itself)."""

from __future__ import annotations

from ngcbuild.core.http import HttpFailure
from ngcbuild.core.references import shown_url
from ngcbuild.verify import openpgp
from ngcbuild.verify.report import FAILED, NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import HttpStatus, Web

KIND = "apt-key"
KEY_LIMIT = 1 << 20  # an armored public key is a few kB
IN_RELEASE_LIMIT = openpgp.MAX_TEXT


def apt_key_rows(release, web: Web) -> list[Row]:
    return [key_row(key, web) for key in release.base.apt_keys]


def key_row(key, web: Web) -> Row:
    """The row of one manifest key: which key signs its repository's InRelease, and whether it is this one."""
    repository = key.repository.rstrip("/")

    def row(status: str, reason: str) -> Row:
        return Row(KIND, repository, key.fingerprint, "", status, reason)

    build_checks = "the build refuses any other key file by its fingerprint"
    why = web.unreachable(repository, apt=True) or web.unreachable(key.url)
    if why:
        return row(NOT_VERIFIED, f"not verified: {why}; {build_checks}")
    try:
        keys = openpgp.read_keys(web.get(key.url, limit=KEY_LIMIT))
        signed = openpgp.read_clearsigned(web.get(f"{repository}/InRelease", limit=IN_RELEASE_LIMIT, apt=True))
    except (HttpStatus, HttpFailure) as exc:
        return row(NOT_VERIFIED, f"not verified: {exc}; {build_checks}")
    except openpgp.OpenPgpError as exc:
        return row(FAILED, f"{shown_url(key.url)} or {repository}/InRelease is not what it should be: {exc}")
    return row(*signing_verdict(key, keys, signed))


def signing_verdict(key, keys: list[openpgp.PublicKey], signed: openpgp.Clearsigned) -> tuple[str, str]:
    """(status, reason) for a repository's signed InRelease against the manifest's key, whose file held `keys`
    (its primary first, then its subkeys)."""
    if keys[0].fingerprint != key.fingerprint:
        return FAILED, (f"the key at {shown_url(key.url)} is {keys[0].fingerprint}, not the manifest's "
                        f"{key.fingerprint}: the build would refuse it")
    issuer = signed.signature.issuer
    signer = next((k for k in keys if signed.signature.issued_by(k)), None)
    if signer is None:
        rotated = [old for old in key.replaces if issuer == old or old.endswith(issuer.rsplit(" ", 1)[-1])]
        if rotated:
            return FAILED, (f"its InRelease is signed by {issuer}, the key the manifest replaces: the repository "
                            f"is not re-keyed, and apt would refuse it with the manifest's key alone")
        return FAILED, f"its InRelease is signed by {issuer}, not by the manifest's key {key.fingerprint}"
    problem = openpgp.check(signed, signer)
    if problem:
        return FAILED, f"its InRelease names the manifest's key, but {problem}"
    by = "" if signer is keys[0] else f" (its subkey {signer.fingerprint})"
    return VERIFIED, (f"its InRelease is signed by {key.fingerprint}{by}, the key the build installs (fetched from "
                      f"{shown_url(key.url)}, fingerprint checked), and the signature checks")
