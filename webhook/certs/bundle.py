"""TLS certificates for the webhook: generation, a pure validity check, and file helpers.

Whatever decides anything is a pure function of PEM bytes and an explicit ``now`` (style
§1.F): ``problems`` lists every reason a pair cannot serve; ``is_valid`` means "no problems".
Lifetimes follow open-policy-agent/cert-controller (spec §7 C2): CA 10 years, serving
certificate 1 year, renewed well before expiry. Naive datetimes are taken as UTC.
Only ``fingerprint``, ``write_bundle`` and ``ensure_dev_certs`` touch the filesystem.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import tempfile
import typing as t
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

if t.TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CertBundle", "DevCerts", "KeyPair", "ensure_dev_certs", "fingerprint", "generate_bundle", "generate_ca",
    "generate_serving_cert", "is_valid", "not_after", "problems", "service_dns_names", "write_bundle",
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


def _utc(now: datetime) -> datetime:
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


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
    now, name = _utc(now), _name(common_name)
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
    ca_cert, ca_key = _load_certs(ca.cert_pem, "CA certificate")[0], _load_key(ca.key_pem, "CA key")
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError("CA key: only EC and RSA keys are supported for signing")
    if _spki(ca_key) != _spki(ca_cert):
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
    now = _utc(now)
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


def _load_certs(pem: bytes, label: str) -> list[x509.Certificate]:
    if not pem.strip():
        raise ValueError(f"{label}: the file is empty")
    if b"PRIVATE KEY-----" in pem and b"CERTIFICATE-----" not in pem:
        raise ValueError(f"{label}: holds a private key, not a certificate (files swapped?)")
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError as exc:
        raise ValueError(f"{label}: not a PEM certificate ({exc})") from None


def _load_key(pem: bytes, label: str) -> t.Any:
    if not pem.strip():
        raise ValueError(f"{label}: the file is empty")
    try:
        return serialization.load_pem_private_key(pem, password=None)
    except TypeError:  # cryptography's signal for "encrypted, and no password given"
        raise ValueError(f"{label}: the key is encrypted; wasp needs an unencrypted PEM key") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"{label}: not a PEM private key ({exc})") from None


def _spki(holder: t.Any) -> bytes | None:
    """The DER public key of a certificate or private key; None if cryptography cannot read it."""
    try:
        der, fmt = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        return t.cast(bytes, holder.public_key().public_bytes(der, fmt))
    except (ValueError, UnsupportedAlgorithm):  # e.g. a certificate for an unknown key type
        return None


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


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
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
        cert = _load_certs(cert_pem, cert_label)[0]  # a chain file lists the leaf first
    except ValueError as exc:
        found.append(str(exc))
    try:
        key = _load_key(key_pem, key_label)
    except ValueError as exc:
        found.append(str(exc))
    if cert is None:
        return found  # nothing else can be judged without the certificate
    now = _utc(now)
    found += _validity(cert, cert_label, now, lookahead)
    if (cert_key := _spki(cert)) is None:
        found.append(f"{cert_label}: its public key type is not supported; issue it for an EC or RSA key")
    elif key is not None and _spki(key) != cert_key:
        found.append(f"{key_label}: does not belong to the {cert_label}; use the key it was issued with")
    if ca_pem is not None:
        try:
            cas = _load_certs(ca_pem, ca_label)
        except ValueError as exc:
            found.append(str(exc))
        else:
            issuer = next((ca for ca in cas if _issued_by(cert, ca)), None)
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
    return _load_certs(cert_pem, "certificate")[0].not_valid_after_utc


# --- files ----------------------------------------------------------------------------------


def fingerprint(*paths: Path) -> str:
    """A content hash of ``paths``, to notice that a mounted Secret changed (spec §7 C4).

    A missing or unreadable file hashes to a fixed marker, so this never raises, and a file
    that disappears mid-rotation reads as a change rather than a crash.
    """
    digest = hashlib.sha256()
    for path in paths:
        try:
            data = b"file:" + path.read_bytes()
        except FileNotFoundError:
            data = b"missing"
        except OSError as exc:
            data = b"unreadable:%d" % (exc.errno or 0)
        digest.update(hashlib.sha256(data).digest())  # per-file digests keep file boundaries unambiguous
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    # Readers (a reload loop) see the old file or the new one, never a torn write; the mode is
    # set before any secret byte lands on disk.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bundle(directory: Path, bundle: CertBundle) -> tuple[Path, Path, Path]:
    """Write ``ca.crt`` and ``tls.crt`` (0644) and ``tls.key`` (0600); return the three paths.

    Each file is replaced atomically, the three together are not: a reader may briefly see the
    new key with the old certificate. ``problems`` reports that as a mismatch, so a reloader
    keeps the old pair and retries on its next tick.
    """
    ca, crt, key = directory / "ca.crt", directory / "tls.crt", directory / "tls.key"
    _write_atomic(ca, bundle.ca_pem, 0o644)
    _write_atomic(key, bundle.key_pem, 0o600)
    _write_atomic(crt, bundle.cert_pem, 0o644)
    return ca, crt, key


@dataclass(frozen=True, slots=True)
class DevCerts:
    ca_file: Path
    cert_file: Path
    key_file: Path
    created: bool  # False: the files on disk were valid and left untouched
    reasons: tuple[str, ...] = ()  # why files were (re)created; empty on reuse


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # reported by problems() as an empty file


def ensure_dev_certs(
    state_dir: Path,
    *,
    now: datetime,
    hostnames: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1", "::1"),
    lookahead: timedelta = timedelta(days=30),
) -> DevCerts:
    """Certificates for local development in ``state_dir``, reused while they stay valid.

    The CA key is kept beside them (``ca.key``, 0600) so that a stale serving certificate is
    re-issued under the same CA and whoever trusted ``ca.crt`` keeps trusting it. Only an
    unusable CA (missing, corrupt, expiring within ``lookahead``) regenerates everything.
    """
    if not state_dir.exists():
        state_dir.mkdir(parents=True)
        state_dir.chmod(0o700)  # explicit: mkdir(mode=...) is filtered by the umask
    ca_key_file = state_dir / "ca.key"
    ca_file, cert_file, key_file = state_dir / "ca.crt", state_dir / "tls.crt", state_dir / "tls.key"
    ca = KeyPair(_read(ca_file), _read(ca_key_file))
    ca_labels = (f"CA certificate {ca_file}", f"CA key {ca_key_file}", "")
    if not ca_file.exists() and not ca_key_file.exists():
        reasons = [f"{state_dir} holds no CA yet"]
    else:
        reasons = problems(ca.cert_pem, ca.key_pem, now=now, lookahead=lookahead, labels=ca_labels)
    if reasons:
        ca = generate_ca(common_name="wasp-dev-ca", now=now)
        _write_atomic(ca_key_file, ca.key_pem, 0o600)
    else:
        labels = (f"certificate {cert_file}", f"key {key_file}", f"CA certificate {ca_file}")
        hosts = [*hostnames, *ip_addresses]
        pems = _read(cert_file), _read(key_file)
        reasons = problems(
            *pems, now=now, ca_pem=ca.cert_pem, lookahead=lookahead, hostnames=hosts, labels=labels
        )
        if not reasons:
            return DevCerts(ca_file, cert_file, key_file, created=False)
    served = generate_serving_cert(ca, dns_names=hostnames, ip_addresses=ip_addresses, now=now)
    write_bundle(state_dir, CertBundle(ca.cert_pem, served.cert_pem, served.key_pem))
    return DevCerts(ca_file, cert_file, key_file, created=True, reasons=tuple(reasons))
