"""A frozen copy of the hand-coded block validators of ``webhook.scheduling_objects`` as they were
before the declared rules replaced them (blocks.py and the spec fields of groups.py, commit
a478936), kept only as the oracle of the parity test (test_declared_parity.py). Do not edit:
the parity test is meaningful only while this is the old code.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from webhook.scheduling_objects.markers import (
    Ctx,
    Errors,
    Old,
    as_list,
    as_object,
    enum_value,
    forbidden_if_disabled,
    immutable,
    int32_value,
    is_update,
    max_items,
    no_set_no_unset,
    old_child,
    old_item,
    old_items_by_name,
    string_field,
    string_value,
    unchanged,
    union,
    unique_names,
)
from webhook.vocab.field import FieldPath, required
from webhook.vocab.formats import FORMAT_CHECKERS, label_key, path_segment_name

SHORT_NAME: t.Final = ("k8s-short-name", FORMAT_CHECKERS["k8s-short-name"])  # the content wording
LONG_NAME: t.Final = ("k8s-long-name", FORMAT_CHECKERS["k8s-long-name"])
LABEL_KEY: t.Final = ("k8s-label-key", label_key)
PATH_SEGMENT: t.Final = ("k8s-path-segment-name", path_segment_name)

HIGHEST_USER_DEFINABLE_PRIORITY: t.Final = 1_000_000_000
MAX_RESOURCE_CLAIMS: t.Final = 4
MAX_TOPOLOGY_CONSTRAINTS: t.Final = 1
PREEMPTION_POLICIES: t.Final = ("Never", "PreemptLowerPriority")

TOPOLOGY_GATE: t.Final = "TopologyAwareWorkloadScheduling"
CLAIMS_GATE: t.Final = "DRAWorkloadResourceClaims"
PREEMPTION_GATE: t.Final = "PodGroupPreemptionPolicy"
COMPOSITE_GATE: t.Final = "CompositePodGroup"


@dataclass(frozen=True)
class GateMarkers:
    """The markers a gated field carries besides its own rules (docs/design.md §5.1–§5.4, docs/decisions.md E4).

    ``forbidden_when_off`` is ``+k8s:ifDisabled(gate)=+k8s:forbidden``. ``frozen_when_off``
    False means the field's immutability marker is ``ifEnabled(gate)``, so with the gate off
    a change draws only the gate's own error.
    """

    gate: str
    forbidden_when_off: bool = True
    frozen_when_off: bool = True


@dataclass(frozen=True)
class GroupShape:
    """Which variant of the shared group fields a struct carries.

    ``count_key`` is the gang size field (``minCount`` for pod groups, ``minGroupCount``
    for composites). ``whole_policy_immutable`` freezes the entire policy (the
    CompositePodGroup runtime object) instead of only its basic/gang variant. ``gated``
    maps each gated field of the struct to its gate markers; it also tells the registry
    strategy emulation (``gating``) what to drop.
    """

    count_key: str
    has_claims: bool
    gated: tuple[tuple[str, GateMarkers], ...]
    whole_policy_immutable: bool = False

    def gate_of(self, key: str) -> GateMarkers | None:
        return next((markers for name, markers in self.gated if name == key), None)

    def gated_pairs(self) -> tuple[tuple[str, str], ...]:
        """(gate, field) per gated field, in declaration order."""
        return tuple((markers.gate, name) for name, markers in self.gated)


_PREEMPTION: t.Final = ("preemptionPolicy", GateMarkers(PREEMPTION_GATE))
# Templates: constraints are forbidden when off and always immutable; claims carry no
# ifDisabled marker at all, so with the gate off only their immutability applies.
LEAF_TEMPLATE: t.Final = GroupShape(
    "minCount",
    has_claims=True,
    gated=(
        ("schedulingConstraints", GateMarkers(TOPOLOGY_GATE)),
        ("resourceClaims", GateMarkers(CLAIMS_GATE, forbidden_when_off=False)),
        _PREEMPTION,
    ),
)
# The PodGroup runtime object: constraints are immutable only while their gate is on; claims have
# no ifDisabled marker, as in templates (generated ``PodGroupSpec.ResourceClaims``: immutable, maxItems).
POD_GROUP: t.Final = GroupShape(
    "minCount",
    has_claims=True,
    gated=(
        ("parentCompositePodGroupName", GateMarkers(COMPOSITE_GATE)),
        ("schedulingConstraints", GateMarkers(TOPOLOGY_GATE, frozen_when_off=False)),
        ("resourceClaims", GateMarkers(CLAIMS_GATE, forbidden_when_off=False)),
        _PREEMPTION,
    ),
)
# Composite constraints are not gated at any level (docs/design.md §3.1).
COMPOSITE_TEMPLATE: t.Final = GroupShape("minGroupCount", has_claims=False, gated=(_PREEMPTION,))
COMPOSITE_OBJECT: t.Final = GroupShape(
    "minGroupCount", has_claims=False, gated=(_PREEMPTION,), whole_policy_immutable=True
)


# --- references -------------------------------------------------------------------------------


def validate_workload_ref(value: object, old: Old, path: FieldPath) -> Errors:
    """``WorkloadReference``: workloadName (DNS subdomain) and templateName (DNS label)."""
    obj, errs = as_object(value, path)
    if obj is None:
        return errs
    return string_field(obj, old, "workloadName", path, required_=True, fmt=LONG_NAME) + string_field(
        obj, old, "templateName", path, required_=True, fmt=SHORT_NAME
    )


# --- scheduling policy ------------------------------------------------------------------------


def validate_scheduling_policy(
    parent: Mapping[str, t.Any], old_parent: Old, path: FieldPath, shape: GroupShape
) -> Errors:
    """``schedulingPolicy``: a basic|gang union and the update rules of ``shape``.

    The field is ``+required`` only as documentation (docs/decisions.md E1): an absent policy is the
    zero struct and fails the union, and on update the member rules still run after it. A
    whole-policy immutability marker short-circuits: a changed policy draws only that error.
    """
    p = path.child("schedulingPolicy")
    new, old = _zero_struct(parent.get("schedulingPolicy")), old_child(old_parent, "schedulingPolicy")
    old = _zero_struct(old) if is_update(old) else old
    if unchanged(new, old):
        return []
    if shape.whole_policy_immutable and (stops := immutable(p, new, old)):
        return stops
    obj, errs = as_object(new, p)
    if obj is None:
        return errs
    errs += union(p, obj, ("basic", "gang"), old)
    errs += _validate_basic(obj, old, p, frozen_variant=not shape.whole_policy_immutable)
    errs += _validate_gang(obj, old, p, shape, frozen_variant=not shape.whole_policy_immutable)
    return errs


def _zero_struct(value: object) -> object:
    # A non-pointer struct decodes from an absent member as its zero value, ``{}``.
    return {} if value is None else value


def _validate_basic(
    policy: Mapping[str, t.Any], old_policy: Old, path: FieldPath, *, frozen_variant: bool
) -> Errors:
    p, new = path.child("basic"), policy.get("basic")
    if frozen_variant and (stops := immutable(p, new, old_child(old_policy, "basic"))):
        return stops
    return as_object(new, p)[1]


def _validate_gang(
    policy: Mapping[str, t.Any], old_policy: Old, path: FieldPath, shape: GroupShape, *, frozen_variant: bool
) -> Errors:
    p, new, old = path.child("gang"), policy.get("gang"), old_child(old_policy, "gang")
    if frozen_variant and (stops := no_set_no_unset(p, new, old)):
        return stops  # a gang that appears or vanishes is not validated inside
    obj, errs = as_object(new, p)
    if obj is None:
        return errs
    key = shape.count_key
    if unchanged(obj.get(key), old_child(old, key)):
        return []
    # The gang size is a non-pointer int32: 0 is "absent" (Required), negatives fail the minimum.
    return int32_value(obj.get(key), p.child(key), required_nonzero=True, minimum=1)


# --- constraints, claims, disruption ----------------------------------------------------------


def validate_constraints(value: object, old: Old, path: FieldPath) -> Errors:
    """``schedulingConstraints``: an atomic ``topology`` list of at most one ``{key}``."""
    obj, errs = as_object(value, path)
    if obj is None:
        return errs
    p = path.child("topology")
    if unchanged(obj.get("topology"), old_child(old, "topology")):
        return []
    items, errs = as_list(obj.get("topology"), p)
    if errs or (errs := max_items(p, items, MAX_TOPOLOGY_CONSTRAINTS)):
        return errs
    for i, item in enumerate(items):
        entry, type_errs = as_object(item, p.index(i))
        errs += type_errs
        if entry is not None:
            errs += string_value(entry.get("key"), p.index(i).child("key"), required_=True, fmt=LABEL_KEY)
    return errs


def resource_claims_limit(value: object, path: FieldPath) -> Errors:
    """``resourceClaims`` maxItems=4: a marker of the field, run beside its immutability."""
    items, errs = as_list(value, path)
    return errs or max_items(path, items, MAX_RESOURCE_CLAIMS)


def validate_resource_claims(value: object, old: Old, path: FieldPath) -> Errors:
    """``resourceClaims`` within its limit: map keyed by name, each naming exactly one source."""
    items, _ = as_list(value, path)
    errs = unique_names(path, items)
    # Items are matched to their old version by name; a new item is validated as created.
    old_by_name = old_items_by_name(old) if is_update(old) else {}
    for i, item in enumerate(items):
        errs += _validate_claim(item, old_item(old_by_name, item), path.index(i))
    return errs


def _validate_claim(value: object, old: Old, path: FieldPath) -> Errors:
    if unchanged(value, old):
        return []
    obj, errs = as_object(value, path)
    if errs:
        return errs
    obj = obj or {}  # a null list item decodes to the zero struct: no name and no source
    # The source union, at the list item itself (docs/design.md §2.9), precedes the members.
    errs = union(path, obj, ("resourceClaimName", "resourceClaimTemplateName"), old)
    errs += string_field(obj, old, "name", path, required_=True, fmt=SHORT_NAME)
    for key in ("resourceClaimName", "resourceClaimTemplateName"):
        errs += string_field(obj, old, key, path, pointer=True, fmt=LONG_NAME)
    return errs


def validate_disruption_mode(value: object, old: Old, path: FieldPath) -> Errors:
    """``disruptionMode``: a single|all union of empty structs."""
    obj, errs = as_object(value, path)
    if obj is None:
        return errs
    errs = union(path, obj, ("single", "all"), old)
    for key in ("single", "all"):
        errs += as_object(obj.get(key), path.child(key))[1]
    return errs


# --- the shared group fields ------------------------------------------------------------------

_Check = t.Callable[[object, Old, FieldPath], Errors]
_Limit = t.Callable[[object, FieldPath], Errors]


def frozen_field(
    parent: Mapping[str, t.Any],
    old_parent: Old,
    key: str,
    path: FieldPath,
    ctx: Ctx,
    check: _Check,
    markers: GateMarkers | None,
    limit: _Limit | None = None,
) -> Errors:
    """An immutable optional field: its short-circuiting markers (the gate's Forbidden,
    immutability, then ``limit``) all run; if any fails, the field's own rules ``check`` do
    not (docs/design.md §2.4), as in the generated code's ``earlyReturn``."""
    p, new, old = path.child(key), parent.get(key), old_child(old_parent, key)
    if unchanged(new, old):
        return []
    stops: Errors = []
    frozen = True
    if markers is not None and markers.gate not in ctx.gates:
        if markers.forbidden_when_off:
            stops += forbidden_if_disabled(p, new, old, markers.gate, ctx)
        frozen = markers.frozen_when_off
    if frozen:
        stops += immutable(p, new, old)
    if limit is not None:
        stops += limit(new, p)
    if stops or new is None:
        return stops
    return check(new, old, p)


