"""Gangs that other systems manage, and the native WAS building blocks that say the same.

Pure translation (no I/O) of the three gang mechanisms found in clusters today (their CRDs
and pod markers as those projects define them):

* Volcano: a ``scheduling.volcano.sh/v1beta1`` PodGroup; member pods carry the annotation
  ``scheduling.k8s.io/group-name``;
* scheduler-plugins (coscheduling): a ``scheduling.x-k8s.io/v1alpha1`` PodGroup; member pods
  carry the label ``scheduling.x-k8s.io/pod-group``;
* Kueue plain-pod groups: no object, the label ``kueue.x-k8s.io/pod-group-name`` on each pod
  and the group's size in the annotation ``kueue.x-k8s.io/pod-group-total-count``.

For each gang, :func:`from_pod_group` / :func:`from_kueue` give the native equivalent (the
``schedulingPolicy`` and other blocks a PodGroup, or a workload's ``spec.scheduling``, would
carry) and the fields that have no native equivalent, each with why.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.reconcile_model import meta, string

__all__ = ["MEMBERSHIP", "SYSTEMS", "ForeignGang", "from_kueue", "from_pod_group", "memberships"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
System = t.Literal["volcano", "scheduler-plugins", "kueue"]

# system -> (the PodGroup resource as group, version, plural, Kind), or None: no object.
SYSTEMS: t.Final[dict[System, tuple[str, str, str, str] | None]] = {
    "volcano": ("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup"),
    "scheduler-plugins": ("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"),
    "kueue": None,
}
# system -> (where on the pod, key) that names the pod's gang.
MEMBERSHIP: t.Final[dict[System, tuple[t.Literal["annotations", "labels"], str]]] = {
    "volcano": ("annotations", "scheduling.k8s.io/group-name"),
    "scheduler-plugins": ("labels", "scheduling.x-k8s.io/pod-group"),
    "kueue": ("labels", "kueue.x-k8s.io/pod-group-name"),
}
KUEUE_TOTAL_COUNT: t.Final = "kueue.x-k8s.io/pod-group-total-count"

# Fields of a foreign PodGroup spec with no native WAS equivalent: why, for the user.
_UNTRANSLATED: t.Final[dict[System, dict[str, str]]] = {
    "volcano": {
        "queue": "queues are not part of WAS; Kueue's LocalQueue (label kueue.x-k8s.io/queue-name) is the native-scheduler way",
        "minResources": "WAS gangs count pods, not resources",
        "minTaskMember": "a per-task minimum needs one PodGroup per task (a PodGroup template each, under a CompositePodGroup for the whole gang)",
        "networkTopology": "topology constraints name a node label key (schedulingConstraints.topology, gate TopologyAwareWorkloadScheduling), not Volcano's hypernode tiers",
    },
    "scheduler-plugins": {
        "minResources": "WAS gangs count pods, not resources",
        "scheduleTimeoutSeconds": "kube-scheduler's gang plugin has no per-group timeout",
    },
    "kueue": {},
}


@dataclass(frozen=True, slots=True)
class ForeignGang:
    """One gang of another system. ``min_member``: the gang's minimum (None: not a gang);
    ``native``: the WAS building blocks of the same gang; ``untranslated``: field -> why."""

    system: System
    namespace: str
    name: str
    source: str  # what defines it: "scheduling.volcano.sh/v1beta1 PodGroup" or the pod label
    min_member: int | None
    native: Json
    untranslated: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> Json:
        return {"system": self.system, "namespace": self.namespace, "name": self.name, "source": self.source,
                "minMember": self.min_member, "native": self.native, "untranslated": self.untranslated}  # fmt: skip


def _count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _native(min_member: int | None, priority_class: str = "") -> Json:
    policy: Json = {"gang": {"minCount": min_member}} if min_member and min_member >= 1 else {"basic": {}}
    native: Json = {"schedulingPolicy": policy}
    if priority_class:
        native["priorityClassName"] = priority_class
    return native


def from_pod_group(system: System, obj: Obj) -> ForeignGang:
    """A Volcano or scheduler-plugins PodGroup: ``minMember`` -> ``gang.minCount``;
    Volcano's ``priorityClassName`` -> ``priorityClassName``; the rest is listed as untranslated."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    m = meta(obj)
    min_member = _count(spec.get("minMember"))
    priority = string(spec.get("priorityClassName")) if system == "volcano" else ""
    untranslated = {
        k: why for k, why in _UNTRANSLATED[system].items() if spec.get(k) not in (None, "", {}, [])
    }
    if min_member is None or min_member < 1:
        untranslated["minMember"] = "absent or below 1: no gang, so the native equivalent is a basic policy"
    resource = SYSTEMS[system]
    source = f"{resource[0]}/{resource[1]} {resource[3]}" if resource else system
    return ForeignGang(system, string(m.get("namespace")), string(m.get("name")), source, min_member,
                       _native(min_member, priority), untranslated)  # fmt: skip


def from_kueue(namespace: str, name: str, total_count: object) -> ForeignGang:
    """A Kueue pod group: ``pod-group-total-count`` -> ``gang.minCount`` (Kueue admits the group
    only once that many pods exist, which is what a gang of that size asks of the scheduler)."""
    count = _count(total_count)
    untranslated = {} if count else {KUEUE_TOTAL_COUNT: "absent or not a count: the group's size is unknown"}
    source = f"label {MEMBERSHIP['kueue'][1]}"
    return ForeignGang("kueue", namespace, name, source, count, _native(count), untranslated)


def memberships(pod: Obj) -> list[tuple[System, str]]:
    """The foreign gangs ``pod`` says it belongs to, as (system, group name)."""
    m = meta(pod)
    out: list[tuple[System, str]] = []
    for system, (where, key) in MEMBERSHIP.items():
        values = m.get(where)
        name = string(values.get(key)) if isinstance(values, dict) else ""
        if name:
            out.append((system, name))
    return out
