"""Gated fields: what the registry strategy drops before validation (docs/design.md §3.2).

When a gate is off, ``PrepareForCreate``/``PrepareForUpdate`` clear the gated field unless
the old object already used it (anywhere in the object). The apiserver does this silently;
wasp drops the field too, so the rest is validated exactly as the apiserver would, and
returns a warning naming the gate and the field (docs/decisions.md §14).
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping

from webhook.scheduling_objects.blocks import COMPOSITE_GATE
from webhook.scheduling_objects.declared import gated_fields
from webhook.scheduling_objects.markers import CREATE, MAX_WALK_DEPTH, Ctx, Old, is_update
from webhook.vocab.equality import is_absent
from webhook.vocab.field import FieldPath
from webhook.vocab.gates import FeatureGates

# (gate, field) pairs per struct, read off the declarations (``x-k8s-if-disabled``), so that
# the fields dropped here are exactly the fields whose gate markers the validators apply.
LEAF_GATED: t.Final = gated_fields("PodGroupTemplate")
COMPOSITE_TEMPLATE_GATED: t.Final = gated_fields("CompositePodGroupTemplate")
POD_GROUP_GATED: t.Final = gated_fields("PodGroupSpec")
COMPOSITE_POD_GROUP_GATED: t.Final = gated_fields("CompositePodGroupSpec")
WORKLOAD_SPEC_GATED: t.Final = ((COMPOSITE_GATE, "compositePodGroupTemplates"),)
_TEMPLATE_GATED: t.Final = (("leaf", LEAF_GATED), ("composite", COMPOSITE_TEMPLATE_GATED))


def _warning(path: FieldPath, gate: str) -> str:
    return (
        f"{path}: feature gate {gate} is disabled, so the apiserver drops this field before "
        "validation; it was not validated"
    )


def _present(value: object) -> bool:
    return not is_absent(value)


def _drop(
    obj: Mapping[str, t.Any], path: FieldPath, pairs: t.Iterable[tuple[str, str]], dropped: set[str], ctx: Ctx
) -> dict[str, t.Any]:
    """A shallow copy of ``obj`` without the fields named in ``dropped``, warning per field."""
    out = dict(obj)
    for gate, key in pairs:
        if key in dropped and _present(out.get(key)):
            del out[key]
            ctx.warnings.append(_warning(path.child(key), gate))
    return out


def _dropped(pairs: t.Iterable[tuple[str, str]], in_use: t.Callable[[str], bool], ctx: Ctx) -> set[str]:
    return {key for gate, key in pairs if gate not in ctx.gates and not in_use(key)}


def drop_flat(
    spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, pairs: t.Sequence[tuple[str, str]], ctx: Ctx
) -> dict[str, t.Any]:
    """Drop gated fields from a PodGroup or CompositePodGroup spec."""

    def in_use(key: str) -> bool:
        return is_update(old_spec) and isinstance(old_spec, Mapping) and _present(old_spec.get(key))

    return _drop(spec, path, pairs, _dropped(pairs, in_use, ctx), ctx)


# --- Workload: the gated fields live on every template of the tree -----------------------------


def _templates(spec: object, depth: int = 0) -> t.Iterator[tuple[str, Mapping[str, t.Any]]]:
    """("leaf" | "composite", template) for every mapping template in a (possibly old) spec."""
    if not isinstance(spec, Mapping) or depth > MAX_WALK_DEPTH:
        return
    for key, kind in (("podGroupTemplates", "leaf"), ("compositePodGroupTemplates", "composite")):
        value = spec.get(key)
        for item in value if isinstance(value, list) else ():
            if isinstance(item, Mapping):
                yield kind, item
                if kind == "composite":
                    yield from _templates(item, depth + 1)


def drop_workload(spec: Mapping[str, t.Any], old_spec: Old, path: FieldPath, ctx: Ctx) -> dict[str, t.Any]:
    """Drop gated fields from a Workload spec and from every template in its tree."""
    old_templates = list(_templates(old_spec)) if is_update(old_spec) else []

    def in_use(key: str) -> bool:
        if key == "compositePodGroupTemplates":
            return is_update(old_spec) and isinstance(old_spec, Mapping) and _present(old_spec.get(key))
        # Only templates whose kind gates the field count: composite constraints are ungated.
        kinds = {kind for kind, pairs in _TEMPLATE_GATED if any(name == key for _, name in pairs)}
        return any(_present(tpl.get(key)) for kind, tpl in old_templates if kind in kinds)

    all_pairs = (*WORKLOAD_SPEC_GATED, *LEAF_GATED)
    dropped = _dropped(all_pairs, in_use, ctx)
    if not dropped:
        return dict(spec)
    return _drop_in_tree(_drop(spec, path, WORKLOAD_SPEC_GATED, dropped, ctx), path, dropped, ctx, 0)


def _drop_in_tree(
    node: dict[str, t.Any], path: FieldPath, dropped: set[str], ctx: Ctx, depth: int
) -> dict[str, t.Any]:
    if depth > MAX_WALK_DEPTH:
        return node
    for key, pairs in (
        ("podGroupTemplates", LEAF_GATED),
        ("compositePodGroupTemplates", COMPOSITE_TEMPLATE_GATED),
    ):
        items = node.get(key)
        if not isinstance(items, list):
            continue
        rebuilt: list[t.Any] = []
        for i, item in enumerate(items):
            if isinstance(item, Mapping):
                item = _drop(item, path.child(key).index(i), pairs, dropped, ctx)
                if key == "compositePodGroupTemplates":
                    item = _drop_in_tree(item, path.child(key).index(i), dropped, ctx, depth + 1)
            rebuilt.append(item)
        node[key] = rebuilt
    return node


def as_created(obj: Mapping[str, t.Any], gates: FeatureGates) -> dict[str, t.Any]:
    """A Workload, PodGroup or CompositePodGroup as the apiserver stores it on create: the
    fields of a disabled gate dropped, as ``PrepareForCreate`` does (the same tables validation
    drops by). Other kinds come back as they are (a shallow copy)."""
    out = dict(obj)
    spec = out.get("spec")
    if not isinstance(spec, Mapping):
        return out
    ctx = Ctx(gates)
    path = FieldPath.of("spec")
    kind = out.get("kind")
    if kind == "Workload":
        out["spec"] = drop_workload(spec, CREATE, path, ctx)
    elif kind == "PodGroup":
        out["spec"] = drop_flat(spec, CREATE, path, POD_GROUP_GATED, ctx)
    elif kind == "CompositePodGroup":
        out["spec"] = drop_flat(spec, CREATE, path, COMPOSITE_POD_GROUP_GATED, ctx)
    return out