def validate_group_fields(
    obj: Mapping[str, t.Any], old: Old, path: FieldPath, shape: GroupShape, ctx: Ctx
) -> Errors:
    """The fields every template and group has, in declaration order (the name, refs and
    child lists are left to the caller)."""
    checks: list[tuple[str, _Check]] = [("schedulingConstraints", validate_constraints)]
    if shape.has_claims:
        checks.append(("resourceClaims", validate_resource_claims))
    checks += [
        ("disruptionMode", validate_disruption_mode),
        ("priorityClassName", _check_priority_class_name),
        ("priority", _check_priority),
        ("preemptionPolicy", _check_preemption_policy),
    ]
    errs = validate_scheduling_policy(obj, old, path, shape)
    for key, check in checks:
        limit = resource_claims_limit if key == "resourceClaims" else None
        errs += frozen_field(obj, old, key, path, ctx, check, shape.gate_of(key), limit)
    return errs


def _check_priority_class_name(new: object, _old: Old, path: FieldPath) -> Errors:
    return string_value(new, path, fmt=LONG_NAME)


def _check_priority(new: object, _old: Old, path: FieldPath) -> Errors:
    # Negative priorities are legal (down to the int32 minimum); only the maximum is enforced.
    return int32_value(new, path, maximum=HIGHEST_USER_DEFINABLE_PRIORITY)


