"""Which object governs what the user named, and which pods are that object's.

Both questions are answered the same way for a cluster and for a dump: the shells pass a
``lookup`` (by apiVersion, kind and name) and the pure rules here decide what to follow.

A workload's pods are found by the label its controller writes on every pod (the table
below, from the label each controller sets on the pods it creates), so
a cluster read is a label-selected list; a policy with ``stamping.membership`` names its
label itself. A kind with no known label falls back to the pods the object controls
directly (its UID in their controller ownerReference): a read of the namespace's pods,
which ``--pod-selector`` avoids.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.ownership import controller_of
from webhook.policy import PolicySet

__all__ = ["Lookup", "PodSelector", "belongs", "pod_selector", "resolve"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
# (apiVersion, kind, name) -> the object of the target's namespace, or None.
Lookup = t.Callable[[str, str, str], "Json | None"]

# (group, kind) -> (pod label, what its value is: "name", "uid" or a dotted path in the object).
_POD_LABELS: t.Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("batch", "Job"): ("batch.kubernetes.io/controller-uid", "uid"),
    ("jobset.x-k8s.io", "JobSet"): ("jobset.sigs.k8s.io/jobset-name", "name"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): ("leaderworkerset.sigs.k8s.io/name", "name"),
    ("trainer.kubeflow.org", "TrainJob"): ("jobset.sigs.k8s.io/jobset-name", "name"),
    ("ray.io", "RayCluster"): ("ray.io/cluster", "name"),
    ("ray.io", "RayJob"): ("ray.io/cluster", "status.rayClusterName"),
    ("kubeflow.org", "MPIJob"): ("training.kubeflow.org/job-name", "name"),
    ("batch.volcano.sh", "Job"): ("volcano.sh/job-name", "name"),
}
_MAX_HOPS: t.Final = 6


def _meta(obj: Obj) -> t.Mapping[str, t.Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _group(api_version: object) -> str:
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def _path(obj: Obj, dotted: str) -> str:
    node: object = obj
    for step in dotted.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    return node if isinstance(node, str) else ""


@dataclass(frozen=True, slots=True)
class PodSelector:
    """``labels``: every one must match (a label selector for the API); without labels, the
    pods whose controller has ``controller_uid``. ``groups``: PodGroup names whose pods
    belong too, whatever their labels."""

    labels: t.Mapping[str, str] = field(default_factory=dict)
    controller_uid: str = ""
    groups: frozenset[str] = frozenset()

    def label_selector(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))


def pod_selector(
    obj: Obj, policies: PolicySet, groups: t.Iterable[str] = (), override: str = ""
) -> PodSelector:
    """How to find ``obj``'s pods; ``override`` (``key=value,...``) replaces the table."""
    names = frozenset(groups)
    if override:
        pairs = (p.partition("=") for p in override.split(",") if p.strip())
        return PodSelector({k.strip(): v.strip() for k, _, v in pairs}, groups=names)
    known = _POD_LABELS.get((_group(obj.get("apiVersion")), str(obj.get("kind", ""))))
    policy = policies.for_object(obj)
    if known is None and policy is not None and policy.membership is not None:
        known = (policy.membership.label, "name")
    if known is not None:
        key, source = known
        value = {"name": str(_meta(obj).get("name", "")), "uid": str(_meta(obj).get("uid", ""))}.get(source)
        value = value if value is not None else _path(obj, source)
        if value:
            return PodSelector({key: value}, groups=names)
    return PodSelector(controller_uid=str(_meta(obj).get("uid", "")), groups=names)


def belongs(pod: Obj, selector: PodSelector) -> bool:
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    if isinstance(group, dict) and group.get("podGroupName") in selector.groups:
        return True
    if selector.labels:
        labels = _meta(pod).get("labels")
        labels = labels if isinstance(labels, dict) else {}
        return all(labels.get(k) == v for k, v in selector.labels.items())
    owner = controller_of(pod)
    return bool(selector.controller_uid) and owner is not None and owner.get("uid") == selector.controller_uid


def _step(obj: Obj, policies: PolicySet) -> tuple[str, str, str] | None:
    """The next object up from ``obj`` towards its governing object, or ``None`` at the top."""
    kind = obj.get("kind")
    spec = _dict(obj.get("spec"))
    if policies.for_object(obj) is not None:
        # A governed object under another governed one (a TrainJob's JobSet, a JobSet's Job)
        # is the outer one's; a CronJob's Job is a root of its own (docs/decisions.md §4).
        owner = controller_of(obj)
        if owner is None or (_group(owner.get("apiVersion")), owner.get("kind")) == ("batch", "CronJob"):
            return None
        api_version, owner_kind = str(owner.get("apiVersion", "")), str(owner.get("kind", ""))
        if policies.for_kind(api_version, owner_kind) is None:
            return None
        return api_version, owner_kind, str(owner.get("name", ""))
    if kind == "Workload":
        ref = spec.get("controllerRef")
        if isinstance(ref, dict):
            group = str(ref.get("apiGroup") or "")
            policy = next(
                (p for p in policies.policies if (p.group, p.kind) == (group, ref.get("kind"))), None
            )
            version = policy.versions[0] if policy is not None else "v1"
            return (f"{group}/{version}" if group else version), str(ref.get("kind")), str(ref.get("name"))
    if kind == "Pod":
        labels = _meta(obj).get("labels")
        for policy in policies.policies:
            value = (
                labels.get(policy.membership.label)
                if isinstance(labels, dict) and policy.membership
                else None
            )
            if isinstance(value, str) and value:
                api_version = f"{policy.group}/{policy.versions[0]}" if policy.group else policy.versions[0]
                return api_version, policy.kind, value
    owner = controller_of(obj)
    if owner is not None:
        return str(owner.get("apiVersion")), str(owner.get("kind")), str(owner.get("name"))
    if kind in ("PodGroup", "CompositePodGroup"):
        name = _dict(spec.get("workloadRef")).get("workloadName")
        if isinstance(name, str) and name:
            return "scheduling.k8s.io/v1beta1", "Workload", name
    return None


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def resolve(start: Json, policies: PolicySet, lookup: Lookup) -> tuple[Json | None, list[str]]:
    """The governed object ``start`` leads to (itself, or up its Workload, PodGroup and
    controller references; an inner object's outer one), and the path followed."""
    trail = [f"{start.get('kind')} {_meta(start).get('name')}"]
    current: Json = start
    for _ in range(_MAX_HOPS):
        nxt = _step(current, policies)
        if nxt is None:
            break
        found = lookup(*nxt)
        if found is None:
            trail.append(f"{nxt[1]} {nxt[2]} (not found)")
            return None, trail
        current = found
        trail.append(f"{nxt[1]} {nxt[2]}")
    if policies.for_object(current) is None:
        return None, trail
    return current, trail
