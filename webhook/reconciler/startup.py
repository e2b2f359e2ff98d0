"""Startup checks: the API server serves everything the reconciler reads and writes.

Each missing resource is one line saying what to enable: the feature gates and
``--runtime-config`` of kube-apiserver for the scheduling APIs, the CRD for a governed
kind. ``wasp reconcile`` exits 2 with these lines instead of watching a 404 forever.
"""

from __future__ import annotations

import typing as t

from webhook.governed.apis import GROUP, PLURALS, choose
from webhook.kube.api import COMPOSITE_POD_GROUPS, POD_GROUPS, WORKLOADS, Api, Resource
from webhook.policy import PolicySet

__all__ = ["missing_apis", "needed", "scheduling_apis"]

LEASES: t.Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")
_HOW: t.Final = {
    WORKLOADS: "kube-apiserver needs --feature-gates=GenericWorkload=true and --runtime-config=scheduling.k8s.io/v1beta1=true",
    POD_GROUPS: "kube-apiserver needs --feature-gates=GenericWorkload=true and --runtime-config=scheduling.k8s.io/v1beta1=true",
    COMPOSITE_POD_GROUPS: "kube-apiserver needs --feature-gates=CompositePodGroup=true and --runtime-config=scheduling.k8s.io/v1alpha3=true",
    LEASES: "coordination.k8s.io/v1 is served by every supported Kubernetes; check the API server and RBAC",
}  # fmt: skip


def scheduling_apis(api: Api, *, composite: bool) -> tuple[dict[str, Resource], list[str]]:
    """The scheduling resources to watch and write, in the versions discovery lists and wasp
    emits (:func:`webhook.governed.apis.choose`), and one line per kind that has none."""
    chosen = choose(api.group_versions(GROUP), write=True)
    kinds = ["Workload", "PodGroup", *(["CompositePodGroup"] if composite else [])]
    by_kind = {r.kind: r for r in (WORKLOADS, POD_GROUPS, COMPOSITE_POD_GROUPS)}
    problems = [f"{chosen.problems[k]}: {_HOW[by_kind[k]]}" for k in kinds if k in chosen.problems]
    resources = {k: Resource(GROUP, v, PLURALS[k], k) for k, v in chosen.versions.items()}
    return resources, problems


def needed(
    policies: PolicySet, governed: t.Sequence[Resource], *, composite: bool, leases: bool
) -> list[tuple[Resource, str]]:
    """Every other resource the reconciler uses (the scheduling ones: :func:`scheduling_apis`),
    with what to do when it is missing."""
    out = []
    if leases:
        out.append((LEASES, _HOW[LEASES]))
    for resource in governed:
        out.append(
            (
                resource,
                f"install the CustomResourceDefinition {resource.plural}.{resource.group} (served version {resource.version})",
            )
        )
    return out


def missing_apis(api: Api, wanted: t.Sequence[tuple[Resource, str]]) -> list[str]:
    """One line per resource that discovery does not list."""
    served: dict[tuple[str, str], set[str] | None] = {}
    problems = []
    for resource, how in wanted:
        group_version = (resource.group, resource.version)
        if group_version not in served:
            served[group_version] = api.discover(*group_version)
        names = served[group_version]
        if names is None or resource.plural not in names:
            problems.append(f"{resource.api_version} does not serve {resource.plural}: {how}")
    return problems
