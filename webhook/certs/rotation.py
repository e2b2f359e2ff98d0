"""Self-managed certificate rotation: one pure step from the Secret's contents and ``now``.

The Secret (``wasp certs rotate`` reads and writes it; the chart creates it) is the source
of truth. It holds the signing CA (``ca.crt``, ``ca.key``), optionally a staged CA
(``next-ca.crt``, ``next-ca.key``), the serving pair (``tls.crt``, ``tls.key``) and the
bundle every webhook configuration's ``caBundle`` carries (``ca-bundle.crt``).

:func:`plan_rotation` is called every few hours and changes as little as it can:

1. a CA that cannot sign any more (unreadable, expired, wrong key) is replaced at once,
   together with the serving certificate; unexpired CAs of the old bundle stay trusted;
2. CAs that expired leave the bundle;
3. a signing CA with less than ``ca_renew_before`` left gets a *staged* successor, added to
   the bundle but not yet signing;
4. a staged CA that has been in the bundle for ``overlap`` becomes the signing CA and signs a
   new serving certificate (the old CA stays in the bundle);
5. a CA that no longer signs leaves the bundle once the serving certificate it signed has
   been replaced for ``overlap`` (every pod has loaded the new one by then);
6. a serving certificate that expires within ``renew_before``, or does not serve the
   Service's names, is re-issued by the signing CA.

So every bundle trusts the serving certificate before and after each step, and the bundle
before a step already trusts the certificate issued in it (except after a replacement in
step 1, when nothing valid was left to trust): the apiserver, which gets the new bundle
before the pods get the new certificate, and the pods never disagree.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import Encoding, load_pem_private_key

from webhook.certs.generate import (
    CA_VALIDITY,
    CLOCK_SKEW,
    SERVING_VALIDITY,
    KeyPair,
    generate_ca,
    generate_serving_cert,
)
from webhook.certs.pem import spki, utc
from webhook.certs.validity import problems

if t.TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["Material", "Rotation", "RotationPolicy", "Step", "plan_rotation"]

# What a rotation step did (the numbers of the module docstring).
Step = t.Literal[
    "replace-ca",
    "drop-staged",
    "drop-expired",
    "stage-ca",
    "promote-ca",
    "renew-serving",
    "retire-ca",
    "rewrite-bundle",
]


@dataclass(frozen=True, slots=True)
class Material:
    """The Secret's contents. ``next_ca`` ``None``: no CA is staged."""

    ca: KeyPair
    serving: KeyPair
    bundle: bytes
    next_ca: KeyPair | None = None

    @classmethod
    def from_secret(cls, data: Mapping[str, bytes]) -> Material:
        """From decoded Secret data; missing keys read as empty (and are then repaired)."""

        def get(key: str) -> bytes:
            return data.get(key, b"")

        staged = KeyPair(get("next-ca.crt"), get("next-ca.key")) if get("next-ca.crt") else None
        return cls(
            KeyPair(get("ca.crt"), get("ca.key")),
            KeyPair(get("tls.crt"), get("tls.key")),
            get("ca-bundle.crt"),
            staged,
        )

    def to_secret(self) -> dict[str, bytes]:
        data = {"ca.crt": self.ca.cert_pem, "ca.key": self.ca.key_pem, "tls.crt": self.serving.cert_pem,
                "tls.key": self.serving.key_pem, "ca-bundle.crt": self.bundle}  # fmt: skip
        if self.next_ca is not None:
            data |= {"next-ca.crt": self.next_ca.cert_pem, "next-ca.key": self.next_ca.key_pem}
        return data


@dataclass(frozen=True, slots=True)
class RotationPolicy:
    """Lifetimes and margins (cert-controller's: CA 10 years, serving 1 year, renewal 90 days
    early). ``ca_renew_before`` defaults to a serving lifetime plus both margins, so a CA is
    always succeeded before it would cap a serving certificate inside the renewal window."""

    ca_validity: timedelta = CA_VALIDITY
    serving_validity: timedelta = SERVING_VALIDITY
    renew_before: timedelta = timedelta(days=90)
    overlap: timedelta = timedelta(hours=24)
    ca_renew_before: timedelta | None = None

    @property
    def ca_margin(self) -> timedelta:
        if self.ca_renew_before is not None:
            return self.ca_renew_before
        return self.serving_validity + self.renew_before + self.overlap


@dataclass(frozen=True, slots=True)
class Rotation:
    """The Secret's next contents and what was done: ``(step, sentence)`` per change."""

    material: Material
    actions: tuple[tuple[Step, str], ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.actions)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(step for step, _ in self.actions)


def _certs(pem: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem) if pem.strip() else []
    except ValueError:
        return []


def _id(cert: x509.Certificate) -> bytes:
    return cert.fingerprint(hashes.SHA256())


def _pem(certs: Sequence[x509.Certificate]) -> bytes:
    unique = {_id(cert): cert for cert in reversed(certs)}  # the first occurrence wins
    return b"".join(c.public_bytes(Encoding.PEM) for c in reversed(unique.values()))


def _created(cert: x509.Certificate) -> datetime:
    # notBefore is backdated by CLOCK_SKEW when wasp issues a certificate; counting from the
    # later instant only ever lengthens an overlap.
    return cert.not_valid_before_utc + CLOCK_SKEW


