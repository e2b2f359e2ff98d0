"""Compile a governed object into the Workload, CompositePodGroups and PodGroups it gets.

Names are computed here and only here (:func:`workload_name`, :func:`pod_group_name`):
``wasp compile``, pod stamping and the reconciler all call these, so the name a pod is
stamped with is the name of the PodGroup that gets created.
"""

from __future__ import annotations

import collections
import typing as t
from dataclasses import dataclass, field

from webhook.compiler.builder import Builder
from webhook.compiler.names import generate_pod_group_name, generate_workload_name
from webhook.compiler.types import BuildOptions
from webhook.governed.ownership import WAS_AWARE_KINDS, controller_of
from webhook.governed.tree import ObjectNode, build_tree, get_path
from webhook.policy import NodeSpec, Policy
from webhook.vocab.errors import BuildError
from webhook.vocab.gates import FeatureGates

__all__ = [
    "MANAGED_BY_LABELS",
    "Compiled",
    "compile_object",
    "controller_reference",
    "gate_refusal",
    "leaf_template_name",
    "pod_group_name",
    "workload_name",
    "workload_refusal",
]

Json = dict[str, t.Any]

# docs/decisions.md §23: every object wasp creates carries this label and nothing else.
MANAGED_BY_LABELS: t.Final = {"app.kubernetes.io/managed-by": "wasp"}


def workload_name(object_name: str, uid: str) -> str:
    """The Workload of a governed object: ``<name>-<hash(uid)>``."""
    return generate_workload_name(object_name, uid)


def pod_group_name(object_name: str, uid: str, template_name: str, index: int | None = None) -> str:
    """The (Composite)PodGroup created for ``template_name`` of a governed object; for a
    repeated leaf (``groups``), the one of group ``index``: upstream's ``NewPodGroup`` takes
    any name for a template, so each index hashes into a name of its own."""
    suffix = "" if index is None else f"-{index}"
    return generate_pod_group_name(workload_name(object_name, uid), template_name + suffix)


def leaf_template_name(node: NodeSpec, object_name: str, key: str | None = None) -> str:
    """The template name of ``node`` for an object named ``object_name`` (element ``key``)."""
    return node.template_for(object_name, key or "")


def gate_refusal(policy: Policy, gates: FeatureGates) -> str | None:
    """Why the cluster's gates allow no Workload for this policy's objects, or ``None``.

    A composite tree compiles to ``compositePodGroupTemplates``, which the apiserver forbids
    while ``CompositePodGroup`` is off (upstream's builder knows no gates; the apiserver
    refuses the Workload). ``wasp compile`` and the reconciler refuse it here, with this
    reason, rather than emit an object the cluster rejects."""
    if policy.root.composite and "CompositePodGroup" not in gates:
        return (
            "a composite tree needs feature gate CompositePodGroup, which is off "
            "(the apiserver forbids compositePodGroupTemplates)"
        )
    return None


def workload_refusal(policy: Policy, obj: t.Mapping[str, t.Any], gates: FeatureGates) -> str | None:
    """Why ``obj`` gets no Workload of its own tree at all, or ``None`` when its tree compiles to one.

    The 1.37 Job controller's mode table (docs/design.md §7.1) as it applies to an object on its
    own: a gate that turns Workloads (or this policy's blocks) off, a composite tree without its
    gate, pods that join a user-managed PodGroup, a Job with any controller owner, a CronJob
    included (docs/decisions.md §4): the Job controller leaves its scheduling objects to that owner;
    and a CronJob itself, which gets none either.
    """
    if (policy.group, policy.kind) == ("batch", "CronJob"):
        return (
            "a CronJob gets no Workload, nor do the Jobs it creates: the 1.37 Job controller creates none "
            "for a Job with a controller owner (docs/decisions.md §4)"
        )
    if "GenericWorkload" not in gates:
        return "feature gate GenericWorkload is off"
    if policy.feature_gate and policy.feature_gate not in gates:
        return f"feature gate {policy.feature_gate} is off"
    refusal = gate_refusal(policy, gates)
    if refusal is not None:
        return refusal
    for other in policy.root.exclusive_with:
        if get_path(obj, other) is not None:
            return f"{other} is set: the pods join a user-managed PodGroup"
    if (policy.group, policy.kind) == ("batch", "Job"):
        owner = controller_of(obj)
        if owner is not None:
            owner_group = str(owner.get("apiVersion", "")).rpartition("/")[0]
            if (owner_group, owner.get("kind")) == ("batch", "CronJob"):
                return (
                    f"controlled by CronJob {owner.get('name')}: the 1.37 Job controller creates no Workload "
                    "or PodGroup for a Job with a controller owner, a CronJob's included (docs/decisions.md §4)"
                )
            return f"controlled by {owner.get('kind')} {owner.get('name')}: its controller manages scheduling"
        started = _job_started(obj.get("status"))
        if started is not None:
            return f"the Job is not new ({started}): the Job controller creates objects only for a new Job"
    return None


