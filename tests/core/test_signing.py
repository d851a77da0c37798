from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.core.domain.signing import (
    KeyFormatError,
    KeyPair,
    format_hex_block,
    generate_key_pair,
    load_private_key,
    load_public_key,
    md5_hex,
    parse_hex_block,
    parse_private_key,
    parse_public_key,
    private_key_to_text,
    public_text_from_private,
    sign_file,
    sign_key_rotation,
    sign_md5_hex,
    sign_text,
    sign_upload_certificate,
    upload_certificate_text,
    verify_key_rotation,
    verify_md5_signature,
    verify_text_signature,
    verify_upload_certificate,
)

MD5_OF_HELLO = hashlib.md5(b"hello").hexdigest()
HEX_LINE = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


@pytest.fixture(scope="module")
def keys() -> KeyPair:
    return generate_key_pair()


@pytest.fixture(scope="module")
def other_keys() -> KeyPair:
    return generate_key_pair()


def _hex_lines(text: str) -> list[str]:
    lines = text.split("\n")
    assert lines[-1] == ""  # the text ends with a newline
    assert lines[-2] == "."
    return lines[:-2]


# --- key text layout ---------------------------------------------------------------------


def test_public_key_text_is_bits_then_8_hex_lines_then_dot(keys: KeyPair) -> None:
    lines = _hex_lines(keys.public_text)
    assert lines[0] == "1024"
    assert len(lines[1:]) == 8
    assert all(len(line) == 64 and line == line.lower() for line in lines[1:])
    assert lines[-1].endswith("010001")
    assert set("".join(lines[1:])) <= set("0123456789abcdef")


def test_private_key_text_is_bits_then_22_hex_lines_then_dot(keys: KeyPair) -> None:
    lines = _hex_lines(keys.private_text)
    assert lines[0] == "1024"
    assert len(lines[1:]) == 22
    assert all(len(line) == 64 for line in lines[1:])


def test_private_key_text_loads_back_to_the_same_numbers(keys: KeyPair) -> None:
    parsed = parse_private_key(keys.private_text)
    numbers = load_private_key(keys.private_text).private_numbers()
    assert (numbers.p, numbers.q, numbers.d) == (parsed.p, parsed.q, parsed.d)
    assert (numbers.dmp1, numbers.dmq1, numbers.iqmp) == (parsed.dmp1, parsed.dmq1, parsed.iqmp)
    assert (numbers.public_numbers.n, numbers.public_numbers.e) == (parsed.n, 65537)
    assert parsed.p * parsed.q == parsed.n
    assert private_key_to_text(load_private_key(keys.private_text)) == keys.private_text


def test_public_key_matches_private_key(keys: KeyPair) -> None:
    public = load_public_key(keys.public_text).public_numbers()
    private = load_private_key(keys.private_text).private_numbers().public_numbers
    assert public == private
    assert public_text_from_private(keys.private_text) == keys.public_text


def test_key_parsing_is_lenient_about_whitespace_and_trailer(keys: KeyPair) -> None:
    bits = keys.public_text.partition("\n")[0]
    hex_text = "".join(_hex_lines(keys.public_text)[1:])
    reflowed = f"  {bits}\r\n" + " ".join(hex_text[i : i + 10] for i in range(0, len(hex_text), 10))
    reflowed += "\r\n.\ntrailing junk ff"
    assert parse_public_key(reflowed) == parse_public_key(keys.public_text)
    assert parse_public_key(keys.public_text.upper()) == parse_public_key(keys.public_text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1024", "no bit-count line"),
        ("abc\n00\n.\n", "not a bit count"),
        ("1024\n" + "00" * 255 + "\n.\n", "holds 255 bytes, expected 256"),
        ("1024\n" + "00" * 255 + "0\n.\n", "odd number"),
    ],
)
def test_malformed_public_key_text_is_rejected(text: str, message: str) -> None:
    with pytest.raises(KeyFormatError, match=message):
        parse_public_key(text)


def test_private_key_text_is_not_a_public_key(keys: KeyPair) -> None:
    with pytest.raises(KeyFormatError, match="expected 256"):
        load_public_key(keys.private_text)


def test_inconsistent_private_key_is_rejected(keys: KeyPair) -> None:
    lines = keys.private_text.split("\n")
    lines[10] = "0" * 64  # zero part of d and p
    with pytest.raises(KeyFormatError, match="not a valid RSA key"):
        load_private_key("\n".join(lines))


