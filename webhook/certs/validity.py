"""Whether a certificate pair can serve: a pure function of PEM bytes and an explicit ``now``.

:func:`problems` lists every reason a pair cannot serve (expired or not yet valid, key
mismatch, not issued by the CA, hostnames not covered); :func:`is_valid` means "no problems".
"""

from __future__ import annotations

import ipaddress
import typing as t
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm

from webhook.certs.generate import CertBundle
from webhook.certs.pem import load_certs, load_key, spki, utc

if t.TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["is_valid", "issued_by", "not_after", "problems"]


def _validity(cert: x509.Certificate, label: str, now: datetime, lookahead: timedelta) -> list[str]:
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if now < start:
        return [f"{label}: not valid before {start:%Y-%m-%d %H:%M} UTC; check the clock or re-issue it"]
    if now >= end:
        return [f"{label}: expired on {end:%Y-%m-%d %H:%M} UTC; re-issue it"]
    if now + lookahead >= end:
        left = (end - now).days
        return [f"{label}: expires on {end:%Y-%m-%d %H:%M} UTC ({left} days left, inside the renewal window)"]
    return []


def _sans(cert: x509.Certificate) -> list[x509.GeneralName]:
    try:
        return list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except (x509.ExtensionNotFound, ValueError):  # ValueError: a malformed extension
        return []  # the CN is not consulted: Go (hence the apiserver) ignores it since 1.15


def _covers(sans: list[x509.GeneralName], host: str) -> bool:
    try:
        return ipaddress.ip_address(host) in [n.value for n in sans if isinstance(n, x509.IPAddress)]
    except ValueError:
        pass
    host = host.lower().rstrip(".")
    for name in (n.value.lower().rstrip(".") for n in sans if isinstance(n, x509.DNSName)):
        # A wildcard stands for exactly one leftmost label (RFC 6125 §6.4.3).
        if name == host or (name.startswith("*.") and "." in host and host.split(".", 1)[1] == name[2:]):
            return True
    return False


def issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` signed ``cert`` (any failure to verify, whatever its kind, is a no)."""
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    return True


def problems(
    cert_pem: bytes,
    key_pem: bytes,
    *,
    now: datetime,
    ca_pem: bytes | None = None,
    lookahead: timedelta = timedelta(0),
    hostnames: Sequence[str] = (),
    labels: tuple[str, str, str] = ("certificate", "private key", "CA certificate"),
) -> list[str]:
    """Every reason ``cert_pem``/``key_pem`` cannot serve TLS at ``now`` or within ``lookahead``.

    ``labels`` name the certificate, key and CA in the messages (the CLI passes file names).
    Never raises on malformed input: unparsable parts are reported like any other problem.
    """
    cert_label, key_label, ca_label = labels
    found: list[str] = []
    cert = key = None
    try:
        cert = load_certs(cert_pem, cert_label)[0]  # a chain file lists the leaf first
    except ValueError as exc:
        found.append(str(exc))
    try:
        key = load_key(key_pem, key_label)
    except ValueError as exc:
        found.append(str(exc))
    if cert is None:
        return found  # nothing else can be judged without the certificate
    now = utc(now)
    found += _validity(cert, cert_label, now, lookahead)
    if (cert_key := spki(cert)) is None:
        found.append(f"{cert_label}: its public key type is not supported; issue it for an EC or RSA key")
    elif key is not None and spki(key) != cert_key:
        found.append(f"{key_label}: does not belong to the {cert_label}; use the key it was issued with")
    if ca_pem is not None:
        try:
            cas = load_certs(ca_pem, ca_label)
        except ValueError as exc:
            found.append(str(exc))
        else:
            issuer = next((ca for ca in cas if issued_by(cert, ca)), None)
            if issuer is None:
                found.append(f"{cert_label}: not signed by the {ca_label}; re-issue it or pass its CA")
            else:
                found += _validity(issuer, ca_label, now, lookahead)  # a chain dies with its CA
    sans = _sans(cert)
    for host in hostnames:
        if not _covers(sans, host):
            names = ", ".join(str(n.value) for n in sans) or "no subjectAltName at all"
            found.append(
                f"{cert_label}: does not cover {host!r} (it covers {names}); re-issue it with that name"
            )
    return found


def is_valid(
    bundle: CertBundle, *, now: datetime, lookahead: timedelta, hostnames: Sequence[str] = ()
) -> bool:
    pems = bundle.cert_pem, bundle.key_pem
    return not problems(*pems, now=now, ca_pem=bundle.ca_pem, lookahead=lookahead, hostnames=hostnames)


def not_after(cert_pem: bytes) -> datetime:
    """The UTC expiry of the first certificate in ``cert_pem``; ``ValueError`` if unparsable."""
    return load_certs(cert_pem, "certificate")[0].not_valid_after_utc
