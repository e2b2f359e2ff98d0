"""Validation of hand-written ``Workload``, ``PodGroup`` and ``CompositePodGroup`` manifests.

This reproduces what the Kubernetes 1.37 apiserver checks when such an object is created
or updated, so ``wasp validate`` can reject in CI what the cluster would reject on apply:

* metadata: the name (DNS subdomain, or ``generateName``) and the namespace (DNS label);
* the declarative markers of the types (docs/design.md §2.2, §5.1–§5.4): required fields, unions,
  formats, limits, enums, map-list keys, and on update immutability, NoSet/NoUnset and
  NoAddItem/NoRemoveItem, all ratcheted (an unchanged value is not validated again);
  ``+required`` without ``k8s:`` is documentation, so an empty ``schedulingPolicy`` or
  Workload ``spec`` fails its union instead (docs/decisions.md E1);
* the hand-written Workload tree rules (docs/design.md §5.2): names unique across the tree, depth at most
  4, one priority configuration, and at least one child per composite template, run in
  full on every update, never ratcheted (docs/decisions.md E2);
* server defaulting: a PodGroup or CompositePodGroup without ``disruptionMode`` is
  validated as ``single``, on both sides of an update (docs/decisions.md E3);
* feature gates: a gated field whose gate is off is dropped before validation, as the
  registry strategy does, and reported as a warning naming the gate (docs/decisions.md §14).

Not checked, on purpose: alpha-level rules the apiserver does not enforce (docs/decisions.md §13:
condition-type uniqueness, parentCompositePodGroupName-requires-workloadRef); ``status``,
which belongs to the separate ``/status`` subresource and is ignored on create and update;
unknown fields and other purely structural schema checks (kubernetes-validate covers
those); labels, annotations and ownerReferences in metadata.

The validators never raise on decoded JSON: wrong types, nulls and non-objects become
field errors, and a JSON ``null`` means the same as an absent field (as in Go decoding).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from webhook.scheduling_objects.blocks import COMPOSITE_GATE, validate_metadata
from webhook.scheduling_objects.gating import as_created
from webhook.scheduling_objects.groups import (
    priority_plugin_warning,
    validate_composite_pod_group_spec,
    validate_pod_group_spec,
)
from webhook.scheduling_objects.markers import CREATE, Ctx, Errors, Old, get
from webhook.scheduling_objects.workload import validate_workload_spec
from webhook.vocab.field import FieldError, FieldPath, internal_error, type_invalid
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

__all__ = [
    "Findings",
    "as_created",
    "SERVED_VERSIONS",
    "VALIDATORS",
    "validate_composite_pod_group",
    "validate_pod_group",
    "validate_workload",
]

GROUP: t.Final = "scheduling.k8s.io"


@dataclass(frozen=True)
class Findings:
    """The result of validating one object.

    ``errors`` are what the apiserver would reject the object with (empty = admitted);
    ``warnings`` are human-readable notes that do not fail validation, such as a field
    dropped because its feature gate is off.
    """

    errors: list[FieldError]
    warnings: list[str]

    @property
    def ok(self) -> bool:
        return not self.errors


_SpecValidator = t.Callable[[object, Old, Ctx], Errors]


def _validate(
    obj: object, old: Mapping[str, t.Any] | None, gates: FeatureGates, spec_validator: _SpecValidator
) -> tuple[Errors, Ctx]:
    ctx = Ctx(gates)
    if not isinstance(obj, Mapping):
        return [type_invalid(FieldPath(), obj, "must be of type object")], ctx
    old_meta = CREATE if old is None else get(old, "metadata")
    old_spec = CREATE if old is None else get(old, "spec")
    errs = validate_metadata(obj.get("metadata"), old_meta)
    try:
        errs += spec_validator(obj.get("spec"), old_spec, ctx)
    except RecursionError:  # pragma: no cover - only for documents nested thousands deep
        errs.append(internal_error(FieldPath.of("spec"), "object is nested too deeply to validate"))
    return errs, ctx


def validate_workload(
    obj: Mapping[str, t.Any], old: Mapping[str, t.Any] | None = None, *, gates: FeatureGates = DEFAULT_GATES
) -> Findings:
    """Validate a Workload. ``old`` None means a create; otherwise ``old`` is the stored
    object (its ``metadata`` and ``spec`` are read) and update rules and ratcheting apply."""
    errs, ctx = _validate(obj, old, gates, validate_workload_spec)
    return Findings(errs, _resource_warnings("Workload", "GenericWorkload", gates) + ctx.warnings)


def validate_pod_group(
    obj: Mapping[str, t.Any], old: Mapping[str, t.Any] | None = None, *, gates: FeatureGates = DEFAULT_GATES
) -> Findings:
    """Validate a PodGroup. ``old`` None means a create (then a user-set ``spec.priority``
    draws a warning about the Priority admission plugin, not an error: wasp cannot resolve
    the PriorityClass offline); otherwise update rules and ratcheting apply."""
    errs, ctx = _validate(obj, old, gates, validate_pod_group_spec)
    old_spec = CREATE if old is None else get(old, "spec")
    warnings = _resource_warnings("PodGroup", "GenericWorkload", gates) + ctx.warnings
    return Findings(errs, warnings + priority_plugin_warning(get(obj, "spec"), old_spec))


def validate_composite_pod_group(
    obj: Mapping[str, t.Any], old: Mapping[str, t.Any] | None = None, *, gates: FeatureGates = DEFAULT_GATES
) -> Findings:
    """Validate a CompositePodGroup (``scheduling.k8s.io/v1alpha3``). ``old`` None means a
    create; otherwise update rules apply (the whole ``spec.schedulingPolicy`` is frozen)."""
    errs, ctx = _validate(obj, old, gates, validate_composite_pod_group_spec)
    return Findings(errs, _resource_warnings("CompositePodGroup", COMPOSITE_GATE, gates) + ctx.warnings)


def _resource_warnings(kind: str, gate: str, gates: FeatureGates) -> list[str]:
    # The resource is not served at all with its gate off; the rules are still checked so
    # the manifest is ready for a cluster that enables the gate.
    if gate in gates:
        return []
    return [f"{kind}: the {kind} API is served only with feature gate {gate} enabled"]


VALIDATORS: Mapping[tuple[str, str], t.Callable[..., Findings]] = MappingProxyType(
    {
        (GROUP, "Workload"): validate_workload,
        (GROUP, "PodGroup"): validate_pod_group,
        (GROUP, "CompositePodGroup"): validate_composite_pod_group,
    }
)
"""(API group, kind) -> validator. ``v1beta1`` and ``v1alpha3`` share the rules, so the
version is not part of the key."""

SERVED_VERSIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "Workload": ("v1beta1", "v1alpha3"),
        "PodGroup": ("v1beta1", "v1alpha3"),
        # CompositePodGroup is served in v1alpha3 only (docs/design.md §3.3).
        "CompositePodGroup": ("v1alpha3",),
    }
)
"""Kind -> versions the 1.37 apiserver serves; other versions are not judged (skipped)."""