def test_hex_block_round_trips() -> None:
    data = bytes(range(100))
    text = format_hex_block(data)
    assert text.endswith("\n.\n")
    assert parse_hex_block(text) == data


# --- signatures --------------------------------------------------------------------------


def test_md5_signature_recovers_the_md5_ascii(keys: KeyPair) -> None:
    signature = sign_md5_hex(keys.private_text, MD5_OF_HELLO)
    recovered = load_public_key(keys.public_text).recover_data_from_signature(
        parse_hex_block(signature), padding.PKCS1v15(), None
    )
    assert recovered == MD5_OF_HELLO.encode("ascii")


def test_signature_text_is_4_hex_lines_then_dot(keys: KeyPair) -> None:
    lines = _hex_lines(sign_md5_hex(keys.private_text, MD5_OF_HELLO))
    assert len(lines) == 4
    assert all(len(line) == 64 for line in lines)


def test_signing_is_deterministic_and_case_insensitive_in_the_md5(keys: KeyPair) -> None:
    first = sign_md5_hex(keys.private_text, MD5_OF_HELLO)
    assert sign_md5_hex(keys.private_text, MD5_OF_HELLO.upper()) == first
    assert verify_md5_signature(keys.public_text, MD5_OF_HELLO.upper(), first) is True


def test_sign_md5_hex_rejects_a_non_md5() -> None:
    with pytest.raises(ValueError, match="not a hex MD5"):
        sign_md5_hex("irrelevant", "xyz")


def test_verify_md5_signature_round_trip(keys: KeyPair, other_keys: KeyPair) -> None:
    signature = sign_md5_hex(keys.private_text, MD5_OF_HELLO)
    assert verify_md5_signature(keys.public_text, MD5_OF_HELLO, signature) is True
    assert verify_md5_signature(other_keys.public_text, MD5_OF_HELLO, signature) is False
    assert verify_md5_signature(keys.public_text, md5_hex(b"other"), signature) is False


def test_sign_file_returns_md5_and_signature(keys: KeyPair, tmp_path: Path) -> None:
    path = tmp_path / "worker_1.00_x86_64-pc-linux-gnu"
    content = b"#!/bin/sh\necho hello\n" * 100_000
    path.write_bytes(content)
    digest, signature = sign_file(keys.private_text, path)
    assert digest == hashlib.md5(content).hexdigest()
    assert verify_md5_signature(keys.public_text, digest, signature) is True


def test_upload_certificate_text_is_the_exact_signed_string() -> None:
    assert upload_certificate_text("job1_0_r0_out", 100000) == (
        "<name>job1_0_r0_out</name><max_nbytes>100000</max_nbytes>"
    )
    assert upload_certificate_text("x", 1e6) == "<name>x</name><max_nbytes>1000000</max_nbytes>"


def test_upload_certificate_round_trip(keys: KeyPair) -> None:
    signature = sign_upload_certificate(keys.private_text, "job1_0_r0_out", 100000)
    assert signature == sign_text(keys.private_text, upload_certificate_text("job1_0_r0_out", 100000))
    assert verify_upload_certificate(keys.public_text, "job1_0_r0_out", 100000, signature) is True
    assert verify_upload_certificate(keys.public_text, "job1_0_r0_out", 100001, signature) is False
    assert verify_upload_certificate(keys.public_text, "job1_0_r1_out", 100000, signature) is False


def test_text_signature_covers_md5_of_the_text(keys: KeyPair) -> None:
    text = "<name>a</name><max_nbytes>5</max_nbytes>"
    signature = sign_text(keys.private_text, text)
    assert verify_md5_signature(keys.public_text, md5_hex(text), signature) is True
    assert verify_text_signature(keys.public_text, text.encode(), signature) is True
    assert verify_text_signature(keys.public_text, text + " ", signature) is False


def test_key_rotation_signature_verifies_with_the_old_public_key(keys: KeyPair, other_keys: KeyPair) -> None:
    signature = sign_key_rotation(keys.private_text, other_keys.public_text)
    assert verify_text_signature(keys.public_text, other_keys.public_text.strip(), signature) is True
    assert verify_key_rotation(keys.public_text, "\n" + other_keys.public_text + "  ", signature) is True
    assert verify_key_rotation(other_keys.public_text, other_keys.public_text, signature) is False