def _ca_problems(ca: KeyPair, now: datetime) -> list[str]:
    """Why ``ca`` cannot sign at ``now``: unreadable, not a CA, outside its validity, wrong key.

    Unlike :func:`problems` this skips OpenSSL's RSA consistency proof (~30 ms per key, run
    on every check): the key is the one this module wrote, and a key that signs wrongly is
    caught anyway, because the serving certificate it signs then fails the next check.
    """
    certs = _certs(ca.cert_pem)
    if not certs:
        return ["the signing CA certificate is missing or unreadable"]
    cert = certs[0]
    if not cert.not_valid_before_utc <= now < cert.not_valid_after_utc:
        return [
            f"the signing CA is valid only from {cert.not_valid_before_utc:%Y-%m-%d} to {cert.not_valid_after_utc:%Y-%m-%d}"
        ]
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        key = load_pem_private_key(ca.key_pem, password=None, unsafe_skip_rsa_key_validation=True)
    except (x509.ExtensionNotFound, ValueError, TypeError, UnsupportedAlgorithm):
        return ["the signing CA is not a CA, or its key is missing or unreadable"]
    if not is_ca or spki(key) != spki(cert):
        return ["the signing CA is not a CA, or its key does not belong to it"]
    return []


def plan_rotation(
    material: Material, *, now: datetime, policy: RotationPolicy, hostnames: Sequence[str], ca_name: str
) -> Rotation:
    """The next contents of the Secret at ``now`` (the steps of the module docstring).

    ``hostnames`` are the names the serving certificate must cover (the first is its CN);
    ``ca_name`` is the common name of a new CA. Never raises on unusable input: it is
    repaired, and the repair is one of the actions.
    """
    now = utc(now)
    actions: list[tuple[Step, str]] = []
    ca, serving, staged = material.ca, material.serving, material.next_ca
    trusted = _certs(material.bundle)

    def new_ca() -> KeyPair:
        return generate_ca(common_name=ca_name[:64], now=now, valid_for=policy.ca_validity)

    def new_serving(signer: KeyPair) -> KeyPair:
        return generate_serving_cert(signer, dns_names=hostnames, now=now, valid_for=policy.serving_validity)

    issued = False  # a serving certificate was issued in this step
    # 1. a CA that cannot sign is replaced with its serving certificate at once
    if broken := _ca_problems(ca, now):
        ca = new_ca()
        serving, issued = new_serving(ca), True
        staged = None
        actions.append(
            ("replace-ca", f"replaced the signing CA ({'; '.join(broken)}) and issued a serving certificate")
        )
    if staged is not None and _ca_problems(staged, now):
        staged = None
        actions.append(("drop-staged", "dropped the staged CA, which cannot sign"))
    # 2. expired CAs leave the bundle
    alive = [c for c in trusted if c.not_valid_after_utc > now]
    if len(alive) != len(trusted):
        actions.append(("drop-expired", f"removed {len(trusted) - len(alive)} expired CA(s) from the bundle"))
    # 3. stage a successor for a CA that is about to run out
    ca_cert = _certs(ca.cert_pem)[0]
    if staged is None and ca_cert.not_valid_after_utc - now <= policy.ca_margin:
        staged = new_ca()
        expires = f"{ca_cert.not_valid_after_utc:%Y-%m-%d}"
        actions.append(("stage-ca", f"staged a new CA in the bundle (the signing CA expires {expires})"))
    # 4. promote a staged CA that has been trusted for the overlap
    if staged is not None and now - _created(_certs(staged.cert_pem)[0]) >= policy.overlap:
        ca, staged = staged, None
        ca_cert = _certs(ca.cert_pem)[0]
        serving, issued = new_serving(ca), True
        actions.append(("promote-ca", "the staged CA now signs; issued a serving certificate with it"))
    # 6. renew a serving certificate that is due or does not fit
    due = problems(serving.cert_pem, serving.key_pem, now=now, ca_pem=ca.cert_pem, lookahead=policy.renew_before,
                   hostnames=hostnames, labels=("serving certificate", "serving key", "signing CA"))  # fmt: skip
    if due and not issued:
        serving = new_serving(ca)
        actions.append(("renew-serving", f"renewed the serving certificate ({'; '.join(due)})"))
    # 5. retire CAs that no longer sign, once the certificate they signed is overlap-old
    keep = [ca_cert, *(_certs(staged.cert_pem) if staged else [])]
    served_for = now - _created(_certs(serving.cert_pem)[0])
    others = [c for c in alive if _id(c) not in {_id(k) for k in keep}]
    retired = others if served_for >= policy.overlap else []
    if retired:
        actions.append(("retire-ca", f"removed {len(retired)} retired CA(s) from the bundle"))
    wanted = [*keep, *(c for c in others if c not in retired)]
    if [_id(c) for c in wanted] == [_id(c) for c in trusted]:
        bundle = material.bundle  # the same certificates: keep the bytes (no needless patch)
    else:
        bundle = _pem(wanted)
        if not actions:
            actions.append(("rewrite-bundle", "rewrote the bundle (it did not list the signing CA first)"))
    result = replace(material, ca=ca, serving=serving, next_ca=staged, bundle=bundle)
    return Rotation(result, tuple(actions))
