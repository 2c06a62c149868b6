"""Keys and DSSE signatures: the operator's Ed25519 signing key, the trusted public keys, and the
envelope (https://github.com/secure-systems-lab/dsse) that carries a signed in-toto statement.

Key files are PEM (PKCS#8 private, SubjectPublicKeyInfo public), read like every file a user gives
us (core/files.py: inside the project once links are resolved, bounded, no FIFO). A private key must
be readable by its owner only (no group or other permission bits), as ssh demands of its keys. A
key is named by its id: sha256 of its raw 32 public bytes. The signature covers DSSE's
pre-authentication encoding of the payload type and the payload, so neither can be swapped alone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ngcbuild.core.errors import ManifestError, UserError, excerpt, shown_path
from ngcbuild.core.files import read_text
from ngcbuild.core.jsonload import load_json
from ngcbuild.core.outputs import write_file
from ngcbuild.core.text import safe

PAYLOAD_TYPE = "application/vnd.in-toto+json"
KEY_LIMIT = 16_384  # a PEM Ed25519 key is about 120 bytes
SIGNING_KEY_ENV = "NGCBUILD_SIGNING_KEY_FILE"
TRUSTED_KEYS_ENV = "NGCBUILD_TRUSTED_KEYS"  # files separated by os.pathsep
DEFAULT_KEY = Path("keys") / "signing.key"


class AttestationRejected(UserError):
    """An attestation that does not prove what it must (missing, unsigned by a trusted key, altered,
    about another image): the image under check fails it, exit status 2, nothing promoted."""


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    path: str
    public: object  # Ed25519PublicKey


def key_id(public) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return "sha256:" + hashlib.sha256(public.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def checked_path(value, flag: str) -> Path:
    """A key file named on the command line or in the environment: a path, never an option."""
    if not isinstance(value, str) or not value or value.startswith("-") or not value.isprintable():
        raise UserError(f"{flag} {excerpt(value)}: expected the path of a key file")
    return Path(value)


def make_key_pair(root: Path, out: str | None) -> tuple[Path, Path, str]:
    """A new Ed25519 key pair for trying signing out: PATH (private, mode 0600) and PATH.pub, inside
    the project, the private key only where the project's ignore rules keep it out of git (by
    default keys/signing.key of the project, whatever folder keygen runs in); an existing key is
    never overwritten."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

    path = checked_path(out, "--out") if out is not None else Path(root) / DEFAULT_KEY
    path = path if path.is_absolute() else Path.cwd() / path
    public_path = path.with_name(path.name + ".pub")
    _inside(root, path, "--out")
    if path.suffix == ".pub":
        raise UserError(f"--out {shown_path(path)}: a public key's name (.pub) for the private key; name the private "
                        "key (keys/NAME.key) and keygen writes its public half beside it as NAME.key.pub")
    for target in (path, public_path):
        if os.path.lexists(target):
            raise UserError(f"{shown_path(target)} exists; keygen never overwrites a key (choose another --out)")
    _ignored_by_git(root, path)
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    public_pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
    write_file(path, pem, within=root, mode=0o600)
    write_file(public_path, public_pem, within=root, mode=0o644)
    return path, public_path, key_id(private.public_key())


def _inside(root: Path, path: Path, flag: str) -> None:
    real, inside = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if inside not in real.parents:
        raise UserError(f"{flag} {shown_path(path)}: expected a path inside the project ({inside}); keys are kept "
                        "with the project (links out of it are refused)")


def _ignored_by_git(root: Path, path: Path) -> None:
    """The private key goes only where the project's own ignore rules (its .gitignore files and
    .git/info/exclude, as `git check-ignore` reads them; not a user's global ignores) keep it out of
    git. A project that is no git repository yet is judged by its .gitignore as a `git init` would."""
    import shutil
    import subprocess
    import tempfile

    git = shutil.which("git")
    if git is None:
        raise UserError("keygen checks with git that the project's ignore rules keep the private key out of git; "
                        "git is not installed")
    inside = os.path.realpath(root)
    relative = os.path.relpath(os.path.realpath(path.parent), inside)
    name = os.path.normpath(os.path.join(relative, path.name))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base = [git, "-c", "core.excludesFile=/dev/null"]

    def check(*prefix: str) -> int:
        try:
            return subprocess.run([*base, *prefix, "check-ignore", "-q", "--no-index", "--", name], cwd=inside,
                                  env=environment, capture_output=True, timeout=60, check=False).returncode
        except (OSError, subprocess.TimeoutExpired):
            return 128

    tree = subprocess.run([git, "rev-parse", "--show-toplevel"], cwd=inside, env=environment, capture_output=True,
                          text=True, timeout=60, check=False)
    if tree.returncode == 0 and tree.stdout.strip():
        status = check()
    else:
        with tempfile.TemporaryDirectory(prefix="ngcbuild-keygen-") as tmp:
            subprocess.run([git, "init", "-q", "--bare", tmp], env=environment, capture_output=True, timeout=60,
                           check=False)
            status = check(f"--git-dir={tmp}", f"--work-tree={inside}")
    if status == 0:
        return
    if status == 1:
        raise UserError(f"{shown_path(path)}: the project's ignore rules (.gitignore) do not cover it, so the "
                        "private key could be committed; write it where they do (keys/NAME.key at the top of the "
                        "project, which ngcbuild's own .gitignore covers with /keys/*.key) or add a rule for it")
    raise UserError(f"{shown_path(path)}: git could not say whether the project's ignore rules cover it; the "
                    "private key is written only where they do")


