"""``mutate_object``: the one function behind the mutating webhook (pure: no Flask, no API).

It chains the three mutators on a copy-on-write copy of the object and diffs once:

1. :func:`~webhook.governed.defaulting.default_object`, when a policy governs the object — except
   for a child object of a governed controller (below): the child belongs to its parent's
   Workload, and a ``spec.scheduling`` of its own next to the stamped template would be
   both a second Workload and Forbidden (docs/decisions.md §3);
2. :func:`~webhook.governed.stamping.stamp_child`, when the object is a child template of a
   governed kind (``stamping.childTemplates``): its pod templates are stamped, or a delegated
   Job is annotated for the Job controller; an inner governed object that is no child
   template is not defaulted either (:mod:`webhook.governed.layering`);
3. :func:`~webhook.governed.stamping.stamp_pod`, when it is a core/v1 Pod (by its controller,
   or by a membership label: :mod:`webhook.governed.membership`).

The patch is built by diffing, never by hand: ``jsonpatch.make_patch`` turns the original into
the mutated object (:func:`~webhook.governed.patch.diff`, run only when a mutator reports a
subtree it touched). Mutation happens on
CREATE only: every block wasp writes is frozen or NoSet once the object exists.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.defaulting import Defaulted, default_object
from webhook.governed.delegation import clashes
from webhook.governed.layering import outer_owner
from webhook.governed.patch import PatchOp, diff
from webhook.governed.stamping import Stamped, child_template_of, stamp_child, stamp_pod
from webhook.governed.tree import build_tree
from webhook.policy import PolicySet
from webhook.vocab.field import FieldPath

__all__ = ["Defaulted", "Mutation", "Stamped", "default_object", "mutate_object", "stamp_child", "stamp_pod"]


@dataclass(frozen=True, slots=True)
class Mutation:
    """The mutated object (the input itself when nothing changed), its RFC 6902 patch
    against the input (``[]`` when nothing changed) and the warnings for the user."""

    object: t.Any
    patch: list[PatchOp] = field(default_factory=list)
    warnings: tuple[str, ...] = ()


def mutate_object(obj: object, policies: PolicySet, *, operation: str, old_obj: object = None) -> Mutation:
    """Default and stamp ``obj`` as the admission ``operation`` requires; never modifies it.

    ``old_obj`` is the stored object on UPDATE (``None`` on CREATE); it is passed to the
    defaulting step, which does not read it. Malformed input gives no patch and, when
    there is anything to say, a warning; it raises only
    :class:`~webhook.governed.membership.IdentityUnavailable`, for a member pod whose object's
    UID cannot be known right now (the server answers it with a retriable error).
    """
    if not isinstance(obj, dict):
        return Mutation(obj, [], (f"not a Kubernetes object: a {type(obj).__name__}, not a mapping",))
    if operation != "CREATE":
        return Mutation(obj)  # every block wasp writes is frozen (or NoSet) once created
    current: t.Any = obj
    warnings: list[str] = []
    roots: list[FieldPath] = []
    steps: list[t.Callable[[t.Any], Defaulted | Stamped]] = []
    if child_template_of(obj, policies) is not None:
        steps.append(lambda o: stamp_child(o, policies))
    elif outer_owner(obj, policies) is None:
        # An inner governed object (docs/decisions.md §27) is not defaulted: it gets no
        # Workload, so blocks of its own would mean nothing.
        steps.append(lambda o: default_object(o, policies, operation=operation, old_obj=old_obj))
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Pod":
        steps.append(lambda o: stamp_pod(o, policies))
    for step in steps:
        result = step(current)
        current = result.object
        warnings.extend(result.warnings)
        roots.extend(result.roots)
    warnings.extend(_delegation_clashes(current, policies))
    patch: list[PatchOp] = diff(obj, current) if roots else []
    return Mutation(current, patch, tuple(dict.fromkeys(warnings)))


def _delegation_clashes(obj: t.Mapping[str, t.Any], policies: PolicySet) -> list[str]:
    """Warnings for a root whose elements would make several delegating Jobs on one template
    (the reconciler then creates nothing for it: docs/decisions.md §27)."""
    policy = policies.for_object(obj)
    if policy is None or not any(c.mode == "delegate" for c in policy.child_templates):
        return []
    if outer_owner(obj, policies) is not None:
        return []
    return clashes(policy, build_tree(policy, obj)[0], policies.gates)
