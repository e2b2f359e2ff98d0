"""What templates, PodGroups and CompositePodGroups check by hand: metadata and references.

The block rules they share (policy, constraints, claims, disruption, priority, the template and
spec fields) are declared once in the building-block document and applied by ``declared``.
Each ``validate_*`` takes the new value (``None`` = absent), the old value (``CREATE`` on create,
``None`` when the old object lacked it) and the field's path; it returns the errors at user paths.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.scheduling_objects.markers import Errors, Old, as_object, get, is_update, string_field
from webhook.vocab.equality import semantic_equal
from webhook.vocab.field import FieldPath, invalid, required, type_invalid
from webhook.vocab.formats import FORMAT_CHECKERS, dns_label, dns_subdomain, path_segment_name

LONG_NAME: t.Final = ("k8s-long-name", FORMAT_CHECKERS["k8s-long-name"])
PATH_SEGMENT: t.Final = ("k8s-path-segment-name", path_segment_name)
COMPOSITE_GATE: t.Final = "CompositePodGroup"


# --- metadata ---------------------------------------------------------------------------------


def _mask_trailing_dash(prefix: str) -> str:
    # apimachinery validates generateName as a prefix: a trailing '-' is fine there.
    return prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix


def validate_metadata(meta: object, old_meta: Old) -> Errors:
    """``ValidateObjectMeta`` (create) / ``ValidateObjectMetaUpdate`` (update) for the name
    and namespace. An absent namespace is accepted: kubectl fills it from the context."""
    path = FieldPath.of("metadata")
    obj, errs = as_object(meta, path)
    if errs:
        return errs
    obj = obj or {}
    if is_update(old_meta):
        # On update only immutability is checked; the name format was checked on create.
        # Hand-written ``ValidateImmutableField``: unlike the marker, it reports the new value
        # and no origin.
        return [
            invalid(path.child(key), obj.get(key), "field is immutable")
            for key in ("name", "namespace")
            if not semantic_equal(obj.get(key), get(old_meta, key))
        ]
    return _validate_generate_name(obj, path) + _validate_name(obj, path) + _validate_namespace(obj, path)


def _validate_generate_name(obj: Mapping[str, t.Any], path: FieldPath) -> Errors:
    value, p = obj.get("generateName"), path.child("generateName")
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        return [type_invalid(p, value, "must be of type string")]
    return [invalid(p, value, msg) for msg in dns_subdomain(_mask_trailing_dash(value))]


def _validate_name(obj: Mapping[str, t.Any], path: FieldPath) -> Errors:
    value, p = obj.get("name"), path.child("name")
    if value is None or value == "":
        if obj.get("generateName"):
            return []
        return [required(p, "name or generateName is required")]
    if not isinstance(value, str):
        return [type_invalid(p, value, "must be of type string")]
    return [invalid(p, value, msg) for msg in dns_subdomain(value)]


def _validate_namespace(obj: Mapping[str, t.Any], path: FieldPath) -> Errors:
    value, p = obj.get("namespace"), path.child("namespace")
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        return [type_invalid(p, value, "must be of type string")]
    return [invalid(p, value, msg) for msg in dns_label(value)]


# --- references -------------------------------------------------------------------------------


def validate_controller_ref(value: object, old: Old, path: FieldPath) -> Errors:
    """``TypedLocalObjectReference``: kind and name required path segments, apiGroup optional."""
    obj, errs = as_object(value, path)
    if obj is None:
        return errs
    return (
        string_field(obj, old, "apiGroup", path, fmt=LONG_NAME)
        + string_field(obj, old, "kind", path, required_=True, fmt=PATH_SEGMENT)
        + string_field(obj, old, "name", path, required_=True, fmt=PATH_SEGMENT)
    )
