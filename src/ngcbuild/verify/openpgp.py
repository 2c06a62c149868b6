"""The little of OpenPGP (RFC 4880) that says which key signs an apt repository: the public keys of an
armored key file with their v4 fingerprints, the signature of a clearsigned InRelease (its issuer and its
check with the key, RSA), all from untrusted bytes: every length is bounded and a malformed input is an
OpenPgpError with the reason, never a traceback. Pure: bytes in, facts out (apt_keys.py fetches them)."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

MAX_PACKETS = 64  # a repository key (a primary, subkeys, user ids, self-signatures) has a handful
MAX_TEXT = 32 << 20  # an InRelease lists every index of a repository: a few MB at most
HASHES = {2: "sha1", 8: "sha256", 9: "sha384", 10: "sha512", 11: "sha224"}
RSA_ALGORITHMS = (1, 3)  # RSA (encrypt or sign), RSA sign-only
PUBLIC_KEY, PUBLIC_SUBKEY, SIGNATURE = 6, 14, 2
ISSUER_KEY_ID, ISSUER_FINGERPRINT = 16, 33
CANONICAL_TEXT = 0x01


class OpenPgpError(Exception):
    """The bytes are not what they should be (armor, packet, key or signature): the reason."""


@dataclass(frozen=True)
class PublicKey:
    fingerprint: str  # 40 upper-case hex digits (v4)
    algorithm: int
    rsa: tuple[int, int] | None  # (n, e) of an RSA key

    @property
    def key_id(self) -> str:
        return self.fingerprint[-16:]


@dataclass(frozen=True)
class Signature:
    kind: int
    algorithm: int
    hash_name: str
    hashed: bytes  # the packet's version through its hashed subpackets: part of what is signed
    issuer_fingerprint: str | None
    issuer_key_id: str | None
    left16: bytes
    value: int  # the RSA signature

    def issued_by(self, key: PublicKey) -> bool:
        if self.issuer_fingerprint:
            return self.issuer_fingerprint == key.fingerprint
        return self.issuer_key_id is not None and self.issuer_key_id == key.key_id

    @property
    def issuer(self) -> str:
        if self.issuer_fingerprint:
            return self.issuer_fingerprint
        return f"key id {self.issuer_key_id}" if self.issuer_key_id else "no issuer"


@dataclass(frozen=True)
class Clearsigned:
    text: bytes  # the signed text in canonical form (CR LF line ends, trailing blanks gone, no final line end)
    signature: Signature


def read_keys(armored: bytes) -> list[PublicKey]:
    """The primary key and the subkeys of an armored public key file, in their order."""
    keys = []
    for tag, body in _packets(_dearmor(armored, "PUBLIC KEY BLOCK")):
        if tag in (PUBLIC_KEY, PUBLIC_SUBKEY):
            keys.append(_public_key(body))
    if not keys:
        raise OpenPgpError("no public key packet in the key file")
    return keys


def read_clearsigned(data: bytes) -> Clearsigned:
    """The signed text and the signature of a clearsigned message (an apt InRelease)."""
    if len(data) > MAX_TEXT:
        raise OpenPgpError(f"{len(data)} bytes, over {MAX_TEXT}")
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    head = "-----BEGIN PGP SIGNED MESSAGE-----\n"
    if not text.startswith(head):
        raise OpenPgpError("not a clearsigned message (no BEGIN PGP SIGNED MESSAGE line)")
    body = text[len(head):]
    # the armor headers (Hash: ...), then a blank line; with no headers, the blank line comes first
    _, blank, rest = ("", "\n", body[1:]) if body.startswith("\n") else body.partition("\n\n")
    if not blank:
        raise OpenPgpError("no blank line after the armor headers of the signed message")
    message, marker, armor = rest.partition("\n-----BEGIN PGP SIGNATURE-----\n")
    if not marker:
        raise OpenPgpError("no BEGIN PGP SIGNATURE line after the signed text")
    lines = [line[2:] if line.startswith("- ") else line for line in message.split("\n")]
    canonical = "\r\n".join(line.rstrip(" \t") for line in lines).encode("utf-8")
    signatures = [body for tag, body in _packets(_dearmor(("-----BEGIN PGP SIGNATURE-----\n" + armor).encode(),
                                                           "SIGNATURE")) if tag == SIGNATURE]
    if len(signatures) != 1:
        raise OpenPgpError(f"{len(signatures)} signature packets; expected one")
    return Clearsigned(canonical, _signature(signatures[0]))


def check(signed: Clearsigned, key: PublicKey) -> str | None:
    """None where `key` made the signature over the signed text; otherwise why not."""
    signature = signed.signature
    if not signature.issued_by(key):
        return f"the signature names {signature.issuer}, not {key.fingerprint}"
    if signature.kind != CANONICAL_TEXT:
        return f"signature type {signature.kind:#04x}, not a signature of a canonical text (0x01)"
    if signature.algorithm not in RSA_ALGORITHMS or key.rsa is None:
        return f"public-key algorithm {signature.algorithm}: only RSA signatures are checked here"
    trailer = b"\x04\xff" + len(signature.hashed).to_bytes(4, "big")
    digest = hashlib.new(signature.hash_name, signed.text + signature.hashed + trailer).digest()
    if digest[:2] != signature.left16:
        return "the signed text does not match the signature (its digest's first bytes differ)"
    n, e = key.rsa
    size = (n.bit_length() + 7) // 8
    expected = _pkcs1_v15(signature.hash_name, digest, size)
    if expected is None or pow(signature.value, e, n).to_bytes(size, "big") != expected:
        return "the RSA signature does not verify with the key"
    return None


# --- armor and packets ---------------------------------------------------------------------------------

def _dearmor(armored: bytes, kind: str) -> bytes:
    text = armored.decode("ascii", "replace").replace("\r\n", "\n")
    match = re.search(rf"-----BEGIN PGP {kind}-----\n(.*?)\n-----END PGP {kind}-----", text, re.S)
    if not match:
        raise OpenPgpError(f"no armored PGP {kind}")
    _, blank, body = match.group(1).partition("\n\n")
    if not blank:
        body = match.group(1)  # no armor headers
    lines = [line.strip() for line in body.split("\n") if line.strip() and not line.startswith("=")]
    try:
        return base64.b64decode("".join(lines), validate=True)
    except ValueError:
        raise OpenPgpError(f"the armored PGP {kind} is not base64") from None


def _packets(data: bytes):
    """(tag, body) of each packet, old or new format, with definite lengths only."""
    position, count = 0, 0
    while position < len(data):
        count += 1
        if count > MAX_PACKETS:
            raise OpenPgpError(f"more than {MAX_PACKETS} packets")
        first = data[position]
        if not first & 0x80:
            raise OpenPgpError(f"byte {position} is not a packet header")
        if first & 0x40:  # new format
            tag = first & 0x3F
            length, position = _length(data, position + 1, packet=True)
        else:
            tag, kind = (first >> 2) & 0x0F, first & 0x03
            if kind == 3:
                raise OpenPgpError("a packet of indeterminate length")
            width = (1, 2, 4)[kind]
            length = int.from_bytes(_take(data, position + 1, width), "big")
            position += 1 + width
        yield tag, _take(data, position, length)
        position += length


def _length(data: bytes, position: int, packet: bool) -> tuple[int, int]:
    """A new-format packet's length (`packet`) or a signature subpacket's: one, two or five octets.
    224-254 start a partial body length in a packet, which no key or signature of a repository uses."""
    first = _take(data, position, 1)[0]
    if first < 192:
        return first, position + 1
    if first < (224 if packet else 255):
        return ((first - 192) << 8) + _take(data, position + 1, 1)[0] + 192, position + 2
    if first == 255:
        return int.from_bytes(_take(data, position + 1, 4), "big"), position + 5
    raise OpenPgpError("a packet of partial body lengths")


def _take(data: bytes, position: int, length: int) -> bytes:
    if length < 0 or position + length > len(data):
        raise OpenPgpError(f"truncated: {length} bytes wanted at byte {position} of {len(data)}")
    return data[position:position + length]


def _mpi(data: bytes, position: int) -> tuple[int, int]:
    bits = int.from_bytes(_take(data, position, 2), "big")
    size = (bits + 7) // 8
    return int.from_bytes(_take(data, position + 2, size), "big"), position + 2 + size


def _public_key(body: bytes) -> PublicKey:
    version = _take(body, 0, 1)[0]
    if version != 4:
        raise OpenPgpError(f"a version {version} public key (only version 4 keys are read)")
    algorithm = _take(body, 5, 1)[0]
    rsa = None
    if algorithm in RSA_ALGORITHMS:
        n, position = _mpi(body, 6)
        e, _ = _mpi(body, position)
        rsa = (n, e)
    fingerprint = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    return PublicKey(fingerprint, algorithm, rsa)


def _signature(body: bytes) -> Signature:
    version = _take(body, 0, 1)[0]
    if version != 4:
        raise OpenPgpError(f"a version {version} signature (only version 4 signatures are read)")
    kind, algorithm, hash_id = _take(body, 1, 3)
    if hash_id not in HASHES:
        raise OpenPgpError(f"hash algorithm {hash_id} is not one of {sorted(HASHES)}")
    hashed_length = int.from_bytes(_take(body, 4, 2), "big")
    hashed_subpackets = _take(body, 6, hashed_length)
    position = 6 + hashed_length
    unhashed_length = int.from_bytes(_take(body, position, 2), "big")
    unhashed_subpackets = _take(body, position + 2, unhashed_length)
    position += 2 + unhashed_length
    left16 = _take(body, position, 2)
    value, _ = _mpi(body, position + 2) if algorithm in RSA_ALGORITHMS else (0, 0)
    found = dict(_subpackets(hashed_subpackets + unhashed_subpackets))
    issuer = found.get(ISSUER_FINGERPRINT)
    key_id = found.get(ISSUER_KEY_ID)
    return Signature(kind, algorithm, HASHES[hash_id], body[:6 + hashed_length],
                     issuer[1:].hex().upper() if issuer and issuer[0] == 4 and len(issuer) == 21 else None,
                     key_id.hex().upper() if key_id and len(key_id) == 8 else None, left16, value)


def _subpackets(data: bytes):
    position, count = 0, 0
    while position < len(data):
        count += 1
        if count > 4 * MAX_PACKETS:
            raise OpenPgpError("too many signature subpackets")
        length, position = _length(data, position, packet=False)
        if length < 1:
            raise OpenPgpError("an empty signature subpacket")
        content = _take(data, position, length)
        yield content[0] & 0x7F, content[1:]
        position += length


# DER prefixes of the DigestInfo of each hash (RFC 4880 section 5.2.2), for EMSA-PKCS1-v1_5.
_DIGEST_INFO = {
    "sha1": bytes.fromhex("3021300906052b0e03021a05000414"),
    "sha224": bytes.fromhex("302d300d06096086480165030402040500041c"),
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}


def _pkcs1_v15(hash_name: str, digest: bytes, size: int) -> bytes | None:
    """The EMSA-PKCS1-v1_5 encoding a valid RSA signature of `digest` decrypts to, or None (a key too small)."""
    info = _DIGEST_INFO[hash_name] + digest
    padding = size - len(info) - 3
    if padding < 8:
        return None
    return b"\x00\x01" + b"\xff" * padding + b"\x00" + info