def _job_started(status: object) -> str | None:
    """What in a Job's status shows it is not new (docs/design.md §7.2), or ``None``.

    Pods of the Job would show it too; they are not in the Job, so only the controller sees them.
    """
    if not isinstance(status, dict):
        return None
    if status.get("startTime"):
        return "status.startTime is set"
    for field_name in ("succeeded", "failed"):
        count = status.get(field_name)
        if isinstance(count, int) and not isinstance(count, bool) and count != 0:
            return f"status.{field_name} is {count}"
    conditions = status.get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == "Suspended":
            return "it has a Suspended condition"
    return None


def controller_reference(obj: t.Mapping[str, t.Any], uid: str) -> Json:
    metadata = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": metadata.get("name", "") if isinstance(metadata, dict) else "",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


@dataclass
class Compiled:
    workload: Json
    composite_pod_groups: list[Json] = field(default_factory=list)
    pod_groups: list[Json] = field(default_factory=list)
    # Templates of repeated leaves: their PodGroups are told apart by name, not by template.
    repeated: frozenset[str] = frozenset()

    def objects(self) -> list[Json]:
        """In creation order: Workload, then composite groups (parents first), then PodGroups."""
        return [self.workload, *self.composite_pod_groups, *self.pod_groups]


def _add_groups(
    builder: Builder, compiled: Compiled, name: str, uid: str, node: ObjectNode, parent_group: str | None
) -> None:
    """The runtime groups of ``node`` and its subtree, in pre-order. A module function, not a
    closure over ``compile_object``: a closure that calls itself is a reference cycle, which
    kept each compilation's tree alive until the cyclic collector ran (most of the reconciler's
    collections in a cold start)."""
    group_name = pod_group_name(name, uid, node.template_name)
    if node.group_count is not None:
        # A repeated leaf: one template, a PodGroup per group index (none for zero groups).
        compiled.repeated |= {node.template_name}
        for index in range(node.group_count):
            group = builder.new_pod_group(
                pod_group_name(name, uid, node.template_name, index), node.template_name
            )
            if parent_group is not None:
                group["spec"]["parentCompositePodGroupName"] = parent_group
            compiled.pod_groups.append(group)
        return
    if node.spec.composite:
        group = builder.new_composite_pod_group(group_name, node.template_name)
        target = compiled.composite_pod_groups
    else:
        group = builder.new_pod_group(group_name, node.template_name)
        target = compiled.pod_groups
    if parent_group is not None:
        group["spec"]["parentCompositePodGroupName"] = parent_group
    target.append(group)
    for child in node.children:
        _add_groups(builder, compiled, name, uid, child, group_name if node.spec.composite else None)


def compile_object(policy: Policy, obj: t.Mapping[str, t.Any], *, uid: str) -> Compiled:
    """Everything ``obj`` compiles to under ``policy``; raises :class:`BuildError` when it cannot.

    PodGroups carry the object's controller reference only: the reference to the Workload
    needs the Workload's UID, which exists once the apiserver has created it.
    """
    metadata = obj.get("metadata") or {}
    name = metadata.get("name", "") if isinstance(metadata, dict) else ""
    namespace = metadata.get("namespace", "") if isinstance(metadata, dict) else ""
    if not isinstance(name, str) or not name:
        raise BuildError("the object has no metadata.name, so its Workload cannot be named")
    tree, problems = build_tree(policy, obj)
    if problems:
        raise BuildError("; ".join(e.error() for e in problems))
    owner = controller_reference(obj, uid)
    options = BuildOptions(
        name=workload_name(name, uid),
        namespace=namespace if isinstance(namespace, str) else "",
        owner=owner,
        allowed_policies=policy.allowed_policies,
        allowed_disruption_modes=policy.allowed_disruption_modes,
    )
    builder = Builder(tree, options)
    compiled = Compiled(builder.build_workload())
    _add_groups(builder, compiled, name, uid, tree, None)
    if (policy.group, policy.kind) not in WAS_AWARE_KINDS:
        # Decision 23: what wasp creates carries its label. A Job's objects are the Job
        # controller's, which labels nothing (docs/design.md §7.2). No copy: the builder is
        # this call's alone, every dict of its Workload is built fresh and PodGroups deep-copy
        # what they take from its templates, so these objects are ours to label.
        for made in compiled.objects():
            made["metadata"].setdefault("labels", {}).update(MANAGED_BY_LABELS)
    seen = collections.Counter(g["metadata"]["name"] for g in compiled.pod_groups)
    twice = sorted(n for n, times in seen.items() if times > 1)
    if twice:
        # A template named like another's group (``replica-1`` beside repeated ``replica``).
        raise BuildError(f"two PodGroups would be named {', '.join(twice)}: rename a template")
    return compiled