def _check_preemption_policy(new: object, _old: Old, path: FieldPath) -> Errors:
    return enum_value(new, path, PREEMPTION_POLICIES)


# --- groups.py: the spec fields besides the shared ones ----------------------------------------


def _validate_parent_name(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, ctx: Ctx, shape: GroupShape
) -> Errors:
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
    stops = immutable(p, new, old)
    if new is None and required_:
        stops.append(required(p, origin="required"))
    if stops or new is None:
        return stops
    return validate_workload_ref(new, old, p)


# --- the struct dispatch the parity test compares with declared.validate_struct ----------------


def validate_struct(struct: str, obj: Mapping[str, t.Any], old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    """What the old code checked of ``struct`` once its caller had type-checked and ratcheted it."""
    if struct in ("PodGroupTemplate", "CompositePodGroupTemplate"):
        shape = LEAF_TEMPLATE if struct == "PodGroupTemplate" else COMPOSITE_TEMPLATE
        errs = string_field(obj, old, "name", path, required_=True, fmt=SHORT_NAME)
        return errs + validate_group_fields(obj, old, path, shape, ctx)
    shape = POD_GROUP if struct == "PodGroupSpec" else COMPOSITE_OBJECT
    errs = _validate_parent_name(obj, old, path, ctx, shape)
    errs += _validate_workload_ref_field(obj, old, path, required_=struct == "CompositePodGroupSpec")
    return errs + validate_group_fields(obj, old, path, shape, ctx)
