"""Shared machinery: decoded-JSON access, ratcheting, and the declarative-marker rules.

Every rule here mirrors one apimachinery ``pkg/api/validate`` marker (docs/design.md §2.2) and
returns the errors it finds; nothing raises on malformed input. A wrong JSON type becomes
``FieldValueTypeInvalid`` (the CRD validator's wording), because the apiserver would refuse
to decode such a body at all and CI still needs a path to point at.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass, field

from webhook.vocab.equality import is_absent, json_key, semantic_equal
from webhook.vocab.field import (
    FieldError,
    FieldPath,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
    type_invalid,
)
from webhook.vocab.gates import FeatureGates
from webhook.vocab.sentinel import Sentinel

__all__ = ["CREATE", "Ctx", "Errors", "Old"]

Errors = list[FieldError]

INT32_MIN: t.Final = -(2**31)
INT32_MAX: t.Final = 2**31 - 1
# Recursion guard for template trees: far beyond the legal depth of 4, so only a
# pathological document (already rejected by the depth rule) is validated partially.
MAX_WALK_DEPTH: t.Final = 16


# "There is no old value": a create, or an item added on update.
CREATE: t.Final = Sentinel("CREATE", __name__)

# An old value: ``CREATE`` on create; otherwise the old object's value (``None`` = absent).
Old = t.Any


@dataclass
class Ctx:
    """Per-call state: the assumed gates and the warnings collected so far."""

    gates: FeatureGates
    warnings: list[str] = field(default_factory=list)


# --- value access -----------------------------------------------------------------------------


def get(obj: object, key: str) -> t.Any:
    """``obj[key]`` when obj is a mapping, else None (absent). Never raises."""
    return obj.get(key) if isinstance(obj, Mapping) else None


def old_child(old: Old, key: str) -> Old:
    """The old value of a child field; stays ``CREATE`` under a created parent."""
    return CREATE if old is CREATE else get(old, key)


def is_update(old: Old) -> bool:
    return old is not CREATE


def dict_items(value: object) -> t.Iterator[tuple[int, Mapping[str, t.Any]]]:
    """(index, item) for the mapping items of a list value; anything else yields nothing."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, Mapping):
                yield i, item


def unchanged(new: object, old: Old) -> bool:
    """Ratcheting (docs/design.md §2.3): on update a value that is semantically unchanged is not
    validated again (:func:`~webhook.vocab.equality.semantic_equal`)."""
    return old is not CREATE and semantic_equal(new, old)


# --- JSON type checks -------------------------------------------------------------------------


def as_object(value: object, path: FieldPath) -> tuple[Mapping[str, t.Any] | None, Errors]:
    """The value as a mapping; None when absent (null); a type error for anything else."""
    if value is None or isinstance(value, Mapping):
        return value, []
    return None, [type_invalid(path, value, "must be of type object")]


def as_list(value: object, path: FieldPath) -> tuple[list[t.Any], Errors]:
    """The value as a list; ``[]`` when absent (null); a type error for anything else."""
    if value is None:
        return [], []
    if isinstance(value, list):
        return value, []
    return [], [type_invalid(path, value, "must be of type array")]


def as_int32(value: object, path: FieldPath) -> tuple[int | None, Errors]:
    """The value as an int32; None when absent. A boolean or a float (``3.0`` included) is a
    type error, as it is for the building blocks: Go's decoder rejects both for an int32, and
    the one equality keeps them apart from integers, so create and update agree."""
    if value is None:
        return None, []
    if not isinstance(value, int) or isinstance(value, bool):
        return None, [type_invalid(path, value, "must be of type integer")]
    number = value
    if not INT32_MIN <= number <= INT32_MAX:
        return None, [type_invalid(path, value, "must be a 32-bit integer")]
    return number, []


# --- declarative markers (docs/design.md §2.2) --------------------------------------------------------


Format = tuple[str, t.Callable[[str], list[str]]]


def string_value(
    value: object,
    path: FieldPath,
    *,
    required_: bool = False,
    pointer: bool = False,
    fmt: Format | None = None,
) -> Errors:
    """A string with optional ``required`` and ``format`` markers (no ratcheting here).

    ``pointer`` marks a ``*string``: there only null/absent is missing and ``""`` is a value
    to check; for a plain string ``""`` is the zero value and counts as absent.
    """
    if value is None or (value == "" and not pointer):
        return [required(path, origin="required")] if required_ else []
    if not isinstance(value, str):
        return [type_invalid(path, value, "must be of type string")]
    if fmt is None:
        return []
    tag, checker = fmt
    return [invalid(path, value, msg, origin=f"format={tag}") for msg in checker(value)]


def string_field(
    parent: Mapping[str, t.Any],
    old_parent: Old,
    key: str,
    path: FieldPath,
    *,
    required_: bool = False,
    pointer: bool = False,
    fmt: Format | None = None,
) -> Errors:
    """:func:`string_value` for ``parent[key]``, ratcheted against ``old_parent``."""
    value = parent.get(key)
    if unchanged(value, old_child(old_parent, key)):
        return []
    return string_value(value, path.child(key), required_=required_, pointer=pointer, fmt=fmt)


def int32_value(
    value: object,
    path: FieldPath,
    *,
    required_nonzero: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
) -> Errors:
    """An int32. ``required_nonzero`` is ``+required`` on a non-pointer int: 0 is absent."""
    number, errs = as_int32(value, path)
    if errs:
        return errs
    if number is None or (number == 0 and required_nonzero):
        return [required(path, origin="required")] if required_nonzero else []
    if minimum is not None and number < minimum:
        return [invalid(path, number, f"must be greater than or equal to {minimum}", origin="minimum")]
    if maximum is not None and number > maximum:
        return [invalid(path, number, f"must be less than or equal to {maximum}", origin="maximum")]
    return []


