"""Outsiders: pods and child objects that wasp would stamp now but that have no group.

One exists when it was made before wasp governed its kind, while wasp's webhook was down under
``failurePolicy: Ignore``, or while the ``GenericWorkload`` gate was off. Its workload must then
get no new stamps (:mod:`webhook.governed.grouping`). The test is stamping's own: the object is
an outsider exactly when stamping it now (without asking the grouping cache) would change it,
so pods and templates stamping leaves out on purpose (a RayJob's submitter, a pod it cannot
place, an inner object's marked templates) never count.
"""

from __future__ import annotations

import typing as t

from webhook.compiler.annotations import GROUP_TEMPLATE_NAME
from webhook.governed.grouping import WORKLOADS, GroupingCache, RootKey, root_of, slim_workload
from webhook.governed.membership import membership_policy
from webhook.governed.ownership import controller_of
from webhook.governed.placement import group_name, labels_of
from webhook.governed.stamping import NOT_STAMPED, child_template_of, stamp_child, stamp_pod
from webhook.governed.workloads import gate_refusal
from webhook.policy import PolicySet
from webhook.policy.native import schema_native

__all__ = ["CRDS", "crd_natives", "grouping_feeds", "outsider", "slim_crd", "slim_member", "stamps"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]


def _meta(obj: Obj) -> Obj:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def outsider(obj: Obj, policies: PolicySet) -> RootKey | None:
    """The root of the workload ``obj`` (a Pod, or a child object of a governed kind) is an
    outsider of, or ``None`` when it is grouped, left out on purpose, or no member."""
    if not isinstance(obj, dict):
        return None
    meta = _meta(obj)
    namespace = str(meta.get("namespace") or "")
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Pod":
        # Finished and terminating pods count as long as they exist, as the reconciler counts
        # them (StartedWithoutGroups): the two must agree, or stamped pods would wait for a
        # group the reconciler never creates.
        ref = controller_of(obj)
        policy = (
            policies.for_kind(str(ref.get("apiVersion")), str(ref.get("kind"))) if ref is not None else None
        )
        if ref is not None and policy is not None and policy.stamp_pods:
            return root_of(namespace, ref) if stamp_pod(obj, policies, guard=False).roots else None
        return _member_outsider(obj, namespace, policies)
    found = child_template_of(obj, policies)
    if found is None:
        return None
    stamped = stamp_child(obj, policies, guard=False)
    grouping = {"schedulingGroup", GROUP_TEMPLATE_NAME}
    if any(path.segments and path.segments[-1] in grouping for path in stamped.roots):
        return root_of(namespace, found[2])
    return None


def _member_outsider(pod: Json, namespace: str, policies: PolicySet) -> RootKey | None:
    """A pod of a membership policy (by label) is an outsider when it has no group, stamping
    could place it, and the gates let its groups exist. Its UID is not needed to tell, so the
    identity cache is not asked (it may not be filled yet)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("schedulingGroup") is not None:
        return None
    found = membership_policy(pod, policies)
    if found is None:
        return None
    policy, name = found
    if "GenericWorkload" not in policies.gates or gate_refusal(policy, policies.gates) is not None:
        return None
    api_version = f"{policy.group}/{policy.versions[0]}" if policy.group else policy.versions[0]
    ref = {"apiVersion": api_version, "kind": policy.kind, "name": name, "uid": "-"}
    annotations = _meta(pod).get("annotations")
    if isinstance(annotations, dict) and NOT_STAMPED in annotations:
        return None
    try:
        group_name(policy, ref, labels_of(pod, None))
    except ValueError:
        return None  # stamping would leave it alone too
    return root_of(namespace, ref)


def slim_member(policies: PolicySet) -> t.Callable[[Json], Json]:
    """The watch transform for pods and child objects: the root it is an outsider of, if any."""

    def transform(obj: Json) -> Json:
        meta = _meta(obj)
        keep = {k: meta[k] for k in ("name", "namespace", "resourceVersion") if k in meta}
        root = outsider(obj, policies)
        return {"metadata": keep, "kind": obj.get("kind", ""), "root": list(root) if root else None}

    return transform


Feed = tuple[
    tuple[str, str, str, str], t.Callable[[Json], Json], t.Callable[[Json | None, Json | None], None]
]


def stamps(policies: PolicySet) -> bool:
    """Whether a loaded policy stamps pods or child objects (then the webhook keeps a grouping
    cache: docs/decisions.md §30)."""
    return any(p.stamp_pods or p.child_templates or p.membership is not None for p in policies.policies)


def grouping_feeds(policies: PolicySet, cache: GroupingCache) -> list[Feed]:
    """What the webhook lists and watches into ``cache``: ``((group, version, plural, kind),
    transform, handler)`` for Workloads, Pods (when a policy stamps pods) and each child kind."""
    member = slim_member(policies)
    feeds: list[Feed] = [(WORKLOADS, slim_workload, cache.workload_changed)]
    if any(p.stamp_pods or p.membership is not None for p in policies.policies):
        feeds.append((("", "v1", "pods", "Pod"), member, cache.member_changed))
    if any(p.native is not None and p.native.crd_fields for p in policies.policies):
        feeds.append((CRDS, slim_crd(policies), cache.crd_changed))
    seen = set()
    for policy in policies.policies:
        for child in policy.child_templates:
            group, _, version = child.api_version.rpartition("/")
            if child.resource is None or (group, child.kind) in seen:
                continue
            seen.add((group, child.kind))
            feeds.append(((group, version, child.resource, child.kind), member, cache.member_changed))
    return feeds


CRDS: t.Final = ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition")


def crd_natives(policies: PolicySet, crd: Obj) -> list[tuple[str, str, str | None]]:
    """``(group, kind, why native or None)`` for each policy whose kind ``crd`` defines and
    that has ``spec.native.crdFields``: the served schema of its first version decides."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return []
    names = spec.get("names")
    plural = names.get("plural") if isinstance(names, dict) else None
    out = []
    for policy in policies.policies:
        if policy.native is None or not policy.native.crd_fields:
            continue
        if (policy.group, policy.resource) == (spec.get("group"), plural):
            out.append((policy.group, policy.kind, schema_native(policy.native, crd, policy.versions[0])))
    return out


def slim_crd(policies: PolicySet) -> t.Callable[[Json], Json]:
    """The watch transform for CRDs: what the kinds it defines say about native mode."""

    def transform(crd: Json) -> Json:
        meta = _meta(crd)
        keep = {k: meta[k] for k in ("name", "resourceVersion") if k in meta}
        natives = [[g, k, why] for g, k, why in crd_natives(policies, crd) if why is not None]
        return {"metadata": keep, "natives": natives}

    return transform
