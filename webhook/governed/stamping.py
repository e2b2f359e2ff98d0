"""Stamp ``spec.schedulingGroup.podGroupName`` on pods, and on pod templates of child objects.

For a governed kind whose controller does not stamp its own pods (``stamping.pods``), wasp
sets the PodGroup name on each pod the object controls. When the controller creates
child objects that create the pods (a JobSet's batch/v1 Jobs: ``stamping.childTemplates``),
wasp stamps the child's pod template instead, so the child's own controller sees a
user-managed ``schedulingGroup`` and leaves it alone.

The name is computed from the controller ownerReference alone (name and UID of the
governing object) with :func:`webhook.governed.workloads.pod_group_name`, the helper the compiler and
the reconciler use, so no API call is made. Which leaf of the policy's tree a pod belongs
to is read from labels: at each composite node, a child with ``podLabel.key`` is chosen
when the pod carries that label (the value is the element's ``itemKey``); otherwise the
only unlabelled child is chosen. A pod that cannot be placed is left alone with a warning.

Never changed: pods or templates that already have a ``schedulingGroup``, objects without
a controller reference, and objects whose controller no stamping policy governs.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.governed.patch import assoc
from webhook.governed.tree import get_path
from webhook.governed.workloads import leaf_template_name, pod_group_name
from webhook.policy import ChildTemplate, NodeSpec, Policy, PolicySet
from webhook.vocab.field import FieldPath
from webhook.vocab.formats import dns_label
from webhook.vocab.gates import FeatureGates

__all__ = ["Stamped", "child_template_of", "controller_of", "stamp_child", "stamp_pod"]

Obj = t.Mapping[str, t.Any]

SCHEDULING_GROUP: t.Final = FieldPath.of("spec", "schedulingGroup")
_GATE: t.Final = "GenericWorkload"  # Pod.spec.schedulingGroup is dropped when it is off


@dataclass(frozen=True, slots=True)
class Stamped:
    """The stamped object (the input itself when unchanged), warnings, and the changed roots."""

    object: t.Any
    warnings: tuple[str, ...] = ()
    roots: tuple[FieldPath, ...] = ()


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, or ``None`` (absent or malformed)."""
    metadata = obj.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, dict) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def _policy_of(ref: Obj, policies: PolicySet) -> Policy | None:
    api_version, kind = ref.get("apiVersion"), ref.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    return policies.for_kind(api_version, kind)


def child_template_of(obj: Obj, policies: PolicySet) -> tuple[Policy, ChildTemplate, Obj] | None:
    """``(policy, child template, controller ref)`` when ``obj`` is a child whose controller's
    policy lists its apiVersion and kind under ``stamping.childTemplates``; else ``None``."""
    ref = controller_of(obj)
    policy = _policy_of(ref, policies) if ref is not None else None
    if ref is None or policy is None:
        return None
    for child in policy.child_templates:
        if child.api_version == obj.get("apiVersion") and child.kind == obj.get("kind"):
            return policy, child, ref
    return None


def _labels(*objs: object) -> dict[str, str]:
    """Merged string labels of ``objs``; earlier objects win."""
    out: dict[str, str] = {}
    for obj in reversed(objs):
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if isinstance(labels, dict):
            out.update((k, v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str))
    return out


def _select_leaf(policy: Policy, labels: t.Mapping[str, str]) -> tuple[NodeSpec, str | None] | str:
    """The leaf (and its element key) a pod with ``labels`` belongs to, or why there is none."""
    node, key = policy.root, None
    while node.composite:
        labelled = [
            (c, labels[c.pod_label])
            for c in node.children
            if c.pod_label is not None and c.pod_label in labels
        ]
        plain = [(c, None) for c in node.children if c.pod_label is None]
        candidates: list[tuple[NodeSpec, str | None]] = list(labelled or plain)
        if len(candidates) != 1:
            wanted = sorted({c.pod_label for c in node.children if c.pod_label is not None})
            return (
                f"cannot tell which child of node {node.id!r} it belongs to "
                f"(labels: {', '.join(wanted) or 'none configured'})"
            )
        node, key = candidates[0]
    return node, key


def _group_name(policy: Policy, ref: Obj, labels: t.Mapping[str, str]) -> str:
    """The PodGroup name for a pod under ``ref``; raises ``ValueError`` saying why it has none."""
    name, uid = ref.get("name"), ref.get("uid")
    if not isinstance(name, str) or not name or not isinstance(uid, str) or not uid:
        raise ValueError("its controller ownerReference has no name or uid")
    selected = _select_leaf(policy, labels)
    if isinstance(selected, str):
        raise ValueError(selected)
    leaf, key = selected
    if "{key}" in leaf.template_name and key is None:
        raise ValueError(f"node {leaf.id!r} needs an element key but has no podLabel to read it from")
    template = leaf_template_name(leaf, name, key)
    if key is not None and (not key or dns_label(template)):
        # No API call here, so membership cannot be checked; a value that cannot be any
        # element's key (it gives an invalid template name) is certainly unknown.
        raise ValueError(f"label {leaf.pod_label}={key!r} names no element of node {leaf.id!r}")
    return pod_group_name(name, uid, template)


def _describe(obj: Obj) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") or metadata.get("generateName") if isinstance(metadata, dict) else None
    return f"{obj.get('kind')} {name or '<unnamed>'}"


def _stamp(
    obj: Obj, policy: Policy, ref: Obj, path: FieldPath, template: object, gates: FeatureGates
) -> Stamped:
    where = f"{_describe(obj)} (controlled by {ref.get('kind')} {ref.get('name')})"
    if _GATE not in gates:
        return Stamped(obj, (f"{where}: not stamped: feature gate {_GATE} is off",))
    try:
        name = _group_name(policy, ref, _labels(obj, template))
        stamped = assoc(obj, path, {"podGroupName": name})
    except ValueError as exc:
        return Stamped(obj, (f"{where}: not stamped: {exc}",))
    return Stamped(stamped, (), (path,))


def stamp_pod(pod: object, policies: PolicySet) -> Stamped:
    """Set ``spec.schedulingGroup.podGroupName`` on a core/v1 Pod whose controller is governed
    by a policy with ``stamping.pods: true``; every other input comes back unchanged."""
    if not isinstance(pod, dict) or pod.get("apiVersion") != "v1" or pod.get("kind") != "Pod":
        return Stamped(pod)
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("schedulingGroup") is not None:
        return Stamped(pod)
    ref = controller_of(pod)
    policy = _policy_of(ref, policies) if ref is not None else None
    if ref is None or policy is None or not policy.stamp_pods:
        return Stamped(pod)
    return _stamp(pod, policy, ref, SCHEDULING_GROUP, None, policies.gates)


def stamp_child(obj: object, policies: PolicySet) -> Stamped:
    """Set ``schedulingGroup.podGroupName`` in the pod template of a child object (e.g. a
    batch/v1 Job) whose controller's policy lists it under ``stamping.childTemplates``."""
    if not isinstance(obj, dict):
        return Stamped(obj)
    found = child_template_of(obj, policies)
    if found is None:
        return Stamped(obj)
    policy, child, ref = found
    template = get_path(obj, child.template_path)
    template_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(template, dict) or not (template_spec is None or isinstance(template_spec, dict)):
        return Stamped(obj, (f"{_describe(obj)}: not stamped: {child.template_path} is not a pod template",))
    if template_spec is not None and template_spec.get("schedulingGroup") is not None:
        return Stamped(obj)
    return _stamp(obj, policy, ref, child.template_path / SCHEDULING_GROUP, template, policies.gates)
