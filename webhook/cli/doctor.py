"""``wasp doctor``: is this cluster ready for WAS and for wasp? A checklist with fixes.

This module only gathers facts (version, discovery, dry-run creates, webhook
configurations, the Service's EndpointSlices, the certificate each ready endpoint serves,
the reconciler's Lease); every verdict is :func:`webhook.governed.readiness.checks`'s.
Nothing is written: the gate probes are ``dryRun=All`` creates.

Exit codes: 0 every required check passes, 1 one fails, 2 the cluster cannot be read.
"""

from __future__ import annotations

import socket
import ssl
import sys
import typing as t
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from webhook.cli.cluster import Cluster, Unusable, open_cluster, unusable
from webhook.cli.kubeconfig_flag import kubeconfig_option
from webhook.cli.reporters_data import dumps
from webhook.governed.modes import mode_checks
from webhook.governed.outsiders import CRDS as CRD_RESOURCE
from webhook.governed.readiness import FIELD_GATES, Check, Endpoint, Expected, Facts, checks, exit_code
from webhook.kube.api import ApiException, Resource
from webhook.policy import PolicySet
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths

__all__ = ["doctor", "gather"]

Json = dict[str, t.Any]
VALIDATING: t.Final = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "")
MUTATING: t.Final = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "")
SERVICES: t.Final = Resource("", "v1", "services", "Service")
SLICES: t.Final = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice")
LEASES: t.Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
CRDS: t.Final = Resource(*CRD_RESOURCE)
MAX_ENDPOINTS: t.Final = 3  # served certificates fetched: enough to see a stale replica
_GANG: t.Final = {"gang": {"minCount": 1}}
# The body of each gate's dry-run probe (the gated field set, the rest minimal and valid).
_PROBES: t.Final[dict[str, Json]] = {
    "WorkloadWithJob": {"apiVersion": "batch/v1", "kind": "Job", "spec": {
        "scheduling": {"schedulingPolicy": _GANG},
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}},
    "TopologyAwareWorkloadScheduling": {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "spec": {
        "schedulingPolicy": _GANG, "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}}},
    "DRAWorkloadResourceClaims": {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "spec": {
        "schedulingPolicy": _GANG, "resourceClaims": [{"name": "probe", "resourceClaimTemplateName": "probe"}]}},
}  # fmt: skip


def _resource(key: str) -> Resource:
    group_version, _, plural = key.rpartition("/")
    group, _, version = group_version.rpartition("/")
    return Resource(group, version, plural, "")


def _probe(cluster: Cluster, gate: str, namespace: str) -> bool | str:
    """Whether a dry-run create keeps the gate's field, or why that is unknown."""
    key, _, path = FIELD_GATES[gate]
    resource = _resource(key)
    if not cluster.serves(resource):
        return f"{key} is not served"
    body = {**_PROBES[gate], "metadata": {"generateName": "wasp-doctor-"}}
    try:
        answer = cluster.api.call("POST", resource.path(namespace), body=body, query=[("dryRun", "All")])
    except ApiException as exc:
        return f"the dry-run create was refused ({exc.status} {exc.reason})"
    node: t.Any = answer
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node is not None


def _endpoints(cluster: Cluster, namespace: str, service: str) -> list[Endpoint]:
    out = []
    for page in cluster.pages(SLICES, namespace, selector=f"kubernetes.io/service-name={service}"):
        for eps in page:
            ports = [p.get("port") for p in eps.get("ports") or [] if isinstance(p.get("port"), int)]
            for ep in eps.get("endpoints") or []:
                ready = (ep.get("conditions") or {}).get("ready") is not False  # unknown counts as ready
                for address in ep.get("addresses") or []:
                    out.append(Endpoint(str(address), ports[0] if ports else 443, ready))
    return out


def _served_certificate(address: str, port: int, server_name: str) -> bytes | str:
    """The DER certificate served at address:port (not verified here: the verdict does it)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((address, port), timeout=3) as raw:
            with context.wrap_socket(raw, server_hostname=server_name) as tls:
                der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        return f"cannot connect: {exc}"
    return der if der else "no certificate served"


def gather(cluster: Cluster, *, namespace: str, release: str, probe_namespace: str, lease: str,
           now: datetime) -> Facts:  # fmt: skip
    try:
        version = t.cast(Json, cluster.api.call("GET", "/version"))
    except ApiException:
        version = {}
    # Every version discovery lists (a version wasp has no schema for is named, not used).
    versions = {*cluster.api.group_versions("scheduling.k8s.io"), "v1beta1", "v1alpha3"}
    served = {f"scheduling.k8s.io/{v}": cluster.served("scheduling.k8s.io", v) for v in sorted(versions)}
    kept = {gate: _probe(cluster, gate, probe_namespace) for gate in FIELD_GATES}
    validating = cluster.get(VALIDATING, None, f"{release}-validating")
    mutating = cluster.get(MUTATING, None, f"{release}-mutating")
    target: Json = {}
    for config in (validating, mutating):
        for hook in (config or {}).get("webhooks") or []:
            target = target or ((hook.get("clientConfig") or {}).get("service") or {})
    svc_ns, svc_name = str(target.get("namespace") or namespace), str(target.get("name") or release)
    service = cluster.get(SERVICES, svc_ns, svc_name)
    endpoints = _endpoints(cluster, svc_ns, svc_name) if service is not None else []
    certs = {
        f"{e.address}:{e.port}": _served_certificate(e.address, e.port, f"{svc_name}.{svc_ns}.svc")
        for e in [e for e in endpoints if e.ready][:MAX_ENDPOINTS]
    }
    return Facts(now=now, version=version, served=served, kept=kept, validating=validating, mutating=mutating,
                 service=service, endpoints=endpoints, served_certs=certs,
                 lease=cluster.get(LEASES, namespace, lease))  # fmt: skip


def _modes(cluster: Cluster) -> list[Check]:
    """Adapter or native, for each shipped integration whose CRD is installed (docs/coexistence.md)."""
    try:
        policies = PolicySet.load(integration_paths(KNOWN_INTEGRATIONS), builtin=False)
        crds = {
            f"{p.resource}.{p.group}": cluster.get(CRDS, None, f"{p.resource}.{p.group}")
            for p in policies.policies
        }
    except Exception:  # noqa: BLE001 - informational lines: a cluster that hides CRDs only loses them
        return []
    return mode_checks(policies, crds)


_MARKS: t.Final = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def _text(found: t.Sequence[Check], code: int) -> str:
    lines = []
    for c in found:
        optional = "" if c.required else " (optional)"
        lines.append(f"[{_MARKS[c.verdict]}] {c.title}{optional}: {c.detail}")
        if c.fix and c.verdict != "pass":
            lines.append(f"       fix: {c.fix}")
    counts = {v: sum(c.verdict == v for c in found) for v in _MARKS}
    verdict = "ready" if code == 0 else "NOT ready: a required check fails"
    lines.append(f"wasp doctor: {len(found)} checks: {counts['pass']} pass, {counts['warn']} warn, "
                 f"{counts['fail']} fail: {verdict}")  # fmt: skip
    return "\n".join(lines)


@click.command()
@kubeconfig_option
@click.option(
    "-n", "--namespace", default="wasp", show_default=True, help="The namespace wasp is installed in."
)
@click.option(
    "--release",
    default="wasp",
    show_default=True,
    help="The chart's full name (its webhook configurations are RELEASE-validating and RELEASE-mutating).",
)
@click.option(
    "--probe-namespace",
    default="default",
    show_default=True,
    help="Namespace of the dry-run creates that tell which feature gates are on.",
)
@click.option(
    "--lease-name",
    default=None,
    help="The reconciler's Lease, as the chart names it.  [default: RELEASE-reconciler]",
)
@click.option(
    "--expiry-margin",
    type=click.IntRange(0),
    default=30,
    show_default=True,
    help="Days: a certificate expiring sooner fails.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def doctor(kubeconfig: Path | None, namespace: str, release: str, probe_namespace: str, lease_name: str | None,
           expiry_margin: int, output: str) -> None:  # fmt: skip
    """Check that the cluster is ready for Workload-Aware Scheduling and for wasp.

    One line per check (server version, WAS APIs, feature gates, wasp's webhook configurations
    and their certificates, the Service's endpoints, the reconciler's Lease), each with a
    verdict and, when it fails, the fix. Read-only: gates are probed with dry-run creates.

    Exit codes: 0 every required check passes, 1 one fails, 2 the cluster cannot be read.
    """
    cluster = open_cluster(kubeconfig)
    lease_name = lease_name or f"{release}-reconciler"
    expected = Expected(expiry_margin=timedelta(days=expiry_margin), lease_name=lease_name)
    try:
        facts = gather(cluster, namespace=namespace, release=release, probe_namespace=probe_namespace,
                       lease=lease_name, now=datetime.now(UTC))  # fmt: skip
    except Exception as exc:
        raise Unusable(unusable(exc)) from None
    found = checks(facts, expected) + _modes(cluster)
    code = exit_code(found)
    if output == "json":
        doc = {"checks": [c.to_json() for c in found], "ready": code == 0, "exitCode": code}
        sys.stdout.write(dumps(doc, utf8=True) + "\n")
    else:
        sys.stdout.write(_text(found, code) + "\n")
    sys.exit(code)
