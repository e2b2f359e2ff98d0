"""``PodGroup`` (docs/design.md §5.3) and ``CompositePodGroup`` (docs/design.md §5.4) specs.

Their hand-written validation checks metadata only (docs/design.md §5.3, §5.4); every spec rule is a
declarative marker, declared in the building-block document and applied by ``declared``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from webhook.scheduling_objects.declared import STRUCTS, gated_fields, validate_struct
from webhook.scheduling_objects.gating import drop_flat
from webhook.scheduling_objects.markers import Ctx, Errors, Old, as_object, is_update, unchanged
from webhook.vocab.field import FieldPath


def validate_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a PodGroup."""
    return _validate_spec(spec_value, old_spec, ctx, "PodGroupSpec")


def validate_composite_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a CompositePodGroup: workloadRef required, the whole policy immutable."""
    return _validate_spec(spec_value, old_spec, ctx, "CompositePodGroupSpec")


def with_defaults(spec: object, struct: str) -> object:
    """The spec as the apiserver decodes it: a missing spec is the zero struct, and a missing
    member with a declared default (``x-k8s-default``: ``disruptionMode`` is ``{"single": {}}``)
    gets it. The apiserver defaults the stored object too when it decodes it for an UPDATE
    (docs/decisions.md E3), so both sides go through here. The caller's mapping is copied,
    never changed."""
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        return spec
    defaults = {
        key: decl["x-k8s-default"]
        for key, decl in STRUCTS[struct]["properties"].items()
        if "x-k8s-default" in decl and spec.get(key) is None
    }
    return {**spec, **copy.deepcopy(defaults)} if defaults else spec


def _validate_spec(spec_value: object, old_spec: Old, ctx: Ctx, struct: str) -> Errors:
    path = FieldPath.of("spec")
    spec_value = with_defaults(spec_value, struct)
    old_spec = with_defaults(old_spec, struct) if is_update(old_spec) else old_spec
    if unchanged(spec_value, old_spec):
        return []
    spec, errs = as_object(spec_value, path)
    if spec is None:
        return errs
    spec = drop_flat(spec, old_spec, path, gated_fields(struct), ctx)
    # parentCompositePodGroupName's "requires workloadRef" rule is alpha-only and not enforced
    # (docs/decisions.md §13).
    return validate_struct(struct, spec, old_spec, path, ctx)


def priority_plugin_warning(spec: object, old_spec: Old) -> list[str]:
    """The Priority admission plugin resolves ``priority`` from ``priorityClassName`` and
    rejects a PodGroup whose user-set ``priority`` differs. wasp cannot read PriorityClasses
    offline, so a user-set priority on create is a warning, not an error."""
    if is_update(old_spec) or not isinstance(spec, Mapping) or spec.get("priority") is None:
        return []
    return [
        "spec.priority: set by hand; the Priority admission plugin fills it from "
        "spec.priorityClassName and rejects the PodGroup unless the value matches that class"
    ]
