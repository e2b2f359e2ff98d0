"""Stamp ``spec.schedulingGroup.podGroupName`` on pods, and on pod templates of child objects.

For a governed kind whose controller does not stamp its own pods (``stamping.pods``), wasp
sets the PodGroup name on each pod the object controls. When the controller creates
child objects that create the pods (a JobSet's batch/v1 Jobs: ``stamping.childTemplates``),
wasp stamps the child's pod template instead, so the child's own controller sees a
user-managed ``schedulingGroup`` and leaves it alone. A child may hold several pod templates,
each mapped to a leaf (a RayCluster's head and worker groups, keyed by ``groupName``); a
delegated batch/v1 Job child gets the Job controller's annotations instead
(:mod:`webhook.governed.delegation`); templates an outer object leaves out of its groups are
marked :data:`NOT_STAMPED` when the child's own stamping would otherwise name them
(:mod:`webhook.governed.layering`).

The name is computed from the controller ownerReference alone (name and UID of the
governing object) with :func:`webhook.governed.workloads.pod_group_name`, the helper the compiler and
the reconciler use, so no API call is made. Which leaf of the policy's tree a pod belongs
to is read from labels: at each composite node, a child whose ``podLabel`` has a ``value``
the pod's label equals is chosen first, then a child with ``podLabel.key`` when the pod
carries that label (the value is the element's ``itemKey``); otherwise the only unlabelled
child is chosen. A repeated leaf (``groups``) takes the group from the pod's index label.
A pod that cannot be placed is left alone with a warning. Membership by label: :mod:`.membership`.

Never changed: pods or templates that already have a ``schedulingGroup``, objects without
a controller reference, and objects whose controller no stamping policy governs.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.compiler.annotations import GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP
from webhook.governed.delegation import delegates
from webhook.governed.grouping import held_back, missing_template
from webhook.governed.membership import resolve_member, unknown_group
from webhook.governed.ownership import controller_of
from webhook.governed.patch import assoc
from webhook.governed.placement import (
    group_name,
    identity,
    labels_of,
    leaf_group_name,
    leaf_template,
    select_leaf,
)
from webhook.governed.tree import get_path
from webhook.governed.workloads import gate_refusal, pod_group_name
from webhook.policy import ChildTemplate, NodeSpec, Policy, PolicySet
from webhook.policy.model import TemplateMapping
from webhook.vocab.field import FieldPath
from webhook.vocab.gates import FeatureGates

__all__ = ["NOT_STAMPED", "Stamped", "child_template_of", "controller_of", "stamp_child", "stamp_pod"]

Obj = t.Mapping[str, t.Any]

SCHEDULING_GROUP: t.Final = FieldPath.of("spec", "schedulingGroup")
_ANNOTATIONS: t.Final = FieldPath.of("metadata", "annotations")
# Set by an outer object's stamping on a pod template it leaves out of its groups on purpose
# (or cannot place), when the child would otherwise stamp it with names of its own that
# nobody creates (docs/decisions.md §27); the value says why. Pods inherit it.
NOT_STAMPED: t.Final = "scheduling.wasp.dev/not-stamped"
_GATE: t.Final = "GenericWorkload"  # Pod.spec.schedulingGroup is dropped when it is off


@dataclass(frozen=True, slots=True)
class Stamped:
    """The stamped object (the input itself when unchanged), warnings, and the changed roots."""

    object: t.Any
    warnings: tuple[str, ...] = ()
    roots: tuple[FieldPath, ...] = ()


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


def _text(value: object, missing: str = "<unnamed>") -> str:
    """A name for a message: only a string is shown (anything else is the client's garbage,
    possibly a thousand levels deep, and is not what the apiserver would have stored)."""
    return value if isinstance(value, str) and value else missing


def _describe(obj: Obj) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") or metadata.get("generateName") if isinstance(metadata, dict) else None
    return f"{_text(obj.get('kind'), 'object')} {_text(name)}"


def _controller(ref: Obj) -> str:
    return f"{_text(ref.get('kind'), 'object')} {_text(ref.get('name'))}"


def _refusal(policy: Policy, gates: FeatureGates) -> str | None:
    """Why no group of ``policy``'s objects can exist in this cluster (then nothing is stamped:
    a pod must never name a group nobody creates), or ``None``."""
    return f"feature gate {_GATE} is off" if _GATE not in gates else gate_refusal(policy, gates)


def _namespace(obj: Obj) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""


def _stamp(
    obj: Obj, policy: Policy, ref: Obj, path: FieldPath, template: object, policies: PolicySet,
    relation: str = "controlled by", *, guard: bool = True,
) -> Stamped:  # fmt: skip
    where = f"{_describe(obj)} ({relation} {_controller(ref)})"
    if (refused := _refusal(policy, policies.gates)) is not None:
        return Stamped(obj, (f"{where}: not stamped: {refused}",))
    if guard and (held := held_back(policies, _namespace(obj), ref)) is not None:
        return Stamped(obj, (f"{where}: not stamped: {held}",))
    try:
        labels = labels_of(obj, template)
        name = group_name(policy, ref, labels)
        stamped = assoc(obj, path, {"podGroupName": name})
    except ValueError as exc:
        return Stamped(obj, (f"{where}: not stamped: {exc}",))
    if guard and (unfit := _unfit(policies, _namespace(obj), ref, _template_of(policy, ref, labels))):
        return Stamped(obj, (f"{where}: not stamped: {unfit}",))
    return Stamped(stamped, (), (path,))


def _template_of(policy: Policy, ref: Obj, labels: t.Mapping[str, str]) -> str:
    """The Workload template of the leaf a pod with ``labels`` joins (its group is named)."""
    selected = select_leaf(policy, labels)
    assert not isinstance(selected, str)  # group_name chose it
    return leaf_template(ref, *selected)


def _unfit(policies: PolicySet, namespace: str, ref: Obj, template: str) -> str | None:
    return missing_template(policies, namespace, ref, template)


def stamp_pod(pod: object, policies: PolicySet, *, guard: bool = True) -> Stamped:
    """Set ``spec.schedulingGroup.podGroupName`` on a core/v1 Pod whose controller is governed
    by a policy with ``stamping.pods: true``, or that belongs by label to an object of a policy
    with ``stamping.membership`` (may raise ``IdentityUnavailable``); else it comes back as is.
    Unless the workload is held back (:mod:`webhook.governed.grouping`; ``guard=False``: not
    asked, for classifying pods that exist)."""
    if not isinstance(pod, dict) or pod.get("apiVersion") != "v1" or pod.get("kind") != "Pod":
        return Stamped(pod)
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("schedulingGroup") is not None or _marked(pod):
        return Stamped(pod)
    ref = controller_of(pod)
    policy = _policy_of(ref, policies) if ref is not None else None
    if ref is not None and policy is not None and policy.stamp_pods:
        return _stamp(pod, policy, ref, SCHEDULING_GROUP, None, policies, guard=guard)
    member = resolve_member(pod, policies, lookup=_GATE in policies.gates)
    if member is None or isinstance(member, str):
        return Stamped(pod, () if member is None else (f"{_describe(pod)} {member}",))
    stamped = _stamp(
        pod, member.policy, member.ref, SCHEDULING_GROUP, None, policies, "member of", guard=guard
    )
    why_not = unknown_group(stamped.object, member) if stamped.roots else None
    return stamped if why_not is None else Stamped(pod, (f"{_describe(pod)} {why_not}",))


def stamp_child(obj: object, policies: PolicySet, *, guard: bool = True) -> Stamped:
    """Stamp the pod templates of a child object (a JobSet's batch/v1 Job, a RayJob's
    RayCluster) whose controller's policy lists its kind under ``stamping.childTemplates``;
    a delegated Job child gets the Job controller's annotations instead (:func:`_delegate`).
    A held-back workload (:mod:`webhook.governed.grouping`) gets nothing (its templates are
    marked when the child's own stamping would name them); ``guard=False`` does not ask."""
    if not isinstance(obj, dict):
        return Stamped(obj)
    found = child_template_of(obj, policies)
    if found is None:
        return Stamped(obj)
    policy, child, ref = found
    where = f"{_describe(obj)} (controlled by {_controller(ref)})"
    if (refused := _refusal(policy, policies.gates)) is not None:
        return Stamped(obj, (f"{where}: not stamped: {refused}",))
    held = held_back(policies, _namespace(obj), ref) if guard else None
    if held is None and delegates(child, policies.gates):
        return _delegate(obj, policy, child, ref, where)
    # A child governed by a stamping policy of its own (a JobSet under a TrainJob) would stamp
    # what it creates with its own names, which nobody creates (it defers to this object):
    # every template left unstamped here is marked, so that it is left alone below too.
    own = policies.for_object(obj)
    mark = own is not None and (own.stamp_pods or bool(own.child_templates))
    current: t.Any = obj
    warnings: list[str] = [] if held is None else [f"{where}: not stamped: {held}"]
    roots: list[FieldPath] = []
    if held is not None and not mark:
        return Stamped(obj, tuple(warnings))
    for mapping in child.templates:
        for path, key, why_not in _locations(obj, mapping, warnings, where):
            why_not = why_not if held is None else held
            template = get_path(obj, path)
            template_spec = template.get("spec") if isinstance(template, dict) else None
            if not isinstance(template, dict) or not (
                template_spec is None or isinstance(template_spec, dict)
            ):
                warnings.append(f"{where}: not stamped: {path} is not a pod template")
                continue
            if (template_spec is not None and template_spec.get("schedulingGroup") is not None) or _marked(
                template
            ):
                continue
            if why_not is None:
                try:
                    labels = labels_of(obj, template)
                    name = _mapped_group_name(policy, mapping, ref, key, labels)
                    if guard:
                        leaf = policy.node(mapping.node) if mapping.node is not None else None
                        chosen = (
                            leaf_template(ref, leaf, key)
                            if leaf is not None
                            else _template_of(policy, ref, labels)
                        )
                        why_not = _unfit(policies, _namespace(obj), ref, chosen)
                        if why_not is not None:
                            raise ValueError(why_not)
                except ValueError as exc:
                    why_not = f"{path}: {exc}"
                    warnings.append(f"{where}: not stamped: {why_not}")
                else:
                    current = assoc(current, path / SCHEDULING_GROUP, {"podGroupName": name})
                    roots.append(path / SCHEDULING_GROUP)
                    continue
            if mark:
                marker = (path / _ANNOTATIONS).key(NOT_STAMPED)
                try:
                    current = assoc(current, marker, why_not)
                except ValueError as exc:  # metadata that is not an object
                    warnings.append(f"{where}: cannot mark {path} as not stamped: {exc}")
                    continue
                roots.append(marker)
    return Stamped(current, tuple(warnings), tuple(roots))


def _locations(
    obj: Obj, mapping: TemplateMapping, warnings: list[str], where: str
) -> list[tuple[FieldPath, str | None, str | None]]:
    """``(template path, element key, why it is deliberately left out)`` for each pod
    template ``mapping`` names in ``obj``."""
    if mapping.for_each is None or mapping.item_key is None:
        return [(mapping.path, None, None)]
    elements = get_path(obj, mapping.for_each)
    if elements is None:
        return []
    if not isinstance(elements, list):
        warnings.append(f"{where}: not stamped: {mapping.for_each} is not a list")
        return []
    out: list[tuple[FieldPath, str | None, str | None]] = []
    for i, element in enumerate(elements):
        raw = get_path(element, mapping.item_key)
        key = raw if isinstance(raw, str) and raw else None
        why_not = None
        if mapping.only is not None and key not in mapping.only:
            wanted = ", ".join(sorted(mapping.only))
            why_not = f"its {mapping.item_key} is {key!r}: only {wanted} join the groups of its controller"
        out.append((mapping.for_each.index(i) / mapping.path, key, why_not))
    return out


def _mapped_group_name(
    policy: Policy, mapping: TemplateMapping, ref: Obj, key: str | None, labels: t.Mapping[str, str]
) -> str:
    if mapping.node is None:
        return group_name(policy, ref, labels)
    leaf = policy.node(mapping.node)
    assert leaf is not None  # checked when the policy loaded
    if leaf.for_each is not None and key is None:
        raise ValueError(f"its {mapping.item_key} is not set, so it matches no element of node {leaf.id!r}")
    return leaf_group_name(ref, leaf, key if leaf.for_each is not None else None)


def _delegate(obj: Obj, policy: Policy, child: ChildTemplate, ref: Obj, where: str) -> Stamped:
    """Set ``scheduling.k8s.io/group-template-name`` (and the parent composite's PodGroup
    name, docs/decisions.md §5) on a child Job, so that the 1.37 Job controller creates its
    PodGroup in the parent's Workload and stamps its pods (docs/design.md §7.5)."""
    mapping = child.templates[0]
    template = get_path(obj, mapping.path)
    template_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(template_spec, dict) and template_spec.get("schedulingGroup") is not None:
        return Stamped(obj)  # the user's own PodGroup: the Job controller leaves the Job alone
    annotations = _annotations(obj)
    if GROUP_TEMPLATE_NAME in annotations or _marked(template):
        return Stamped(obj)
    try:
        if mapping.node is None:
            selected = select_leaf(policy, labels_of(obj, template))
            if isinstance(selected, str):
                raise ValueError(selected)
            leaf, key = selected
        else:
            found = policy.node(mapping.node)
            assert found is not None  # checked when the policy loaded
            leaf, key = found, None
        wanted = {GROUP_TEMPLATE_NAME: leaf_template(ref, leaf, key)}
        parent = _parent(policy.root, leaf.id)
        if parent is not None:
            if parent.for_each is not None:
                raise ValueError(
                    f"its leaf's composite node {parent.id!r} repeats, so its group cannot be named"
                )
            name, uid = identity(ref)
            wanted[PARENT_COMPOSITE_POD_GROUP] = pod_group_name(name, uid, parent.template_for(name))
    except ValueError as exc:
        return Stamped(obj, (f"{where}: not delegated: {exc}",))
    current: t.Any = obj
    roots = []
    try:
        for annotation, value in wanted.items():
            current = assoc(current, _ANNOTATIONS.key(annotation), value)
            roots.append(_ANNOTATIONS.key(annotation))
    except ValueError as exc:  # metadata or annotations that are not objects
        return Stamped(obj, (f"{where}: not delegated: {exc}",))
    return Stamped(current, (), tuple(roots))


def _parent(root: NodeSpec, node_id: str) -> NodeSpec | None:
    for node in root.walk():
        if any(c.id == node_id for c in node.children):
            return node
    return None


def _annotations(obj: object) -> t.Mapping[str, object]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _marked(obj: object) -> bool:
    """Whether an outer object's stamping left this pod (template) out on purpose."""
    return NOT_STAMPED in _annotations(obj)
