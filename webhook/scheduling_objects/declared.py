"""The interpreter of the declared rules: one walk over a ``v1beta1`` struct of the document.

The building-block document (``webhook.declarative``) declares each rule once: JSON Schema
keywords for the value rules (``type``, ``format``, ``enum``, ``minimum``/``maximum``,
``maxItems``, ``required``, unions as ``oneOf``, list-map keys) and ``x-k8s-*`` keywords for the
markers JSON Schema has no word for (docs/design.md §2.2). The embedded ``v1alpha3`` blocks run
through the JSON Schema engines; the ``v1beta1`` structs of Workload, PodGroup and
CompositePodGroup manifests through :func:`validate_struct`, which applies per field, in
declaration order, what the generated ``Validate_<Type>`` functions apply:

* ratcheting: an unchanged field is not validated again (a union's struct members are
  validated whenever the union's struct changed);
* the short-circuiting markers (docs/design.md §2.4), all run: the gate's Forbidden
  (``x-k8s-if-disabled``), ``x-k8s-immutable`` (not with the gate off when ``frozen`` is
  false), ``x-k8s-no-set-no-unset``, and for a list its type and ``maxItems``; then Required
  for an absent required field; if any failed, the field's own rules do not run;
* the field's own rules: a struct's union before its members, a list-map's duplicate keys
  before its items (each matched to its old self by name), a scalar's type, enum, format and
  bounds.

``x-k8s-value`` marks a Go value rather than a pointer: ``""`` or ``0`` is absent, and an
absent struct is its zero value ``{}``.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.declarative import declared_struct
from webhook.declarative.document import union_members
from webhook.scheduling_objects.markers import (
    CREATE,
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
    string_value,
    unchanged,
    union,
    unique_names,
)
from webhook.vocab.field import FieldPath, required
from webhook.vocab.formats import FORMAT_CHECKERS

__all__ = ["STRUCTS", "gated_fields", "validate_struct"]

Decl = Mapping[str, t.Any]

STRUCTS: t.Final[Mapping[str, Decl]] = {
    name: declared_struct(name)
    for name in (
        "PodGroupTemplate",
        "CompositePodGroupTemplate",
        "PodGroupSpec",
        "CompositePodGroupSpec",
        "WorkloadReference",
    )
}


def _check_types(decl: Decl, where: str) -> None:
    # Fail at import on a declaration the interpreter has no rule for, not on the first manifest.
    if decl.get("type") not in ("object", "array", "string", "integer"):
        raise ValueError(f"{where}: the interpreter has no rule for type {decl.get('type')!r}")
    for key, sub in decl.get("properties", {}).items():
        _check_types(sub, f"{where}.{key}")
    if "items" in decl:
        _check_types(decl["items"], f"{where}[]")


for _name, _decl in STRUCTS.items():
    _check_types(_decl, _name)


def validate_struct(struct: str, obj: Mapping[str, t.Any], old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    """The declared rules of ``struct`` (a name in :data:`STRUCTS`) on ``obj``, a mapping the
    caller has type-checked and ratcheted as a whole; ``old`` is ``CREATE`` on create."""
    return _struct(STRUCTS[struct], obj, old, path, ctx)


def gated_fields(struct: str) -> tuple[tuple[str, str], ...]:
    """(gate, field) per gated field of ``struct``, in declaration order: what the registry
    strategy drops when the gate is off (``gating``)."""
    return tuple(
        (decl["x-k8s-if-disabled"]["gate"], key)
        for key, decl in STRUCTS[struct]["properties"].items()
        if "x-k8s-if-disabled" in decl
    )


def _struct(decl: Decl, obj: Mapping[str, t.Any], old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    members = union_members(decl.get("oneOf")) or ()
    errs = union(path, obj, members, old) if members else []
    required_ = decl.get("required", ())
    for key, sub in decl.get("properties", {}).items():
        ratchet = not (key in members and sub.get("type") == "object")
        errs += _field(
            sub, obj.get(key), old_child(old, key), path.child(key), ctx, key in required_, ratchet
        )
    return errs


def _field(
    decl: Decl, new: object, old: Old, path: FieldPath, ctx: Ctx, required_: bool, ratchet: bool
) -> Errors:
    if decl.get("type") == "object" and decl.get("x-k8s-value"):
        new = {} if new is None else new  # a non-pointer struct decodes from nothing as {}
        old = {} if old is None else old
    if ratchet and unchanged(new, old):
        return []
    stops = _short_circuits(decl, new, old, path, ctx)
    if new is None or (decl.get("x-k8s-value") and _is_zero(decl, new)):
        return stops + ([required(path, origin="required")] if required_ else [])
    return stops or _own_rules(decl, new, old, path, ctx)


def _is_zero(decl: Decl, value: object) -> bool:
    # The zero value of the declared type only: a 0 where a string is declared is a type error.
    zero = {"string": "", "integer": 0}.get(decl.get("type", ""), None)
    return zero is not None and type(value) is type(zero) and value == zero


def _short_circuits(decl: Decl, new: object, old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    errs: Errors = []
    frozen = bool(decl.get("x-k8s-immutable"))
    gate = decl.get("x-k8s-if-disabled")
    if gate is not None and gate["gate"] not in ctx.gates:
        if gate.get("forbidden", True):
            errs += forbidden_if_disabled(path, new, old, gate["gate"], ctx)
        frozen = frozen and gate.get("frozen", True)
    if frozen:
        errs += immutable(path, new, old)
    if decl.get("x-k8s-no-set-no-unset"):
        errs += no_set_no_unset(path, new, old)
    if decl.get("type") == "array":
        items, type_errs = as_list(new, path)
        errs += type_errs or (max_items(path, items, decl["maxItems"]) if "maxItems" in decl else [])
    return errs


def _own_rules(decl: Decl, new: object, old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    kind = decl.get("type")
    if kind == "object":
        obj, errs = as_object(new, path)
        return errs or _struct(decl, obj or {}, old, path, ctx)
    if kind == "array":
        return _items(decl, new if isinstance(new, list) else [], old, path, ctx)
    if kind == "string":
        if "enum" in decl:
            return enum_value(new, path, decl["enum"])
        fmt = decl.get("format")
        return string_value(new, path, pointer=True, fmt=None if fmt is None else (fmt, FORMAT_CHECKERS[fmt]))
    if kind == "integer":
        return int32_value(new, path, minimum=decl.get("minimum"), maximum=decl.get("maximum"))
    raise AssertionError(f"{path}: type {kind!r}")  # pragma: no cover - _check_types refuses it at import


def _items(decl: Decl, items: list[t.Any], old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    item_decl = decl["items"]
    if decl.get("x-kubernetes-list-type") == "map":
        # A list-map: duplicate keys first; each item is ratcheted against its old self by name.
        errs = unique_names(path, items)
        old_by_name = old_items_by_name(old) if is_update(old) else {}
        for i, item in enumerate(items):
            item_old = old_item(old_by_name, item)
            if not unchanged(item, item_old):
                errs += _item(item_decl, item, item_old, path.index(i), ctx)
        return errs
    # An atomic list is validated whole: its items have no old self. A null item there is skipped,
    # as the hand-written validators did (a null item of a list-map is its zero struct).
    errs = []
    for i, item in enumerate(items):
        if item is not None:
            errs += _item(item_decl, item, CREATE, path.index(i), ctx)
    return errs


def _item(decl: Decl, item: object, old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    obj, errs = as_object(item, path)
    return errs or _struct(decl, obj or {}, old, path, ctx)
