"""``mutate_object``: the one function behind the mutating webhook (pure: no Flask, no API).

It chains the three mutators on a copy-on-write copy of the object and diffs once:

1. :func:`~webhook.governed.defaulting.default_object`, when a policy governs the object — except
   for a child object of a governed controller (below): the child belongs to its parent's
   Workload, and a ``spec.scheduling`` of its own next to the stamped template would be
   both a second Workload and Forbidden (docs/decisions.md §3);
2. :func:`~webhook.governed.stamping.stamp_child`, when the object is a child template of a
   governed kind (``stamping.childTemplates``);
3. :func:`~webhook.governed.stamping.stamp_pod`, when it is a core/v1 Pod.

Every mutator reports the subtrees it touched; :func:`webhook.governed.patch.make_patch` diffs only
those, so the patch is built by diffing, never by hand, and costs a few µs. Mutation
happens on CREATE only: every block wasp writes is frozen or NoSet once the object exists.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.defaulting import Defaulted, default_object
from webhook.governed.patch import PatchOp, make_patch
from webhook.governed.stamping import Stamped, child_template_of, stamp_child, stamp_pod
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
    there is anything to say, a warning; it never raises.
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
    else:
        steps.append(lambda o: default_object(o, policies, operation=operation, old_obj=old_obj))
    if obj.get("apiVersion") == "v1" and obj.get("kind") == "Pod":
        steps.append(lambda o: stamp_pod(o, policies))
    for step in steps:
        result = step(current)
        current = result.object
        warnings.extend(result.warnings)
        roots.extend(result.roots)
    patch = make_patch(obj, current, roots=roots) if roots else []
    return Mutation(current, patch, tuple(dict.fromkeys(warnings)))
