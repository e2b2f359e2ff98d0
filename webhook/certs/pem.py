"""Reading PEM: certificates, private keys and their public-key identity, with errors that name the input."""

from __future__ import annotations

import typing as t
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

__all__ = ["load_certs", "load_key", "spki", "utc"]


def utc(now: datetime) -> datetime:
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


def load_certs(pem: bytes, label: str) -> list[x509.Certificate]:
    if not pem.strip():
        raise ValueError(f"{label}: the file is empty")
    if b"PRIVATE KEY-----" in pem and b"CERTIFICATE-----" not in pem:
        raise ValueError(f"{label}: holds a private key, not a certificate (files swapped?)")
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise ValueError(f"{label}: not a PEM certificate ({exc})") from None


def load_key(pem: bytes, label: str) -> t.Any:
    if not pem.strip():
        raise ValueError(f"{label}: the file is empty")
    try:
        return serialization.load_pem_private_key(pem, password=None)
    except TypeError:  # cryptography's signal for "encrypted, and no password given"
        raise ValueError(f"{label}: the key is encrypted; wasp needs an unencrypted PEM key") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"{label}: not a PEM private key ({exc})") from None


def spki(holder: t.Any) -> bytes | None:
    """The DER public key of a certificate or private key; None if cryptography cannot read it."""
    try:
        der, fmt = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        return t.cast(bytes, holder.public_key().public_bytes(der, fmt))
    except (ValueError, UnsupportedAlgorithm):  # e.g. a certificate for an unknown key type
        return None
