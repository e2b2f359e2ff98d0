"""``Workload`` (docs/design.md §5.1, §5.2): declarative template rules plus the hand-written tree rules."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.scheduling_objects.blocks import COMPOSITE_GATE, validate_controller_ref
from webhook.scheduling_objects.declared import validate_struct
from webhook.scheduling_objects.gating import drop_workload
from webhook.scheduling_objects.markers import (
    MAX_WALK_DEPTH,
    Ctx,
    Errors,
    Old,
    as_list,
    as_object,
    dict_items,
    forbidden_if_disabled,
    immutable,
    is_update,
    max_items,
    no_add_no_remove,
    old_child,
    old_item,
    old_items_by_name,
    unchanged,
    union,
    unique_names,
)
from webhook.vocab.equality import semantic_equal
from webhook.vocab.field import FieldPath, duplicate, invalid

MAX_TEMPLATES: t.Final = 8  # WorkloadMaxPodGroupTemplates, per list
MAX_TEMPLATE_DEPTH: t.Final = 4  # WorkloadMaxTemplateDepth
_LISTS: t.Final = ("podGroupTemplates", "compositePodGroupTemplates")
# The gate each spec union member needs (None: ungated). Both lists always count towards
# the union, so an empty spec fails it whatever the gates (docs/decisions.md E1); the message names only
# the members whose gate is on (docs/decisions.md E5).
_UNION_MEMBERS: t.Final = (("podGroupTemplates", None), ("compositePodGroupTemplates", COMPOSITE_GATE))


def validate_workload_spec(spec_value: object, old_spec: Old, ctx: Ctx) -> Errors:
    """``spec`` of a Workload: hand-written rules first, then the declarative ones (the
    order in which the apiserver's strategy appends them).

    Only the declarative rules are ratcheted. The hand-written tree rules see the whole
    spec on every update, changed or not (docs/decisions.md E2), as ``ValidateWorkloadUpdate`` does.
    """
    path = FieldPath.of("spec")
    spec, errs = as_object(spec_value, path)
    if errs:
        return [] if unchanged(spec_value, old_spec) else errs
    # ``spec`` is ``+required`` only as documentation (docs/decisions.md E1): a missing spec decodes to
    # the zero struct, which the union rejects.
    old = {} if old_spec is None else old_spec
    spec = drop_workload(spec or {}, old, path, ctx)
    return _validate_tree_rules(spec, path) + _validate_spec_fields(spec, old, path, ctx)


# --- declarative rules ------------------------------------------------------------------------


def _validate_spec_fields(spec: Mapping[str, t.Any], old: Old, path: FieldPath, ctx: Ctx) -> Errors:
    named = [key for key, gate in _UNION_MEMBERS if gate is None or gate in ctx.gates]
    # The struct's own union comes before its members (generated ``Validate_WorkloadSpec``).
    errs = union(path, spec, [key for key, _ in _UNION_MEMBERS], old, named=named)
    errs += _validate_controller_ref_field(spec, old, path)
    errs += validate_template_list(spec, old, "podGroupTemplates", path, ctx, 0)
    errs += validate_template_list(spec, old, "compositePodGroupTemplates", path, ctx, 0)
    return errs


def _validate_controller_ref_field(spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath) -> Errors:
    p, new, old = path.child("controllerRef"), spec.get("controllerRef"), old_child(old_spec, "controllerRef")
    if unchanged(new, old):
        return []
    if (stops := immutable(p, new, old)) or new is None:
        return stops  # immutability short-circuits the reference's own rules
    return validate_controller_ref(new, old, p)


def validate_template_list(
    parent: Mapping[str, t.Any], old_parent: Old, key: str, path: FieldPath, ctx: Ctx, depth: int
) -> Errors:
    """A template list: its short-circuiting markers (the top-level composite list's gate,
    maxItems 8, NoAddItem + NoRemoveItem on update) all run, and if any fails nothing else in
    the list is checked; otherwise map keys by name, then each template against its old self."""
    p, new, old = path.child(key), parent.get(key), old_child(old_parent, key)
    if unchanged(new, old):
        return []
    items, errs = as_list(new, p)
    if errs:
        return errs
    if key == "compositePodGroupTemplates" and depth == 0:
        errs += forbidden_if_disabled(p, new, old, COMPOSITE_GATE, ctx)
    errs += max_items(p, items, MAX_TEMPLATES) + no_add_no_remove(p, items, old)
    if errs:
        return errs
    errs = unique_names(p, items)
    old_by_name = old_items_by_name(old) if is_update(old) else {}
    for i, item in enumerate(items):
        old = old_item(old_by_name, item)
        errs += _validate_template(item, old, p.index(i), key, ctx, depth)
    return errs


def _validate_template(
    value: object, old: Old, path: FieldPath, list_key: str, ctx: Ctx, depth: int
) -> Errors:
    if unchanged(value, old):
        return []
    obj, errs = as_object(value, path)
    if errs:
        return errs
    obj = obj or {}  # a null item decodes to the zero template
    if list_key == "podGroupTemplates":
        return validate_struct("PodGroupTemplate", obj, old, path, ctx)
    errs = validate_struct("CompositePodGroupTemplate", obj, old, path, ctx)
    if depth < MAX_WALK_DEPTH:
        for key in _LISTS:
            errs += validate_template_list(obj, old, key, path, ctx, depth + 1)
    return errs


# --- hand-written rules (pkg/apis/scheduling/validation, docs/design.md §5.2) --------------------------


def _validate_tree_rules(spec: Mapping[str, t.Any], path: FieldPath) -> Errors:
    composites = path.child("compositePodGroupTemplates")
    errs = validate_unique_names_across_tree(spec, path)
    errs += validate_template_depth(spec, composites)
    errs += validate_uniform_priority(spec, path)
    for i, cpgt in dict_items(spec.get("compositePodGroupTemplates")):
        errs += validate_has_child(cpgt, composites.index(i), 0)
    return errs


def _name(template: Mapping[str, t.Any]) -> str | None:
    """The template's name; ``""`` when absent; None when not a string (skipped: it already
    has a type error, and Go would never have decoded it)."""
    value = template.get("name")
    return "" if value is None else value if isinstance(value, str) else None


def validate_unique_names_across_tree(spec: Mapping[str, t.Any], path: FieldPath) -> Errors:
    """Names are unique across the whole tree. Duplicates within one list are left to the
    map-key check: each list's names join the seen set only after the whole list is checked."""
    seen = {n for _, tpl in dict_items(spec.get("podGroupTemplates")) if (n := _name(tpl)) is not None}
    return _unique_in_composite_list(spec.get("compositePodGroupTemplates"), path, seen, 0)


