"""Which PodGroup a pod (or a pod template) belongs to: the leaf its labels select in the
policy's tree, the element key, a repeated leaf's group index, and the name, computed from
the governing object's ownerReference (name and UID) alone, with no API call.

At each composite node a child whose ``podLabel`` has a ``value`` the pod's label equals is
chosen first, then a child with ``podLabel.key`` when the pod carries that label (the value is
the element's key); otherwise the only unlabelled child. Every "no group" is a ``ValueError``
saying why, so the caller leaves the pod alone with that warning.
"""

from __future__ import annotations

import typing as t

from webhook.governed.workloads import leaf_template_name, pod_group_name
from webhook.policy import NodeSpec, Policy
from webhook.vocab.formats import dns_label

__all__ = [
    "group_index",
    "group_name",
    "identity",
    "labels_of",
    "leaf_group_name",
    "leaf_template",
    "select_leaf",
]

Obj = t.Mapping[str, t.Any]


def labels_of(*objs: object) -> dict[str, str]:
    """Merged string labels of ``objs``; earlier objects win."""
    out: dict[str, str] = {}
    for obj in reversed(objs):
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if isinstance(labels, dict):
            out.update((k, v) for k, v in labels.items() if isinstance(k, str) and isinstance(v, str))
    return out


def select_leaf(policy: Policy, labels: t.Mapping[str, str]) -> tuple[NodeSpec, str | None] | str:
    """The leaf (and its element key) a pod with ``labels`` belongs to, or why there is none."""
    node, key = policy.root, None
    while node.composite:
        # A child claiming a label value (a RayCluster head: ray.io/node-type=head) wins over a
        # child keyed by a label the pod also carries (ray.io/group=headgroup names no worker group).
        fixed = [
            (c, None)
            for c in node.children
            if c.pod_label_value is not None and labels.get(t.cast(str, c.pod_label)) == c.pod_label_value
        ]
        labelled = [
            (c, labels[c.pod_label])
            for c in node.children
            if c.pod_label is not None and c.pod_label_value is None and c.pod_label in labels
        ]
        plain = [(c, None) for c in node.children if c.pod_label is None]
        candidates: list[tuple[NodeSpec, str | None]] = list(fixed or labelled or plain)
        if len(candidates) != 1:
            wanted = sorted({c.pod_label for c in node.children if c.pod_label is not None})
            return (
                f"cannot tell which child of node {node.id!r} it belongs to "
                f"(labels: {', '.join(wanted) or 'none configured'})"
            )
        node, key = candidates[0]
    return node, key


def group_name(policy: Policy, ref: Obj, labels: t.Mapping[str, str]) -> str:
    """The PodGroup name for a pod under ``ref``; raises ``ValueError`` saying why it has none."""
    identity(ref)
    selected = select_leaf(policy, labels)
    if isinstance(selected, str):
        raise ValueError(selected)
    leaf, key = selected
    if leaf.groups is not None:
        name, uid = identity(ref)
        return pod_group_name(name, uid, leaf_template(ref, leaf, key), group_index(leaf, labels))
    return leaf_group_name(ref, leaf, key)


def group_index(leaf: NodeSpec, labels: t.Mapping[str, str]) -> int:
    """The group index of a pod of a repeated leaf, from its labels; ``ValueError`` when the
    pod has none, or one no group has (at or past the count, where a label carries it)."""
    label = t.cast(str, leaf.group_index_label)
    raw = labels.get(label)
    if raw is None:
        raise ValueError(f"it has no label {label}, which holds its group index")
    if not raw.isdigit() or (raw != "0" and raw.startswith("0")):
        raise ValueError(f"label {label}={raw!r} is not a group index")
    index = int(raw)
    count_label = leaf.group_count_label
    if count_label is not None:
        count = labels.get(count_label)
        if count is None or not count.isdigit():
            raise ValueError(f"label {count_label}={count!r} does not say how many groups there are")
        if index >= int(count):
            raise ValueError(
                f"label {label}={index} is past the {count} groups ({count_label}): no such group"
            )
    return index


def identity(ref: Obj) -> tuple[str, str]:
    """The governing object's name and UID from its ownerReference, or ``ValueError``."""
    name, uid = ref.get("name"), ref.get("uid")
    if not isinstance(name, str) or not name or not isinstance(uid, str) or not uid:
        raise ValueError("its controller ownerReference has no name or uid")
    return name, uid


def leaf_template(ref: Obj, leaf: NodeSpec, key: str | None) -> str:
    """The template name of ``leaf`` (element ``key``) of the object ``ref`` names; raises
    ``ValueError`` when no template of that object can have it."""
    name, _ = identity(ref)
    if "{key}" in leaf.template_name and key is None:
        raise ValueError(f"node {leaf.id!r} needs an element key but has no podLabel to read it from")
    template = leaf_template_name(leaf, name, key)
    if key is not None and (not key or dns_label(template)):
        # No API call here, so membership cannot be checked; a value that cannot be any
        # element's key (it gives an invalid template name) is certainly unknown.
        source = f"label {leaf.pod_label}" if leaf.pod_label is not None else "key"
        raise ValueError(f"{source}={key!r} names no element of node {leaf.id!r}")
    return template


def leaf_group_name(ref: Obj, leaf: NodeSpec, key: str | None) -> str:
    """The PodGroup name of ``leaf`` (element ``key``) of the object ``ref`` names."""
    name, uid = identity(ref)
    if leaf.groups is not None:
        # Each group of a repeated leaf has a name of its own; only a pod's labels say which.
        raise ValueError(f"node {leaf.id!r} repeats as groups: only its pods' index labels name them")
    return pod_group_name(name, uid, leaf_template(ref, leaf, key))
