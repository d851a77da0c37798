"""BOINC code signing: key texts, file signatures and text signatures.

The BOINC client verifies every application file with the project's public key
(docs/protocol.md). Keys and signatures travel in BOINC's "crypt_prog" hex text:
an optional decimal bit-count line, lowercase hex 32 bytes (64 chars) per line, and a
line holding a single ``.``. A signature is RSA "private encrypt" with PKCS#1 v1.5
type-1 padding over the 32 ASCII characters of a lowercase hex MD5: no DigestInfo,
so the high-level ``sign()`` of ``cryptography`` cannot produce it and the modular
exponentiation is done here on the key's numbers.

Signing uses plain ``pow`` (not constant time): real projects sign offline, and a key
kept on the server is only used for admin-triggered signing, not for attacker-chosen
data. Verification never raises on malformed input; it answers False.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from functools import lru_cache

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric import utils as asym_utils

KEY_BITS = 1024  # the client keeps keys in fixed 128-byte buffers; larger keys do not fit
PUBLIC_EXPONENT = 65537
MODULUS_BYTES = 128  # n, e and d fields of the key texts
PRIME_BYTES = 64  # p, q, dmp1, dmq1, iqmp fields of the private key text
PUBLIC_KEY_BYTES = 2 * MODULUS_BYTES
PRIVATE_KEY_BYTES = 3 * MODULUS_BYTES + 5 * PRIME_BYTES
BYTES_PER_LINE = 32
MD5_HEX_LEN = 32

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_READ_CHUNK = 1 << 20


class KeyFormatError(ValueError):
    """A key or signature text that cannot be parsed or does not fit BOINC's layout."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A BOINC code-signing key pair as the two crypt_prog texts."""

    public_text: str
    private_text: str


@dataclass(frozen=True, slots=True)
class PublicKeyNumbers:
    bits: int
    n: int
    e: int


@dataclass(frozen=True, slots=True)
class PrivateKeyNumbers:
    bits: int
    n: int
    e: int
    d: int
    p: int
    q: int
    dmp1: int
    dmq1: int
    iqmp: int

    @property
    def public(self) -> PublicKeyNumbers:
        return PublicKeyNumbers(bits=self.bits, n=self.n, e=self.e)


# --- hex text layout -------------------------------------------------------------------


def format_hex_block(data: bytes) -> str:
    """Hex lines of 32 bytes each, then a '.' line (the layout of signatures)."""
    hex_text = data.hex()
    step = 2 * BYTES_PER_LINE
    lines = [hex_text[i : i + step] for i in range(0, len(hex_text), step)]
    return "".join(f"{line}\n" for line in lines) + ".\n"


def parse_hex_block(text: str) -> bytes:
    """Read hex pairs, skipping whitespace, up to the first other character (the '.').

    Mirrors the client: line length and whitespace are free-form. An odd digit count is
    an error rather than a silently truncated byte.
    """
    digits: list[str] = []
    for char in text:
        if char in _HEX_DIGITS:
            digits.append(char)
        elif not char.isspace():
            break
    if len(digits) % 2:
        raise KeyFormatError("hex data has an odd number of digits")
    return bytes.fromhex("".join(digits))


def _split_bits_line(text: str) -> tuple[int, str]:
    head, newline, rest = text.lstrip().partition("\n")
    if not newline:
        raise KeyFormatError("key text has no bit-count line")
    try:
        bits = int(head.strip())
    except ValueError:
        raise KeyFormatError(f"key text starts with {head.strip()[:20]!r}, not a bit count") from None
    if bits <= 0:
        raise KeyFormatError(f"bit count must be positive, got {bits}")
    return bits, rest


def _to_fixed(value: int, size: int, name: str) -> bytes:
    if value < 0 or value.bit_length() > 8 * size:
        raise KeyFormatError(f"{name} does not fit in {size} bytes")
    return value.to_bytes(size, "big")


def _parse_key_data(text: str, expected: int, kind: str) -> tuple[int, bytes]:
    bits, rest = _split_bits_line(text)
    data = parse_hex_block(rest)
    if len(data) != expected:
        raise KeyFormatError(f"{kind} key text holds {len(data)} bytes, expected {expected}")
    return bits, data


