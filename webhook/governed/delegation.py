"""Which leaves of a governed object are delegated to the 1.37 Job controller, and when not.

A ``childTemplates`` entry with ``mode: delegate`` (batch/v1 Jobs only) makes the mutating
webhook set ``scheduling.k8s.io/group-template-name`` on each child Job instead of stamping
its pod template; the Job controller then creates the child's PodGroup in the parent's
Workload (named from the parent Workload and the template) and stamps its pods, so the
reconciler creates the parent's Workload and composite groups but not those leaves'
PodGroups. The webhook, ``wasp compile`` and the reconciler all ask this module, so they
never disagree about which groups wasp creates.

Delegation is in effect only while ``WorkloadWithJob`` is on (the Job controller's gate);
with it off, a delegating child template stamps, as ``mode: stamp`` does.

Sibling-name clash (docs/decisions.md §27): the Job controller names a delegated PodGroup
from the parent Workload and the template alone, so several Jobs made from one element
(JobSet ``replicas: 3``) would compute one name. :func:`clashes` finds such elements
from the policy's ``children`` count; the reconciler then creates nothing for the object
(default scheduling, an Event says why) and the webhook warns when the object is created.
"""

from __future__ import annotations

import typing as t

from webhook.governed.tree import ObjectNode, build_tree, get_path
from webhook.policy import ChildTemplate, Policy
from webhook.vocab.gates import FeatureGates

__all__ = ["JOB_GATE", "clashes", "delegated_leaves", "delegated_templates", "delegates", "leaves_of"]

JOB_GATE: t.Final = "WorkloadWithJob"


def delegates(child: ChildTemplate, gates: FeatureGates) -> bool:
    """Whether ``child`` is delegated under ``gates`` (else it is stamped)."""
    return child.mode == "delegate" and JOB_GATE in gates


def leaves_of(policy: Policy, child: ChildTemplate) -> frozenset[str]:
    """The ids of the leaves ``child``'s templates map to (all leaves when chosen by labels)."""
    ids: set[str] = set()
    for mapping in child.templates:
        if mapping.node is None:
            ids.update(n.id for n in policy.root.walk() if not n.composite)
        else:
            ids.add(mapping.node)
    return frozenset(ids)


def delegated_leaves(policy: Policy, gates: FeatureGates) -> frozenset[str]:
    """The ids of the leaves whose PodGroups the Job controller creates, not wasp."""
    out: frozenset[str] = frozenset()
    for child in policy.child_templates:
        if delegates(child, gates):
            out |= leaves_of(policy, child)
    return out


def delegated_templates(policy: Policy, obj: t.Mapping[str, t.Any], gates: FeatureGates) -> frozenset[str]:
    """The template names of ``obj``'s delegated leaves, whose PodGroups the Job controller
    creates (the reconciler leaves them out; ``wasp compile`` says so)."""
    leaves = delegated_leaves(policy, gates)
    if not leaves:
        return frozenset()
    return frozenset(n.template_name for n in build_tree(policy, obj)[0].walk() if n.spec.id in leaves)


def clashes(policy: Policy, tree: ObjectNode, gates: FeatureGates) -> list[str]:
    """One message per element of ``tree`` from which several delegating Jobs would be made."""
    out: list[str] = []
    for child in policy.child_templates:
        if not delegates(child, gates) or child.children is None or child.children.path is None:
            continue
        ids = leaves_of(policy, child)
        for node in tree.walk():
            if node.spec.id not in ids:
                continue
            raw = get_path(node.context, child.children.path)
            count = raw if isinstance(raw, int) and not isinstance(raw, bool) else child.children.default
            if count > 1:
                where = node.context_path / child.children.path
                out.append(
                    f"{where} is {count}: {count} {child.kind}s would delegate to template "
                    f"{node.template_name} and share one PodGroup name (docs/decisions.md §27), so no "
                    "Workload is created for this object and its pods get default scheduling; "
                    f"make it 1, or govern {child.kind}s with mode: stamp"
                )
    return out
