"""What ``TYPE`` in ``wasp explain TYPE/NAME`` names: a governed kind, or one that leads to one.

The governed kinds are the loaded policies' (their group, first version, plural and kind);
beside them, the kinds explain can start from and follow: Workload, PodGroup,
CompositePodGroup, Pod, and the Job and StatefulSet between pods and their workloads.
"""

from __future__ import annotations

import typing as t

from webhook.policy import PolicySet

__all__ = ["COMPOSITE_POD_GROUPS", "POD_GROUPS", "WORKLOADS", "KindSpec", "by_kind", "parse_type"]


class KindSpec(t.NamedTuple):
    """A resource as the API serves it (the cluster shell makes a ``webhook.kube.api.Resource`` of it)."""

    group: str
    version: str
    plural: str
    kind: str


WORKLOADS: t.Final = KindSpec("scheduling.k8s.io", "v1beta1", "workloads", "Workload")
POD_GROUPS: t.Final = KindSpec("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
COMPOSITE_POD_GROUPS: t.Final = KindSpec(
    "scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup"
)
_BUILTIN: t.Final = (
    KindSpec("", "v1", "pods", "Pod"),
    WORKLOADS,
    POD_GROUPS,
    COMPOSITE_POD_GROUPS,
    KindSpec("batch", "v1", "jobs", "Job"),
    KindSpec("batch", "v1", "cronjobs", "CronJob"),
    KindSpec("apps", "v1", "statefulsets", "StatefulSet"),
)
_SHORT: t.Final = {"po": "pods", "pg": "podgroups", "cpg": "compositepodgroups", "sts": "statefulsets"}


def _all(policies: PolicySet) -> list[KindSpec]:
    governed = [KindSpec(p.group, p.versions[0], p.resource, p.kind) for p in policies.policies]
    return [
        *governed,
        *(b for b in _BUILTIN if (b.group, b.kind) not in {(g.group, g.kind) for g in governed}),
    ]


def parse_type(text: str, policies: PolicySet) -> KindSpec | None:
    """``jobset``, ``jobsets``, ``JobSet``, ``jobsets.jobset.x-k8s.io``, ``po``: the kind, or ``None``."""
    name, _, group = text.strip().lower().partition(".")
    name = _SHORT.get(name, name)
    for spec in _all(policies):
        if name in (spec.kind.lower(), spec.plural) and (not group or group == spec.group):
            return spec
    return None


def by_kind(api_version: str, kind: str, policies: PolicySet) -> KindSpec | None:
    """The spec for an ownerReference or controllerRef (its group and kind)."""
    group = api_version.rpartition("/")[0]
    return next((s for s in _all(policies) if (s.group, s.kind) == (group, kind)), None)