def _fields(data: bytes, sizes: tuple[int, ...]) -> list[int]:
    values, offset = [], 0
    for size in sizes:
        values.append(int.from_bytes(data[offset : offset + size], "big"))
        offset += size
    return values


# --- key texts -------------------------------------------------------------------------


def format_public_key(numbers: PublicKeyNumbers) -> str:
    data = _to_fixed(numbers.n, MODULUS_BYTES, "modulus") + _to_fixed(
        numbers.e, MODULUS_BYTES, "public exponent"
    )
    return f"{numbers.bits}\n" + format_hex_block(data)


def parse_public_key(text: str) -> PublicKeyNumbers:
    bits, data = _parse_key_data(text, PUBLIC_KEY_BYTES, "public")
    n, e = _fields(data, (MODULUS_BYTES, MODULUS_BYTES))
    return PublicKeyNumbers(bits=bits, n=n, e=e)


_PRIVATE_LAYOUT: tuple[tuple[str, int], ...] = (
    ("n", MODULUS_BYTES),
    ("e", MODULUS_BYTES),
    ("d", MODULUS_BYTES),
    ("p", PRIME_BYTES),
    ("q", PRIME_BYTES),
    ("dmp1", PRIME_BYTES),
    ("dmq1", PRIME_BYTES),
    ("iqmp", PRIME_BYTES),
)


def format_private_key(numbers: PrivateKeyNumbers) -> str:
    data = b"".join(_to_fixed(getattr(numbers, name), size, name) for name, size in _PRIVATE_LAYOUT)
    return f"{numbers.bits}\n" + format_hex_block(data)


def parse_private_key(text: str) -> PrivateKeyNumbers:
    bits, data = _parse_key_data(text, PRIVATE_KEY_BYTES, "private")
    values = _fields(data, tuple(size for _, size in _PRIVATE_LAYOUT))
    named = dict(zip((name for name, _ in _PRIVATE_LAYOUT), values, strict=True))
    return PrivateKeyNumbers(bits=bits, **named)


def public_text_from_private(private_text: str) -> str:
    """The public key text matching a private key text (for keys uploaded by an admin)."""
    return format_public_key(parse_private_key(private_text).public)


def load_private_key(text: str) -> rsa.RSAPrivateKey:
    """A ``cryptography`` key from a private key text; raises KeyFormatError if inconsistent."""
    k = parse_private_key(text)
    try:
        return rsa.RSAPrivateNumbers(
            p=k.p,
            q=k.q,
            d=k.d,
            dmp1=k.dmp1,
            dmq1=k.dmq1,
            iqmp=k.iqmp,
            public_numbers=rsa.RSAPublicNumbers(e=k.e, n=k.n),
        ).private_key()
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFormatError(f"private key numbers are not a valid RSA key: {exc}") from None


def load_public_key(text: str) -> rsa.RSAPublicKey:
    k = parse_public_key(text)
    try:
        return rsa.RSAPublicNumbers(e=k.e, n=k.n).public_key()
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFormatError(f"public key numbers are not a valid RSA key: {exc}") from None


def private_key_to_text(key: rsa.RSAPrivateKey) -> str:
    priv = key.private_numbers()
    pub = priv.public_numbers
    return format_private_key(
        PrivateKeyNumbers(
            bits=key.key_size,
            n=pub.n,
            e=pub.e,
            d=priv.d,
            p=priv.p,
            q=priv.q,
            dmp1=priv.dmp1,
            dmq1=priv.dmq1,
            iqmp=priv.iqmp,
        )
    )


def public_key_to_text(key: rsa.RSAPublicKey) -> str:
    pub = key.public_numbers()
    return format_public_key(PublicKeyNumbers(bits=key.key_size, n=pub.n, e=pub.e))


def generate_key_pair() -> KeyPair:
    key = rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=KEY_BITS)
    return KeyPair(public_text=public_key_to_text(key.public_key()), private_text=private_key_to_text(key))


# --- MD5 helpers -----------------------------------------------------------------------


