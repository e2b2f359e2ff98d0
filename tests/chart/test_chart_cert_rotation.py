"""The self-managed certificate lifecycle against an explicit clock (webhook/certs/rotation.py).

Starting from what the chart's Secret holds after `helm install`, `plan_rotation` is applied
at every check of the CronJob's schedule, over more than a CA lifetime. At every step:

* the new bundle trusts the new serving certificate, for `<svc>.<ns>.svc`;
* the new bundle still trusts the serving certificate before the step (a pod the kubelet
  has not synced yet), and the bundle before the step already trusts the new one (the
  apiserver before its caBundle is patched): the two never disagree;
* the serving certificate never comes closer to expiry than the renewal margin.
"""

from __future__ import annotations

import base64
import typing as t
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509

from tests.chart.conftest import Rendering
from webhook.certs import generate_bundle, not_after, problems
from webhook.certs.generate import KeyPair, generate_ca, generate_serving_cert
from webhook.certs.rotation import Material, RotationPolicy, Step, plan_rotation

HOSTS: t.Final = ["wasp", "wasp.wasp-system", "wasp.wasp-system.svc", "wasp.wasp-system.svc.cluster.local"]
SVC: t.Final = "wasp.wasp-system.svc"
CA_NAME: t.Final = "wasp.wasp-system webhook CA"


_FULL_CHECKS: dict[tuple[bytes, bytes, bytes], list[str]] = {}


def trusted(serving: KeyPair, bundle: bytes, now: datetime) -> list[str]:
    """Why a client trusting ``bundle`` would refuse ``serving`` for ``SVC`` at ``now``.

    The full check (key pair included; ~30 ms for the chart's RSA keys) runs once per pair and
    bundle; on later instants only the validity periods, which are all that change, are checked.
    """
    key = (serving.cert_pem, serving.key_pem, bundle)
    if key not in _FULL_CHECKS:
        _FULL_CHECKS[key] = problems(
            serving.cert_pem, serving.key_pem, now=now, ca_pem=bundle, hostnames=[SVC]
        )
    if _FULL_CHECKS[key]:
        return problems(serving.cert_pem, serving.key_pem, now=now, ca_pem=bundle, hostnames=[SVC])
    leaf = x509.load_pem_x509_certificate(serving.cert_pem)
    issuers = [
        ca
        for ca in x509.load_pem_x509_certificates(bundle)
        if ca.subject == leaf.issuer and _signed(leaf, ca)
    ]
    return [
        f"{label} not valid at {now}"
        for label, cert in [("serving certificate", leaf), *(("CA", ca) for ca in issuers[:1])]
        if not cert.not_valid_before_utc <= now < cert.not_valid_after_utc
    ] + ([] if issuers else ["no CA of the bundle signed it"])


