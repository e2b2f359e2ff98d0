"""Update rules a policy can choose for its scheduling blocks (``spec.updateRules``).

* ``elastic`` — the Job rules: the embedding and ``schedulingPolicy`` may not be added or
  removed, the basic/gang variant is frozen, constraints, disruption mode and claims are
  immutable, and only ``gang.minCount`` (``minGroupCount``) may change.
* ``immutable`` — every scheduling block is frozen as a whole.
* ``none`` — no update rules (a CronJob's job template only shapes future Jobs).

Under ``elastic`` and ``immutable`` the set of tree nodes is frozen too, because a
Workload's template lists accept no added or removed items.
Values are compared with :func:`~webhook.vocab.equality.semantic_equal`, the project's one
equality: ``null`` members and empty lists count as absent, an empty object (``basic: {}``)
does not, and a boolean is never a number.
"""

from __future__ import annotations

import typing as t

from webhook.governed.tree import ObjectNode
from webhook.vocab.equality import semantic_equal
from webhook.vocab.field import FieldError, FieldPath, forbidden, invalid

if t.TYPE_CHECKING:
    from webhook.policy import Policy

__all__ = ["update_errors"]

_IMMUTABLE = "field is immutable"


def _elastic(node: ObjectNode, old: ObjectNode) -> list[FieldError]:
    new_block, old_block = node.block, old.block
    if new_block is None and old_block is None:
        return []
    if old_block is None:
        return [invalid(node.path, new_block, "field cannot be set once created", origin="update")]
    if new_block is None:
        return [invalid(node.path, None, "field cannot be cleared once set", origin="update")]
    errors: list[FieldError] = []
    # A block of the wrong type has no members (the structural layer reports its type).
    new_members = new_block if isinstance(new_block, dict) else {}
    old_members = old_block if isinstance(old_block, dict) else {}
    new_policy, old_policy = new_members.get("schedulingPolicy"), old_members.get("schedulingPolicy")
    if old_policy is None and new_policy is not None:
        errors.append(
            invalid(
                node.path.child("schedulingPolicy"),
                new_policy,
                "field cannot be set once created",
                origin="update",
            )
        )
    elif old_policy is not None and new_policy is None:
        errors.append(
            invalid(
                node.path.child("schedulingPolicy"), None, "field cannot be cleared once set", origin="update"
            )
        )
    elif isinstance(new_policy, dict) and isinstance(old_policy, dict):
        # Which of basic and gang each side sets. Equal policies have equal variants, so the
        # variants alone decide (no deep compare); a policy of the wrong type sets neither.
        new_variant = (new_policy.get("basic") is not None, new_policy.get("gang") is not None)
        old_variant = (old_policy.get("basic") is not None, old_policy.get("gang") is not None)
        if new_variant != old_variant and any(new_variant) and any(old_variant):
            count = "gang.minGroupCount" if node.spec.composite else "gang.minCount"
            errors.append(
                invalid(
                    node.path.child("schedulingPolicy"),
                    new_policy,
                    f"may not change between basic and gang once created; only {count} may change",
                    origin="update",
                )
            )
    for name in _COMPOSITE_BLOCKS if node.spec.composite else _LEAF_BLOCKS:
        new_value, old_value = new_members.get(name), old_members.get(name)
        if not semantic_equal(new_value, old_value):
            errors.append(invalid(node.path.child(name), new_value, _IMMUTABLE, origin="immutable"))
    return errors


_COMPOSITE_BLOCKS: t.Final = ("schedulingConstraints", "disruptionMode")
_LEAF_BLOCKS: t.Final = (*_COMPOSITE_BLOCKS, "resourceClaims")


def _immutable(node: ObjectNode, old: ObjectNode) -> list[FieldError]:
    if not semantic_equal(node.block, old.block):
        return [invalid(node.path, node.block, _IMMUTABLE, origin="immutable")]
    return []


def _structure(nodes: list[ObjectNode], stored: t.Mapping[str, ObjectNode]) -> list[FieldError]:
    """Items added to or removed from a repeated part of the tree (``forEach`` nodes)."""
    new_names = {n.template_name for n in nodes}
    errors = []
    for node in nodes:
        if node.spec.for_each is not None and node.template_name not in stored:
            errors.append(forbidden(node.context_path, "item may not be added", origin="update"))
    removed_lists = {
        (n.context_path.segments[:-1], n.spec.id)
        for n in stored.values()
        if n.spec.for_each is not None and n.template_name not in new_names
    }
    for segments, _ in sorted(removed_lists, key=str):
        errors.append(forbidden(FieldPath(segments), "item may not be removed", origin="update"))
    return errors


def update_errors(
    policy: Policy, nodes: list[ObjectNode], stored: t.Mapping[str, ObjectNode]
) -> list[FieldError]:
    """Errors of the change to the tree ``nodes`` (pre-order) under the policy's update rules;
    ``stored`` maps each template name of the stored object's tree to its node."""
    if policy.update_rules == "none":
        return []
    rule = _elastic if policy.update_rules == "elastic" else _immutable
    errors = _structure(nodes, stored)
    for node in nodes:
        old = stored.get(node.template_name)
        if old is not None:
            errors.extend(rule(node, old))
    return errors