def md5_hex(data: str | bytes) -> str:
    """Lowercase hex MD5; ``str`` is hashed as UTF-8 (the exact bytes put on the wire)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


def file_md5_hex(path: str | os.PathLike[str]) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(_READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _normalize_md5(value: str) -> str:
    if len(value) != MD5_HEX_LEN or not set(value) <= _HEX_DIGITS:
        raise ValueError(f"not a hex MD5: {value[:40]!r}")
    # The client compares against its own lowercase hexdigest.
    return value.lower()


# --- signatures ------------------------------------------------------------------------


def sign_md5_hex(private_text: str, md5_hex_value: str) -> str:
    """The ``<file_signature>`` text for a file whose MD5 is ``md5_hex_value``: BOINC signs
    the 32 hex characters themselves with PKCS#1 v1.5 padding and no DigestInfo."""
    payload = _normalize_md5(md5_hex_value).encode("ascii")
    key = _loaded_private_key(private_text)
    if (key.key_size + 7) // 8 - 3 - len(payload) < 8:  # PKCS#1 v1.5 needs 8 padding bytes
        raise KeyFormatError("modulus too small for a PKCS#1 v1.5 signature")
    return format_hex_block(key.sign(payload, padding.PKCS1v15(), asym_utils.NoDigestInfo()))


@lru_cache(maxsize=32)
def _loaded_private_key(private_text: str) -> rsa.RSAPrivateKey:
    # Servers sign with one or two keys all day (every output file's upload certificate):
    # parse each once, and sign in OpenSSL, a tenth of the cost of the same arithmetic in Python.
    return load_private_key(private_text)


@lru_cache(maxsize=32)
def _loaded_public_key(public_text: str) -> rsa.RSAPublicKey:
    # Every upload is checked against its project's key: parse each key once per process.
    return load_public_key(public_text)


def sign_file(private_text: str, path: str | os.PathLike[str]) -> tuple[str, str]:
    """(md5 hex, signature text) of a file, read in chunks."""
    digest = file_md5_hex(path)
    return digest, sign_md5_hex(private_text, digest)


def sign_text(private_text: str, text: str | bytes) -> str:
    """Signature over md5_hex(text): upload certificates and key-rotation signatures."""
    return sign_md5_hex(private_text, md5_hex(text))


def verify_md5_signature(public_text: str, md5_hex_value: str, signature_text: str) -> bool:
    """True only if ``signature_text`` is a valid signature of that MD5 under the key."""
    # Untrusted input from admins and uploads: any malformed part is just "not valid".
    try:
        expected = _normalize_md5(md5_hex_value).encode("ascii")
        key = _loaded_public_key(public_text)
        signature = parse_hex_block(signature_text)
        if len(signature) != (key.key_size + 7) // 8:
            return False
        recovered = key.recover_data_from_signature(signature, padding.PKCS1v15(), None)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return hmac.compare_digest(recovered, expected)


def verify_text_signature(public_text: str, text: str | bytes, signature_text: str) -> bool:
    try:
        digest = md5_hex(text)
    except (ValueError, TypeError):
        return False
    return verify_md5_signature(public_text, digest, signature_text)


# --- the signed texts BOINC uses -------------------------------------------------------


def upload_certificate_text(name: str, max_nbytes: int | float) -> str:
    """The exact string an upload's ``<xml_signature>`` covers."""
    # The stock server prints max_nbytes as a double with no decimals.
    return f"<name>{name}</name><max_nbytes>{max_nbytes:.0f}</max_nbytes>"


def sign_upload_certificate(private_text: str, name: str, max_nbytes: int | float) -> str:
    return sign_text(private_text, upload_certificate_text(name, max_nbytes))


def verify_upload_certificate(
    public_text: str, name: str, max_nbytes: int | float, signature_text: str
) -> bool:
    try:
        text = upload_certificate_text(name, max_nbytes)
    except (ValueError, TypeError):
        return False
    return verify_text_signature(public_text, text, signature_text)


def sign_key_rotation(old_private_text: str, new_public_text: str) -> str:
    """``<code_sign_key_signature>`` for a new key: its text signed with the old key.

    The client strips whitespace around the received key before checking, so the
    stripped text is what gets signed; send the key in the reply the same way.
    """
    return sign_text(old_private_text, new_public_text.strip())


def verify_key_rotation(old_public_text: str, new_public_text: str, signature_text: str) -> bool:
    return verify_text_signature(old_public_text, new_public_text.strip(), signature_text)