def _signed(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        leaf.verify_directly_issued_by(ca)
    except Exception:
        return False
    return True


def installed(rendering: Rendering) -> Material:
    data = rendering.find("Secret", "-tls")["data"]
    return Material.from_secret({k: base64.b64decode(v) for k, v in data.items()})


def not_before(pem: bytes) -> datetime:
    return x509.load_pem_x509_certificate(pem).not_valid_before_utc


@dataclass
class Timeline:
    """What a run of checks did, for the assertions."""

    steps: list[tuple[datetime, tuple[Step, ...]]] = field(default_factory=list)
    bundle_sizes: list[int] = field(default_factory=list)
    violations: list[tuple[datetime, str, list[str]]] = field(default_factory=list)
    closest_to_expiry: timedelta = timedelta.max


def run(
    material: Material, *, start: datetime, until: datetime, every: timedelta, policy: RotationPolicy
) -> Timeline:
    timeline = Timeline()
    now = start
    while now <= until:
        rotation = plan_rotation(material, now=now, policy=policy, hostnames=HOSTS, ca_name=CA_NAME)
        new = rotation.material
        checks = {
            "the new bundle trusts the new serving certificate": trusted(new.serving, new.bundle, now),
            "the new bundle trusts the previous serving certificate": trusted(material.serving, new.bundle, now)
            if not trusted(material.serving, material.bundle, now) else [],
            "the previous bundle trusts the new serving certificate": trusted(new.serving, material.bundle, now)
            if "replace-ca" not in rotation.steps else [],
        }  # fmt: skip
        timeline.violations += [(now, name, found) for name, found in checks.items() if found]
        timeline.closest_to_expiry = min(timeline.closest_to_expiry, not_after(new.serving.cert_pem) - now)
        timeline.bundle_sizes.append(new.bundle.count(b"BEGIN CERTIFICATE"))
        if rotation.steps:
            timeline.steps.append((now, rotation.steps))
        material = new
        now += every
    return timeline


def test_from_the_charts_secret_over_eleven_years_every_check_keeps_trust(default: Rendering) -> None:
    material = installed(default)
    start = not_before(material.ca.cert_pem)
    policy = RotationPolicy()  # the chart's defaults: CA 10 y, serving 1 y, renew 90 d early, overlap 24 h
    timeline = run(material, start=start, until=start + timedelta(days=11 * 365), every=timedelta(days=1),
                   policy=policy)  # fmt: skip
    assert timeline.violations == []
    assert timeline.closest_to_expiry > policy.renew_before - timedelta(days=1)
    kinds = [s for _, steps in timeline.steps for s in steps]
    assert kinds.count("stage-ca") == 1 and kinds.count("promote-ca") == 1 and kinds.count("retire-ca") == 1
    assert kinds.count("renew-serving") >= 10  # about once a year
    assert "replace-ca" not in kinds
    assert max(timeline.bundle_sizes) == 2 and timeline.bundle_sizes[-1] == 1


def test_both_cas_are_in_the_bundle_for_the_whole_overlap() -> None:
    """A scaled policy (days instead of years) checked every hour, so the overlap is resolved."""
    start = datetime(2030, 1, 1, tzinfo=UTC)
    policy = RotationPolicy(ca_validity=timedelta(days=40), serving_validity=timedelta(days=10),
                            renew_before=timedelta(days=3), overlap=timedelta(hours=12))  # fmt: skip
    bundle = generate_bundle(dns_names=HOSTS, now=start)
    ca = generate_ca(common_name=CA_NAME, now=start, valid_for=policy.ca_validity)
    serving = generate_serving_cert(ca, dns_names=HOSTS, now=start, valid_for=policy.serving_validity)
    del bundle
    material = Material(ca=ca, serving=serving, bundle=ca.cert_pem)
    timeline = run(
        material, start=start, until=start + timedelta(days=90), every=timedelta(hours=1), policy=policy
    )
    assert timeline.violations == []
    at = {steps: when for when, all_steps in timeline.steps for steps in all_steps}
    assert at["promote-ca"] - at["stage-ca"] >= policy.overlap
    assert at["retire-ca"] - at["promote-ca"] >= policy.overlap
    hours = timeline.bundle_sizes
    staged, retired = (int((at[s] - start) / timedelta(hours=1)) for s in ("stage-ca", "retire-ca"))
    assert set(hours[staged:retired]) == {2} and hours[retired] == 1
    assert timeline.closest_to_expiry > policy.renew_before - timedelta(hours=1)


def test_an_unchanged_secret_is_left_alone(default: Rendering) -> None:
    material = installed(default)
    now = not_before(material.ca.cert_pem) + timedelta(days=30)
    rotation = plan_rotation(material, now=now, policy=RotationPolicy(), hostnames=HOSTS, ca_name=CA_NAME)
    assert (rotation.changed, rotation.material) == (False, material)


BROKEN: t.Final = [
    ("an expired serving certificate is renewed by the same CA", timedelta(days=400), {"renew-serving"}),
    ("a serving certificate in the renewal window is renewed", timedelta(days=300), {"renew-serving"}),
    (
        "an expired CA is replaced with its serving certificate",
        timedelta(days=3700),
        {"replace-ca", "drop-expired"},
    ),
]


@pytest.mark.parametrize(("sentence", "after", "steps"), BROKEN, ids=[b[0] for b in BROKEN])
def test_expired_input_is_detected_and_repaired(
    default: Rendering, sentence: str, after: timedelta, steps: set[Step]
) -> None:
    material = installed(default)
    now = not_before(material.ca.cert_pem) + after
    assert trusted(material.serving, material.bundle, now + RotationPolicy().renew_before) != []
    rotation = plan_rotation(material, now=now, policy=RotationPolicy(), hostnames=HOSTS, ca_name=CA_NAME)
    assert steps <= set(rotation.steps)
    assert trusted(rotation.material.serving, rotation.material.bundle, now) == []


def test_an_empty_secret_is_filled() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    rotation = plan_rotation(Material.from_secret({}), now=now, policy=RotationPolicy(), hostnames=HOSTS,
                             ca_name=CA_NAME)  # fmt: skip
    assert rotation.steps[0] == "replace-ca"
    assert trusted(rotation.material.serving, rotation.material.bundle, now) == []
    assert set(rotation.material.to_secret()) == {"ca.crt", "ca.key", "tls.crt", "tls.key", "ca-bundle.crt"}


def test_a_serving_certificate_for_another_service_is_reissued(default: Rendering) -> None:
    material = installed(default)
    now = not_before(material.ca.cert_pem) + timedelta(days=1)
    rotation = plan_rotation(material, now=now, policy=RotationPolicy(), hostnames=["other.wasp-system.svc"],
                             ca_name=CA_NAME)  # fmt: skip
    assert rotation.steps == ("renew-serving",)
    assert rotation.material.ca == material.ca
