"""Each apt source file the base image carries (base.apt_lists), with the key that signs it: a list the build
keeps whose key the manifest installs (base.apt_keys) gets that key's verdict (apt_keys.py: the key file's
fingerprint, the InRelease's signer and signature); a list kept under a key of the base's own keyring is "not
verified" with that key named (verify holds no key file of it to check a signature with); a list the build
removes is reported with the key its InRelease names (the reason it had to go), "not verified" where this
machine cannot read it. A base whose lists are not known is one "not verified" row with the manifest's reason."""

from __future__ import annotations

from ngcbuild.core.http import HttpFailure
from ngcbuild.verify import openpgp
from ngcbuild.verify.apt_keys import IN_RELEASE_LIMIT, key_row
from ngcbuild.verify.report import NOT_VERIFIED, VERIFIED, Row
from ngcbuild.verify.web import HttpStatus, Web

KIND = "apt-list"


def apt_list_rows(release, web: Web) -> list[Row]:
    lists = release.base.apt_lists
    if lists is None:
        return []  # nothing declared: manifest/model.py's BaseImage keeps it optional for bases we make
    if lists.lists is None:
        return [Row(KIND, "the base's apt lists", "", "", NOT_VERIFIED,
                    f"not verified: verify does not know them: the manifest says not known ({lists.not_known})")]
    keys = {key.repository.rstrip("/"): key for key in release.base.apt_keys}
    return [_row(item, keys, web) for item in lists.lists]


def _row(item, keys: dict, web: Web) -> Row:
    repository = item.repository.rstrip("/")
    if item.use == "keep" and repository in keys:
        key = keys[repository]
        verdict = key_row(key, web)
        return Row(KIND, item.path, key.fingerprint, "", verdict.status,
                   f"kept, re-keyed by the build ({repository}): {verdict.reason}")
    if item.use == "keep":
        return Row(KIND, item.path, "", "", NOT_VERIFIED,
                   f"not verified: kept, signed by {item.signed_by} ({repository}); verify does not hold a key file of "
                   "them")
    return _removed_row(item, repository, keys, web)


def _removed_row(item, repository: str, keys: dict, web: Web) -> Row:
    def row(status: str, reason: str, pin: str = "") -> Row:
        return Row(KIND, item.path, pin, "", status, reason)

    removed = f"removed by the build before any apt step ({repository})"
    why = web.unreachable(repository, apt=True)
    if why:
        return row(NOT_VERIFIED, f"{removed}; its signing key not verified: {why}")
    try:
        signed = openpgp.read_clearsigned(web.get(f"{repository}/InRelease", limit=IN_RELEASE_LIMIT, apt=True))
    except (HttpStatus, HttpFailure, openpgp.OpenPgpError) as exc:
        return row(NOT_VERIFIED, f"{removed}; its signing key not verified: {exc}")
    issuer = signed.signature.issuer
    rotated = [old for key in keys.values() for old in key.replaces
               if issuer == old or old.endswith(issuer.rsplit(" ", 1)[-1])]
    said = ", a key the build removes (rotated out)" if rotated else ""
    return row(VERIFIED, f"{removed}; its InRelease names {issuer}{said}", pin=issuer)