# --- agreement with the openssl CLI -------------------------------------------------------

OPENSSL = shutil.which("openssl")
PKCS1 = ("-pkeyopt", "rsa_padding_mode:pkcs1")  # type-1 padding, no digest: BOINC's primitive
needs_openssl = pytest.mark.skipif(OPENSSL is None, reason="openssl command-line tool is not installed")


def _write_pem(tmp_path: Path, keys: KeyPair) -> tuple[Path, Path]:
    public_pem = tmp_path / "pub.pem"
    private_pem = tmp_path / "priv.pem"
    public_pem.write_bytes(
        load_public_key(keys.public_text).public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    private_pem.write_bytes(
        load_private_key(keys.private_text).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return public_pem, private_pem


@needs_openssl
def test_openssl_verifyrecover_returns_the_md5(keys: KeyPair, tmp_path: Path) -> None:
    assert OPENSSL is not None
    public_pem, _ = _write_pem(tmp_path, keys)
    sig = tmp_path / "sig.bin"
    sig.write_bytes(parse_hex_block(sign_md5_hex(keys.private_text, MD5_OF_HELLO)))
    out = subprocess.run(
        [OPENSSL, "pkeyutl", "-verifyrecover", "-pubin", "-inkey", public_pem, "-in", sig, *PKCS1],
        capture_output=True,
        check=True,
    )
    assert out.stdout == MD5_OF_HELLO.encode("ascii")


@needs_openssl
def test_openssl_raw_pkcs1_sign_gives_the_same_signature(keys: KeyPair, tmp_path: Path) -> None:
    assert OPENSSL is not None
    _, private_pem = _write_pem(tmp_path, keys)
    data = tmp_path / "md5.txt"
    data.write_bytes(MD5_OF_HELLO.encode("ascii"))
    out = subprocess.run(
        [OPENSSL, "pkeyutl", "-sign", "-inkey", private_pem, "-in", data, *PKCS1],
        capture_output=True,
        check=True,
    )
    assert format_hex_block(out.stdout) == sign_md5_hex(keys.private_text, MD5_OF_HELLO)


@needs_openssl
def test_key_generated_by_openssl_signs_as_boinc_expects(tmp_path: Path) -> None:
    assert OPENSSL is not None
    pem = subprocess.run([OPENSSL, "genrsa", "1024"], capture_output=True, check=True).stdout
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    private_text = private_key_to_text(key)
    signature = sign_md5_hex(private_text, MD5_OF_HELLO)
    assert verify_md5_signature(public_text_from_private(private_text), MD5_OF_HELLO, signature) is True


# --- tampering and garbage (hypothesis) ----------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(index=st.integers(min_value=0, max_value=127), mask=st.integers(min_value=1, max_value=255))
def test_any_tampered_signature_fails(keys: KeyPair, index: int, mask: int) -> None:
    raw = bytearray(parse_hex_block(sign_md5_hex(keys.private_text, MD5_OF_HELLO)))
    raw[index] ^= mask
    assert verify_md5_signature(keys.public_text, MD5_OF_HELLO, format_hex_block(bytes(raw))) is False


@settings(max_examples=200, deadline=None)
@given(other=HEX_LINE)
def test_any_other_md5_fails(keys: KeyPair, other: str) -> None:
    signature = sign_md5_hex(keys.private_text, MD5_OF_HELLO)
    expected = other == MD5_OF_HELLO
    assert verify_md5_signature(keys.public_text, other, signature) is expected


@settings(max_examples=200, deadline=None)
@given(public=st.text(), md5=st.text(), signature=st.text())
def test_garbage_never_raises(keys: KeyPair, public: str, md5: str, signature: str) -> None:
    assert verify_md5_signature(public, md5, signature) is False
    assert verify_md5_signature(keys.public_text, MD5_OF_HELLO, signature) is False
    assert verify_text_signature(public, md5, signature) is False


@settings(max_examples=100, deadline=None)
@given(key_bytes=st.binary(min_size=256, max_size=256), sig_bytes=st.binary(min_size=128, max_size=128))
def test_well_formed_random_key_and_signature_never_raise(key_bytes: bytes, sig_bytes: bytes) -> None:
    public = "1024\n" + format_hex_block(key_bytes)
    assert verify_md5_signature(public, MD5_OF_HELLO, format_hex_block(sig_bytes)) is False
