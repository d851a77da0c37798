"""A self-signed certificate for 127.0.0.1, so a stack on loopback serves HTTPS as in production.

The BOINC client trusts it through ``ca-bundle.crt`` in its data directory (the file curl
is pointed at), a browser through ``ignore_https_errors``, urllib through ``ssl_context``.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from apps.core.private_files import private_write


def self_signed_certificate(directory: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """(certificate, key) PEM files for ``host`` (an IP address), valid for a week."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    private_write(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    return cert_path, key_path


def ssl_context(cert_path: Path) -> ssl.SSLContext:
    """A client context that trusts exactly this certificate."""
    return ssl.create_default_context(cafile=str(cert_path))
