"""Generating certificates: a CA, a serving certificate signed by it, and both as a bundle.

Lifetimes follow open-policy-agent/cert-controller (docs/design.md, certificates): CA 10
years, serving certificate 1 year, renewed well before expiry. Naive datetimes are UTC.
"""

from __future__ import annotations

import ipaddress
import typing as t
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.certs.pem import load_certs, load_key, spki, utc

if t.TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CA_VALIDITY", "CLOCK_SKEW", "SERVING_VALIDITY", "CertBundle", "KeyPair", "generate_bundle", "generate_ca",
    "generate_serving_cert", "service_dns_names",
]  # fmt: skip

CA_VALIDITY: t.Final = timedelta(days=3650)
SERVING_VALIDITY: t.Final = timedelta(days=365)
# notBefore is backdated: a client whose clock runs a little behind ours would otherwise
# reject a certificate "from the future" for its first minutes (e.g. right after install).
CLOCK_SKEW: t.Final = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True)
class CertBundle:
    """What the server presents (``cert_pem``, ``key_pem``) and what clients trust (``ca_pem``)."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


# --- generation -----------------------------------------------------------------------------


def _name(common_name: str) -> x509.Name:
    # RFC 5280 caps the CN at 64 characters. Clients match SANs only, so a longer first name
    # just leaves the CN out rather than failing.
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "wasp")]
    if 0 < len(common_name) <= 64:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _sign(
    builder: x509.CertificateBuilder, subject: x509.Name, *, ca: bool, signer: t.Any | None = None
) -> KeyPair:
    """Add what CA and leaf share (fresh P-256 key, serial, SKI, key usage) and sign."""
    # P-256: accepted by every TLS stack the apiserver and kubectl use; keygen is instant.
    key = ec.generate_private_key(ec.SECP256R1())
    unused = ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement")
    usage = x509.KeyUsage(
        digital_signature=True, key_cert_sign=ca, crl_sign=ca, encipher_only=False, decipher_only=False,
        **dict.fromkeys(unused, False),
    )  # fmt: skip
    cert = (
        builder.subject_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(signer or key, hashes.SHA256())
    )
    fmt, plain = serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    return KeyPair(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, fmt, plain),
    )


def generate_ca(*, common_name: str, now: datetime, valid_for: timedelta = CA_VALIDITY) -> KeyPair:
    """A self-signed CA that may sign end-entity certificates only (pathlen 0)."""
    now, name = utc(now), _name(common_name)
    builder = x509.CertificateBuilder().issuer_name(name)
    return _sign(builder.not_valid_before(now - CLOCK_SKEW).not_valid_after(now + valid_for), name, ca=True)


def generate_serving_cert(
    ca: KeyPair,
    *,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    now: datetime,
    valid_for: timedelta = SERVING_VALIDITY,
) -> KeyPair:
    """A serverAuth certificate for ``dns_names`` and ``ip_addresses`` signed by ``ca``.

    ``notAfter`` is capped at the CA's: a chain is only valid while its CA is. Raises
    ``ValueError`` (with an operator-facing message) for no names, a bad IP or an unusable CA.
    """
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    ips = [ipaddress.ip_address(ip) for ip in ip_addresses]
    ca_cert, ca_key = load_certs(ca.cert_pem, "CA certificate")[0], load_key(ca.key_pem, "CA key")
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("CA key: only EC and RSA keys are supported for signing")
    if spki(ca_key) != spki(ca_cert):
        raise ValueError("CA key: does not belong to the CA certificate")
    try:
        is_ca = ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise ValueError("CA certificate: not a CA (basicConstraints CA:TRUE is missing)")
    try:  # the AKI must repeat the CA's SKI verbatim, however the CA computed it
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)
    except x509.ExtensionNotFound:
        aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    now = utc(now)
    sans = [*(x509.DNSName(n) for n in dns_names), *(x509.IPAddress(ip) for ip in ips)]
    builder = (
        x509.CertificateBuilder()
        .issuer_name(ca_cert.subject)
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + valid_for, ca_cert.not_valid_after_utc))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(aki, critical=False)
    )
    return _sign(builder, _name(dns_names[0] if dns_names else str(ips[0])), ca=False, signer=ca_key)


def generate_bundle(
    *, dns_names: Sequence[str], ip_addresses: Sequence[str] = (), now: datetime
) -> CertBundle:
    """A fresh CA plus a serving certificate. The CA key is discarded: renewing means a new CA."""
    ca = generate_ca(common_name="wasp-webhook-ca", now=now)
    served = generate_serving_cert(ca, dns_names=dns_names, ip_addresses=ip_addresses, now=now)
    return CertBundle(ca.cert_pem, served.cert_pem, served.key_pem)


def service_dns_names(service: str, namespace: str, *, cluster_domain: str = "cluster.local") -> list[str]:
    """The names under which the apiserver (and in-cluster clients) may reach a Service."""
    svc = f"{service}.{namespace}.svc"
    return [service, f"{service}.{namespace}", svc, f"{svc}.{cluster_domain}"]


# --- checking -------------------------------------------------------------------------------
