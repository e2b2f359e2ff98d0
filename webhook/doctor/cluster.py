"""``wasp doctor``'s I/O: the facts its checks judge, read from the cluster.

Version, discovery, dry-run creates (the gate probes: ``dryRun=All``, nothing is written),
webhook configurations, the Service's EndpointSlices, the certificate each ready endpoint
serves, the reconciler's Lease. Every verdict is :func:`webhook.doctor.checks.checks`'s.
"""

from __future__ import annotations

import socket
import ssl
import typing as t
from datetime import datetime

from webhook.cli.cluster import Cluster
from webhook.doctor.checks import FIELD_GATES, Check, Endpoint, Facts, mode_checks
from webhook.doctor.install import configured_lease
from webhook.governed.outsiders import CRDS as CRD_RESOURCE
from webhook.kube.api import ApiException, Resource
from webhook.policy import PolicySet
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths

__all__ = ["gather", "modes", "release_lease"]

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


def gather(cluster: Cluster, *, namespace: str, release: str, probe_namespace: str, lease: str | None,
           now: datetime) -> Facts:  # fmt: skip
    """The facts; ``lease`` None: the Lease the release's annotation names, else RELEASE-reconciler."""
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
                 lease=cluster.get(LEASES, namespace, lease or release_lease(validating, release)))  # fmt: skip


def release_lease(validating: Json | None, release: str) -> str:
    return configured_lease(validating) or f"{release}-reconciler"


def modes(cluster: Cluster) -> list[Check]:
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