def _check_list_against(items: object, list_path: FieldPath, seen: set[str]) -> Errors:
    errs: Errors = []
    names: set[str] = set()
    for i, tpl in dict_items(items):
        name = _name(tpl)
        if name is None:
            continue
        if name in seen:
            errs.append(duplicate(list_path.index(i).child("name"), name))
        names.add(name)
    seen |= names
    return errs


def _unique_in_composite_list(items: object, path: FieldPath, seen: set[str], depth: int) -> Errors:
    list_path = path.child("compositePodGroupTemplates")
    errs = _check_list_against(items, list_path, seen)
    if depth >= MAX_WALK_DEPTH:
        return errs
    for i, cpgt in dict_items(items):
        errs += _check_list_against(
            cpgt.get("podGroupTemplates"), list_path.index(i).child("podGroupTemplates"), seen
        )
        errs += _unique_in_composite_list(
            cpgt.get("compositePodGroupTemplates"), list_path.index(i), seen, depth + 1
        )
    return errs


def validate_template_depth(spec: Mapping[str, t.Any], composites: FieldPath) -> Errors:
    """A composite at depth 4 (top level = 1) fails; reported at the top-level template."""

    def within_limit(cpgt: Mapping[str, t.Any], depth: int) -> bool:
        if depth == MAX_TEMPLATE_DEPTH:
            return False
        return all(
            within_limit(child, depth + 1) for _, child in dict_items(cpgt.get("compositePodGroupTemplates"))
        )

    return [
        invalid(
            composites.index(i),
            cpgt.get("compositePodGroupTemplates"),
            f"maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}",
        )
        for i, cpgt in dict_items(spec.get("compositePodGroupTemplates"))
        if not within_limit(cpgt, 1)
    ]


def _priority_key(template: Mapping[str, t.Any]) -> tuple[object, object]:
    # priorityClassName is a plain string ("" == unset); priority is a pointer (unset != 0).
    name = template.get("priorityClassName")
    return ("" if name is None else name, template.get("priority"))


def _uniform(keys: list[tuple[object, object]]) -> bool:
    return all(semantic_equal(k[0], keys[0][0]) and semantic_equal(k[1], keys[0][1]) for k in keys)


def validate_uniform_priority(spec: Mapping[str, t.Any], path: FieldPath) -> Errors:
    """Every template in the tree has the same priorityClassName and priority (value nil).
    The message differs between a mismatch among top-level leaves and one in the tree."""
    keys = [_priority_key(tpl) for _, tpl in dict_items(spec.get("podGroupTemplates"))]
    if not _uniform(keys):
        return [invalid(path, None, "detected multiple priority configurations")]
    for _, cpgt in dict_items(spec.get("compositePodGroupTemplates")):
        _collect_priorities(cpgt, keys, 0)
    if not _uniform(keys):
        return [
            invalid(
                path,
                None,
                "all priority and priorityClassName values must be identical, detected multiple values",
            )
        ]
    return []


def _collect_priorities(cpgt: Mapping[str, t.Any], keys: list[tuple[object, object]], depth: int) -> None:
    keys.append(_priority_key(cpgt))
    if depth >= MAX_WALK_DEPTH:
        return
    for _, child in dict_items(cpgt.get("compositePodGroupTemplates")):
        _collect_priorities(child, keys, depth + 1)
    keys.extend(_priority_key(child) for _, child in dict_items(cpgt.get("podGroupTemplates")))


def validate_has_child(cpgt: Mapping[str, t.Any], path: FieldPath, depth: int) -> Errors:
    """Each composite template has at least one child template, checked recursively."""
    errs: Errors = []
    if not any(_has_items(cpgt.get(k)) for k in _LISTS):
        errs.append(
            invalid(
                path,
                cpgt.get("name"),
                "must have at least one child PodGroupTemplate or CompositePodGroupTemplate",
            )
        )
    if depth < MAX_WALK_DEPTH:
        for i, child in dict_items(cpgt.get("compositePodGroupTemplates")):
            errs += validate_has_child(child, path.child("compositePodGroupTemplates").index(i), depth + 1)
    return errs


def _has_items(value: object) -> bool:
    # A non-list value already has a type error; do not pile a second error on it.
    return value is not None and value != []