def enum_value(value: object, path: FieldPath, allowed: t.Sequence[str]) -> Errors:
    """A ``*string`` enum: any present value outside ``allowed`` is NotSupported."""
    if value is None:
        return []
    if not isinstance(value, str):
        return [type_invalid(path, value, "must be of type string")]
    return [] if value in allowed else [not_supported(path, value, sorted(allowed))]


def union(
    path: FieldPath,
    obj: Mapping[str, t.Any],
    members: t.Sequence[str],
    old: Old,
    *,
    named: t.Sequence[str] | None = None,
) -> Errors:
    """Exactly one member set, reported at the struct that holds the union. A member is set
    unless it is absent by semantic equality (null, or an empty list: a list member, such as
    a Workload's template lists, is set only when it has items).

    On update the check is skipped when the set of members that are set did not change.
    ``named`` are the members the message lists (default: all of them).
    """
    chosen = [m for m in members if not is_absent(obj.get(m))]
    if (
        is_update(old)
        and isinstance(old, Mapping)
        and chosen == [m for m in members if not is_absent(old.get(m))]
    ):
        return []
    listed = ", ".join(f"`{m}`" for m in (members if named is None else named))
    if not chosen:
        return [invalid(path, "", f"must specify one of: {listed}", origin="union")]
    if len(chosen) > 1:
        return [
            invalid(
                path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {listed}", origin="union"
            )
        ]
    return []


def max_items(path: FieldPath, items: list[t.Any], limit: int) -> Errors:
    return [too_many(path, len(items), limit)] if len(items) > limit else []


def _map_key(item: object) -> t.Hashable:
    """The ``name`` key of a map-list item, compared by JSON type (absent is the zero ``""``)."""
    name = get(item, "name")
    try:
        return json_key("" if name is None else name)
    except RecursionError:
        return ("unhashable", id(item))  # nested too deep to compare: unique


def old_item(old_by_name: Mapping[object, t.Any], item: object) -> Old:
    """The old version of a map-list item, or ``CREATE`` when the item is new."""
    return old_by_name.get(_map_key(item), CREATE)


def unique_names(path: FieldPath, items: list[t.Any]) -> Errors:
    """``listType=map`` keyed by ``name``: Duplicate at ``list[i]`` for each later duplicate."""
    seen: set[object] = set()
    errs: Errors = []
    for i, item in dict_items(items):
        key = _map_key(item)
        if key in seen:
            errs.append(duplicate(path.index(i), item))
        seen.add(key)
    return errs


def old_items_by_name(old: Old) -> dict[object, t.Any]:
    """The old list's items keyed by name (first occurrence wins), for per-item ratcheting."""
    by_name: dict[object, t.Any] = {}
    for _, item in dict_items(old):
        by_name.setdefault(_map_key(item), item)
    return by_name


# The update markers below are short-circuiting (docs/design.md §2.4): the generated code emits
# them with ``MarkShortCircuit``, so once one fails the field's own content rules do not run.
# Their callers collect them with the field's other short-circuiting markers and stop there.


def no_add_no_remove(path: FieldPath, items: list[t.Any], old: Old) -> Errors:
    """``update=NoAddItem`` + ``update=NoRemoveItem``, items matched by name. Like
    apimachinery ``validate.ValSliceUpdate``: one Forbidden per added item at ``list[i]``,
    then one per removed old item at the list itself."""
    if not is_update(old):
        return []
    old_keys = set(old_items_by_name(old))
    new_keys = {_map_key(item) for _, item in dict_items(items)}
    errs = [
        forbidden(path.index(i), "item may not be added", origin="update")
        for i, item in dict_items(items)
        if _map_key(item) not in old_keys
    ]
    errs += [
        forbidden(path, "item may not be removed", origin="update")
        for _, item in dict_items(old)
        if _map_key(item) not in new_keys
    ]
    return errs


def immutable(path: FieldPath, new: object, old: Old) -> Errors:
    """``+k8s:immutable``: any change on update, including set<->unset. apimachinery
    ``validate.Immutable`` reports no bad value (``Invalid value: null``)."""
    if not is_update(old) or semantic_equal(new, old):
        return []
    return [invalid(path, None, "field is immutable", origin="immutable")]


def no_set_no_unset(path: FieldPath, new: object, old: Old) -> Errors:
    """``update=NoSet`` + ``update=NoUnset``: the field may change but not appear or vanish.
    As apimachinery ``validate.UpdatePointer``, without a bad value."""
    if not is_update(old):
        return []
    if old is None and new is not None:
        return [invalid(path, None, "field cannot be set once created", origin="update")]
    if old is not None and new is None:
        return [invalid(path, None, "field cannot be cleared once set", origin="update")]
    return []


def forbidden_if_disabled(path: FieldPath, new: object, old: Old, gate: str, ctx: Ctx) -> Errors:
    """``ifDisabled(gate)=forbidden``. Only reachable on update when the old object already
    used the field (otherwise the field was dropped before validation); ratcheted. An empty
    list is unset, as a nil Go slice is."""
    if gate in ctx.gates or is_absent(new) or unchanged(new, old):
        return []
    return [forbidden(path, "", origin=f"ifDisabled({gate})")]
