"""``wasp doctor``'s verdicts: is a cluster ready for WAS and for wasp? Pure, given the facts.

The I/O shell (webhook/doctor/cluster.py) gathers :class:`Facts` from the API server (version,
discovery, dry-run creates, webhook configurations, EndpointSlices, the served certificates,
the reconciler's Lease); :func:`checks` turns them into one :class:`Check` per line, each with
a verdict and, when it is not ``pass``, the fix. Gates are inferred as the apiserver shows
them: a gate that guards a resource is on when discovery serves it; a gate that guards a
field is on when a dry-run create keeps the field (with the gate off the apiserver's registry
drops it silently on create).
"""

from __future__ import annotations

import base64
import binascii
import re
import typing as t
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cryptography import x509

from webhook.certs.pem import load_certs, utc
from webhook.certs.validity import issued_by
from webhook.doctor.install import Expected, configured_entries, installed
from webhook.governed.modes import kind_modes
from webhook.policy import PolicySet

__all__ = [
    "mode_checks",
    "FIELD_GATES",
    "Check",
    "Endpoint",
    "Expected",
    "Facts",
    "Verdict",
    "checks",
    "exit_code",
]

Json = dict[str, t.Any]
Verdict = t.Literal["pass", "fail", "warn"]
MIN_VERSION: t.Final = (1, 37)
GATE_FIX: t.Final = "turn it on with --feature-gates={gate}=true on kube-apiserver, kube-controller-manager and kube-scheduler"
# Gates that guard a field: (resource apiVersion/plural, kind, the field's path) of the dry-run probe.
FIELD_GATES: t.Final = {
    "WorkloadWithJob": ("batch/v1/jobs", "Job", ("spec", "scheduling")),
    "TopologyAwareWorkloadScheduling": ("scheduling.k8s.io/v1beta1/podgroups", "PodGroup", ("spec", "schedulingConstraints")),
    "DRAWorkloadResourceClaims": ("scheduling.k8s.io/v1beta1/podgroups", "PodGroup", ("spec", "resourceClaims")),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Endpoint:
    address: str
    port: int
    ready: bool


@dataclass(frozen=True, slots=True)
class Facts:
    now: datetime
    version: Json | None = None  # /version
    served: t.Mapping[str, frozenset[str] | None] = field(
        default_factory=dict
    )  # "group/version" -> resources
    kept: t.Mapping[str, bool | str] = field(default_factory=dict)  # gate -> field kept? or why unknown
    validating: Json | None = None
    mutating: Json | None = None
    service: Json | None = None  # the Service the webhooks call
    endpoints: t.Sequence[Endpoint] = ()
    served_certs: t.Mapping[str, bytes | str] = field(default_factory=dict)  # "addr:port" -> DER, or why not
    lease: Json | None = None


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    title: str
    verdict: Verdict
    detail: str
    fix: str = ""
    required: bool = True

    def to_json(self) -> Json:
        return {"id": self.id, "title": self.title, "verdict": self.verdict, "required": self.required,
                "detail": self.detail, "fix": self.fix}  # fmt: skip


def exit_code(found: t.Sequence[Check]) -> int:
    """0 when no required check fails, else 1."""
    return int(any(c.required and c.verdict == "fail" for c in found))


def _version(facts: Facts) -> Check:
    title = "server version is 1.37 or newer"
    doc = facts.version or {}
    try:
        have = (int(re.sub(r"\D", "", str(doc["major"]))), int(re.sub(r"\D", "", str(doc["minor"]))))
    except (KeyError, ValueError):
        return Check("server-version", title, "fail", f"/version answered {doc!r}", "check the API server")
    text = str(doc.get("gitVersion") or f"{have[0]}.{have[1]}")
    if have >= MIN_VERSION:
        return Check("server-version", title, "pass", text)
    return Check("server-version", title, "fail", f"{text}: the WAS APIs wasp uses are those of 1.37",
                 "upgrade the control plane to Kubernetes 1.37")  # fmt: skip


def _serves(facts: Facts, group_version: str, resource: str) -> bool:
    return resource in (facts.served.get(group_version) or ())


def _discovery(facts: Facts) -> list[Check]:
    out = []
    for gv, resource, gate, required in (
        ("scheduling.k8s.io/v1beta1", "workloads", "GenericWorkload", True),
        ("scheduling.k8s.io/v1beta1", "podgroups", "GenericWorkload", True),
        ("scheduling.k8s.io/v1alpha3", "compositepodgroups", "CompositePodGroup", False),
    ):
        title = f"discovery serves {gv} {resource}"
        if _serves(facts, gv, resource):
            out.append(Check(f"api/{resource}", title, "pass", "served", required=required))
        else:
            detail = "not served" if facts.served.get(gv) is not None else f"{gv} is not served at all"
            group = gv.rpartition("/")[0]
            elsewhere = sorted(
                g
                for g, names in facts.served.items()
                if g.startswith(f"{group}/") and names and resource in names
            )
            if elsewhere:  # discovered, but wasp has no schema for it: named, never used
                detail += f"; served in {', '.join(elsewhere)}, which wasp has no schema for"
            fix = f"enable the API with --runtime-config={gv}=true and " + GATE_FIX.format(gate=gate)
            out.append(Check(f"api/{resource}", title, "fail" if required else "warn", detail, fix, required))
    return out


def _gates(facts: Facts) -> list[Check]:
    out = []
    resource_gates = {
        "GenericWorkload": _serves(facts, "scheduling.k8s.io/v1beta1", "workloads")
        and _serves(facts, "scheduling.k8s.io/v1beta1", "podgroups"),
        "CompositePodGroup": _serves(facts, "scheduling.k8s.io/v1alpha3", "compositepodgroups"),
    }
    for gate, on in resource_gates.items():
        required = gate == "GenericWorkload"
        detail = "on (its resources are served)" if on else "off (its resources are not served)"
        verdict: Verdict = "pass" if on else ("fail" if required else "warn")
        out.append(Check(f"gate/{gate}", f"feature gate {gate}", verdict, detail,
                         "" if on else GATE_FIX.format(gate=gate), required))  # fmt: skip
    for gate in FIELD_GATES:
        kept = facts.kept.get(gate, "not probed")
        if kept is True:
            out.append(Check(f"gate/{gate}", f"feature gate {gate}", "pass", "on (a dry-run create kept the field)",
                             required=False))  # fmt: skip
        elif kept is False:
            out.append(Check(f"gate/{gate}", f"feature gate {gate}", "warn", "off (a dry-run create dropped the field)",
                             GATE_FIX.format(gate=gate), required=False))  # fmt: skip
        else:
            out.append(Check(f"gate/{gate}", f"feature gate {gate}", "warn", f"unknown: {kept}",
                             "allow dry-run creates of the probed kind in the --namespace given, then run again",
                             required=False))  # fmt: skip
    return out


def _entries(config: Json) -> list[Json]:
    hooks = config.get("webhooks")
    return [h for h in hooks if isinstance(h, dict)] if isinstance(hooks, list) else []


def _settings(config: Json, kind: str, expected: Expected) -> Check:
    name = str((config.get("metadata") or {}).get("name", ""))
    timeout = expected.validating_timeout if kind == "validating" else expected.mutating_timeout
    wrong = []
    for hook in _entries(config):
        label = str(hook.get("name", "?"))
        want = expected.failure_policy.get(Expected.role(label), "Fail")
        if hook.get("failurePolicy", "Fail") != want:
            wrong.append(f"{label}: failurePolicy {hook.get('failurePolicy')}, the install sets {want}")
        if hook.get("timeoutSeconds", 10) != timeout:
            wrong.append(
                f"{label}: timeoutSeconds {hook.get('timeoutSeconds', 10)}, the install sets {timeout}"
            )
        conditions = [c.get("name") for c in hook.get("matchConditions") or [] if isinstance(c, dict)]
        if not conditions or (kind == "validating" and expected.validating_condition not in conditions):
            wrong.append(
                f"{label}: matchConditions {conditions}: without them every object of the kind is sent to wasp"
            )
    configured = configured_entries(config)
    have = len(_entries(config))
    if configured is not None and have != configured:
        wrong.append(f"it has {have} webhooks, the release rendered {configured}")
    elif configured is None and not have:
        wrong.append("it has no webhooks")
    title = f"{name}: failurePolicy, timeoutSeconds, matchConditions as the install sets them"
    if not wrong:
        detail = f"{have} entries" if have else "no entries: the release configures no mutating features"
        return Check(f"webhook-settings/{kind}", title, "pass", f"{detail} (expected: {expected.source})")
    return Check(f"webhook-settings/{kind}", title, "fail", "; ".join(wrong),
                 "reinstall or upgrade with charts/wasp (helm upgrade) instead of editing the configuration")  # fmt: skip


def _ca_bundle(config: Json) -> bytes | str:
    bundles = {str((h.get("clientConfig") or {}).get("caBundle") or "") for h in _entries(config)}
    if bundles == {""} or not bundles:
        return "no caBundle"
    if len(bundles) > 1:
        return "entries carry different caBundles"
    try:
        return base64.b64decode(bundles.pop(), validate=True)
    except (binascii.Error, ValueError):
        return "caBundle is not base64"


def _expiry(cert: x509.Certificate, label: str, now: datetime, margin: timedelta) -> str:
    end = cert.not_valid_after_utc
    if end <= now:
        return f"{label} expired on {end:%Y-%m-%d %H:%M} UTC"
    if end - now < margin:
        return f"{label} expires on {end:%Y-%m-%d %H:%M} UTC, in {(end - now).days} days"
    return ""


def _certificates(facts: Facts, config: Json, kind: str, expected: Expected) -> Check:
    title = f"{kind} caBundle verifies the serving certificate and is not near expiry"
    fix = "rotate the certificates (wasp certs rotate, or let cert-manager re-issue them) and re-inject the caBundle"
    bundle = _ca_bundle(config)
    if isinstance(bundle, str):
        return Check(f"ca-bundle/{kind}", title, "fail", bundle, fix)
    now = utc(facts.now)
    try:
        cas = load_certs(bundle, "caBundle")
    except ValueError as exc:
        return Check(f"ca-bundle/{kind}", title, "fail", str(exc), fix)
    problems = [
        p
        for ca in cas
        if (p := _expiry(ca, f"caBundle CA {ca.subject.rfc4514_string()}", now, expected.expiry_margin))
    ]
    verified, unreachable = [], []
    for where, served in facts.served_certs.items():
        if isinstance(served, str):
            unreachable.append(f"{where}: {served}")
            continue
        try:
            leaf = x509.load_der_x509_certificate(served)
        except ValueError:
            problems.append(f"{where}: the served certificate does not parse")
            continue
        if not any(issued_by(leaf, ca) for ca in cas):
            problems.append(f"{where}: the serving certificate is not signed by the caBundle's CA")
        elif p := _expiry(leaf, f"{where}: the serving certificate", now, expected.expiry_margin):
            problems.append(p)
        else:
            verified.append(where)
    if problems:
        return Check(f"ca-bundle/{kind}", title, "fail", "; ".join(problems), fix)
    if not verified:
        detail = "; ".join(unreachable) or "no ready endpoint to connect to"
        return Check(f"ca-bundle/{kind}", title, "warn", f"the CA is valid, no serving certificate was checked: {detail}",
                     "run wasp doctor where the endpoints are reachable (inside the cluster network)")  # fmt: skip
    return Check(f"ca-bundle/{kind}", title, "pass", f"verified at {', '.join(verified)}")


def _webhooks(facts: Facts, expected: Expected) -> list[Check]:
    out = []
    for kind, config in (("validating", facts.validating), ("mutating", facts.mutating)):
        title = f"{kind.capitalize()}WebhookConfiguration exists"
        if config is None:
            out.append(
                Check(
                    f"webhook/{kind}",
                    title,
                    "fail",
                    "not found",
                    "install wasp with charts/wasp (helm install)",
                )
            )
            continue
        out.append(Check(f"webhook/{kind}", title, "pass", str((config.get("metadata") or {}).get("name"))))
        out.append(_settings(config, kind, expected))
        if _entries(config) or configured_entries(config) is None:  # no entry: no caBundle to check
            out.append(_certificates(facts, config, kind, expected))
    title = "the webhook Service has ready endpoints"
    ready = [f"{e.address}:{e.port}" for e in facts.endpoints if e.ready]
    if facts.service is None:
        out.append(Check("service", title, "fail", "the Service the webhooks call does not exist",
                         "install wasp with charts/wasp, or fix clientConfig.service"))  # fmt: skip
    elif not ready:
        out.append(Check("service", title, "fail", f"{len(facts.endpoints)} endpoints, none ready",
                         "check the wasp pods (kubectl get pods, their readiness probes and logs)"))  # fmt: skip
    else:
        out.append(Check("service", title, "pass", f"{len(ready)} ready: {', '.join(ready)}"))
    return out


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def _lease(facts: Facts, expected: Expected) -> Check:
    title = f"the reconciler's Lease {expected.lease_name} is held and fresh"
    fix = "check the wasp reconciler pods (kubectl logs); they renew the Lease every few seconds"
    if not expected.reconciler:
        return Check("lease", title, "pass", f"not checked: the release installs no reconciler ({expected.source})",
                     required=False)  # fmt: skip
    if facts.lease is None:
        return Check("lease", title, "fail", "not found", "deploy the reconciler (wasp reconcile), or " + fix)
    spec = facts.lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    renewed = _timestamp(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    if not holder:
        return Check("lease", title, "fail", "no holder", fix)
    if renewed is None or not isinstance(duration, int):
        return Check(
            "lease", title, "fail", f"held by {holder}, renewTime or leaseDurationSeconds missing", fix
        )
    age = utc(facts.now) - renewed
    if age > timedelta(seconds=duration):
        return Check("lease", title, "fail", f"held by {holder}, last renewed {int(age.total_seconds())} s ago "
                     f"(lease duration {duration} s): the holder is gone", fix)  # fmt: skip
    return Check(
        "lease", title, "pass", f"held by {holder}, renewed {max(int(age.total_seconds()), 0)} s ago"
    )


def checks(facts: Facts, expected: Expected | None = None) -> list[Check]:
    """Every check, in the order the text output lists them."""
    if facts.version is None:
        return [Check("server-version", "the API server answers", "fail", "no answer to /version",
                      "check --kubeconfig and that the API server is reachable")]  # fmt: skip
    expected = installed(facts.validating or facts.mutating, expected or Expected())
    return [
        _version(facts),
        *_discovery(facts),
        *_gates(facts),
        *_webhooks(facts, expected),
        _lease(facts, expected),
    ]


def mode_checks(policies: PolicySet, crds: t.Mapping[str, t.Mapping[str, t.Any] | None]) -> list[Check]:
    """``wasp doctor``'s lines: the mode of each kind whose CRD is installed (informational)."""
    return [
        Check(f"mode-{m.kind.lower()}", f"{m.kind} is in {m.mode} mode", "pass", m.why, required=False)
        for m in kind_modes(policies, crds)
        if m.mode != "controller" and crds.get(_crd_name(policies, m.kind)) is not None
    ]


def _crd_name(policies: PolicySet, kind: str) -> str:
    policy = next(p for p in policies.policies if p.kind == kind)
    return f"{policy.resource}.{policy.group}"
