"""Certificate fingerprints as reports and the preflight show them (``sha256:`` and hex, as ``openssl x509
-fingerprint -sha256`` computes them over the DER bytes)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def fingerprint_der(der: bytes) -> str:
    """``sha256:`` and the hex SHA-256 of a DER certificate (what ``openssl x509 -fingerprint -sha256`` shows)."""
    return "sha256:" + hashlib.sha256(der).hexdigest()


def fingerprint_pem(path: Path) -> str | None:
    """The fingerprint of the first certificate in a PEM file; None if it cannot be read."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None
    return fingerprint_der(cert.public_bytes(Encoding.DER))


__all__ = ["fingerprint_der", "fingerprint_pem"]
