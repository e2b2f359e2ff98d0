"""``PodGroup`` (docs/design.md §5.3) and ``CompositePodGroup`` (docs/design.md §5.4) specs.

Their hand-written validation checks metadata only (docs/design.md §5.3, §5.4); every spec rule here is a
declarative marker.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.scheduling_objects.blocks import (
    COMPOSITE_OBJECT,
    LONG_NAME,
    POD_GROUP,
    GroupShape,
    frozen_field,
    validate_group_fields,
    validate_workload_ref,
)
from webhook.scheduling_objects.gating import drop_flat
from webhook.scheduling_objects.markers import (
    Ctx,
    Errors,
    Old,
    as_object,
    immutable,
    is_update,
    old_child,
    string_value,
    unchanged,
)
from webhook.vocab.field import FieldPath, required


def validate_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a PodGroup."""
    return _validate_spec(spec_value, old_spec, ctx, POD_GROUP, workload_ref_required=False)


def validate_composite_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a CompositePodGroup: workloadRef required, the whole policy immutable."""
    return _validate_spec(spec_value, old_spec, ctx, COMPOSITE_OBJECT, workload_ref_required=True)


def with_defaults(spec: object) -> object:
    """The spec as the apiserver decodes it: a missing spec is the zero struct, and a missing
    ``disruptionMode`` is ``{"single": {}}`` (``+default``). The apiserver defaults the
    stored object too when it decodes it for an UPDATE (docs/decisions.md E3), so both sides go through
    here. The caller's mapping is copied, never changed."""
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping) or spec.get("disruptionMode") is not None:
        return spec
    return {**spec, "disruptionMode": {"single": {}}}


def _validate_spec(
    spec_value: object,
    old_spec: Old,
    ctx: Ctx,
    shape: GroupShape,
    *,
    workload_ref_required: bool,
) -> Errors:
    path = FieldPath.of("spec")
    spec_value = with_defaults(spec_value)
    old_spec = with_defaults(old_spec) if is_update(old_spec) else old_spec
    if unchanged(spec_value, old_spec):
        return []
    spec, errs = as_object(spec_value, path)
    if spec is None:
        return errs
    spec = drop_flat(spec, old_spec, path, shape.gated_pairs(), ctx)
    errs = _validate_parent_name(spec, old_spec, path, ctx, shape)
    errs += _validate_workload_ref_field(spec, old_spec, path, required_=workload_ref_required)
    return errs + validate_group_fields(spec, old_spec, path, shape, ctx)


def _validate_parent_name(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, ctx: Ctx, shape: GroupShape
) -> Errors:
    """``parentCompositePodGroupName``: an immutable ``*string`` DNS subdomain. Its "requires
    workloadRef" rule is alpha-only and not enforced (docs/decisions.md §13)."""
    key = "parentCompositePodGroupName"
    return frozen_field(spec, old_spec, key, path, ctx, _check_parent_name, shape.gate_of(key))


def _check_parent_name(new: object, _old: Old, path: FieldPath) -> Errors:
    return string_value(new, path, pointer=True, fmt=LONG_NAME)


def _validate_workload_ref_field(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, *, required_: bool
) -> Errors:
    p, new, old = path.child("workloadRef"), spec.get("workloadRef"), old_child(old_spec, "workloadRef")
    if unchanged(new, old):
        return []
    # Both markers short-circuit (docs/design.md §2.4): either failing skips the reference's rules.
    stops = immutable(p, new, old)
    if new is None and required_:
        stops.append(required(p, origin="required"))
    if stops or new is None:
        return stops
    return validate_workload_ref(new, old, p)


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
