"""``PodGroup`` (api.md §4.6) and ``CompositePodGroup`` (§4.7) specs.

Their hand-written validation checks metadata only (§5.2, §5.3); every spec rule here is a
declarative marker.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.scheduling_objects.blocks import (
    COMPOSITE_GATE,
    COMPOSITE_OBJECT,
    LEAF,
    LONG_NAME,
    GroupShape,
    validate_group_fields,
    validate_workload_ref,
)
from webhook.scheduling_objects.gating import COMPOSITE_POD_GROUP_GATED, POD_GROUP_GATED, drop_flat
from webhook.scheduling_objects.markers import (
    Ctx,
    Errors,
    Old,
    as_object,
    forbidden_if_disabled,
    immutable,
    is_update,
    old_child,
    string_value,
    unchanged,
)
from webhook.vocab.field import FieldPath, required


def validate_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a PodGroup. An absent ``disruptionMode`` is fine: the server defaults it
    to ``single`` before validation."""
    return _validate_spec(spec_value, old_spec, ctx, LEAF, POD_GROUP_GATED, workload_ref_required=False)


def validate_composite_pod_group_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a CompositePodGroup: workloadRef required, the whole policy immutable."""
    return _validate_spec(
        spec_value, old_spec, ctx, COMPOSITE_OBJECT, COMPOSITE_POD_GROUP_GATED, workload_ref_required=True
    )


def _validate_spec(
    spec_value: object,
    old_spec: Old,
    ctx: Ctx,
    shape: GroupShape,
    gated: t.Sequence[tuple[str, str]],
    *,
    workload_ref_required: bool,
) -> Errors:
    path = FieldPath.of("spec")
    if unchanged(spec_value, old_spec):
        return []
    spec, errs = as_object(spec_value, path)
    if errs:
        return errs
    # A missing spec decodes to the zero struct: its required fields report as missing.
    spec = drop_flat(spec or {}, old_spec, path, gated, ctx)
    errs = _validate_parent_name(spec, old_spec, path, ctx, gated=shape is LEAF)
    errs += _validate_workload_ref_field(spec, old_spec, path, required_=workload_ref_required)
    return errs + validate_group_fields(spec, old_spec, path, shape, ctx)


def _validate_parent_name(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, ctx: Ctx, *, gated: bool
) -> Errors:
    """``parentCompositePodGroupName``: an immutable ``*string`` DNS subdomain. Its "requires
    workloadRef" rule is alpha-only and not enforced (decision 13)."""
    key = "parentCompositePodGroupName"
    p, new, old = path.child(key), spec.get(key), old_child(old_spec, key)
    if unchanged(new, old):
        return []
    errs = forbidden_if_disabled(p, new, old, COMPOSITE_GATE, ctx) if gated else []
    errs += immutable(p, new, old)
    return errs + (string_value(new, p, pointer=True, fmt=LONG_NAME) if new is not None else [])


def _validate_workload_ref_field(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, *, required_: bool
) -> Errors:
    p, new, old = path.child("workloadRef"), spec.get("workloadRef"), old_child(old_spec, "workloadRef")
    if unchanged(new, old):
        return []
    errs = immutable(p, new, old)
    if new is None:
        return errs + ([required(p, origin="required")] if required_ else [])
    return errs + validate_workload_ref(new, old, p)


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