def signing_key_path(option: str | None, environ=os.environ) -> Path:
    if option is not None:
        return checked_path(option, "--key")
    value = environ.get(SIGNING_KEY_ENV)
    if value:
        return checked_path(value, SIGNING_KEY_ENV)
    raise UserError(f"no signing key: give --key FILE or set {SIGNING_KEY_ENV} (`invoke keygen` makes one to "
                    "try it out)")


def load_signing_key(path: Path, root: Path):
    """The Ed25519 private key in `path`; refused when group or others may read it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    text = read_text(path, KEY_LIMIT, "a PEM Ed25519 private key", "no such key file", within=root)
    mode = os.stat(os.path.realpath(path)).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ManifestError(path, "", f"a private key readable by others (mode {stat.S_IMODE(mode):04o}); "
                                      f"expected mode 0600: chmod 600 {shown_path(path)}")
    from cryptography.exceptions import UnsupportedAlgorithm

    try:
        key = load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):  # the last: a key of a kind cryptography cannot load
        raise ManifestError(path, "", "not a PEM private key without a passphrase; expected a PEM Ed25519 "
                                      "private key (`invoke keygen` makes one)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ManifestError(path, "", f"a {type(key).__name__.lstrip('_')}; expected an Ed25519 private key")
    return key


def trusted_key_paths(options, environ=os.environ) -> list[Path]:
    if options:
        return [checked_path(value, "--trusted-key") for value in options]
    value = environ.get(TRUSTED_KEYS_ENV)
    if value:
        return [checked_path(part, TRUSTED_KEYS_ENV) for part in value.split(os.pathsep) if part]
    raise UserError(f"no trusted key: give --trusted-key FILE (repeatable) or set {TRUSTED_KEYS_ENV} to the "
                    "public key files whose signatures you trust")


def load_trusted_keys(paths: list[Path], root: Path) -> list[TrustedKey]:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    keys = []
    for path in paths:
        text = read_text(path, KEY_LIMIT, "a PEM Ed25519 public key", "no such key file", within=root)
        if "PRIVATE KEY" in text:
            raise ManifestError(path, "", "holds a private key; expected the public key (the .pub file)")
        try:
            public = load_pem_public_key(text.encode())
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise ManifestError(path, "", "not a PEM public key; expected a PEM Ed25519 public key") from None
        if not isinstance(public, Ed25519PublicKey):
            raise ManifestError(path, "", f"a {type(public).__name__.lstrip('_')}; expected an Ed25519 public key")
        keys.append(TrustedKey(key_id(public), shown_path(path), public))
    return keys


def sign(payload: bytes, private) -> bytes:
    """The DSSE envelope (JSON) of `payload`, signed with `private`."""
    signature = private.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                "signatures": [{"keyid": key_id(private.public_key()), "sig": base64.b64encode(signature).decode()}]}
    return (json.dumps(envelope, indent=2, sort_keys=True) + "\n").encode()


def open_envelope(data: bytes, trusted: list[TrustedKey], where: str) -> tuple[bytes, TrustedKey]:
    """The payload of a DSSE envelope and the trusted key whose signature over it verifies, or
    AttestationRejected saying what is wrong."""
    from cryptography.exceptions import InvalidSignature

    try:
        envelope = load_json(data, "the envelope")
        payload_type, signatures = envelope["payloadType"], envelope["signatures"]
        payload = base64.b64decode(envelope["payload"], validate=True)
        if not isinstance(signatures, list):
            raise TypeError
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise AttestationRejected(f"{where}: not a DSSE envelope (JSON with payloadType, payload, signatures)"
                                  ) from None
    if payload_type != PAYLOAD_TYPE:
        raise AttestationRejected(f"{where}: payloadType {excerpt(payload_type)}; expected {PAYLOAD_TYPE}")
    message = pae(PAYLOAD_TYPE, payload)
    for entry in signatures[:16]:
        try:
            signature = base64.b64decode(entry["sig"], validate=True)
        except (KeyError, TypeError, ValueError, binascii.Error):
            continue
        for key in trusted:
            try:
                key.public.verify(signature, message)
            except InvalidSignature:
                continue
            return payload, key
    ids = ", ".join(safe(e.get("keyid"), 80) for e in signatures[:4] if isinstance(e, dict)) or "none"
    raise AttestationRejected(f"{where}: no signature verifies with a trusted key (signed by: {ids}; trusted: "
                              f"{', '.join(k.key_id for k in trusted)}): altered, or signed by a key you do not "
                              "trust")
