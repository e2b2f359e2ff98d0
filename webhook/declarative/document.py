"""The building-block JSON Schema document: loading, its checks, and the schemas derived from it.

The structural rules of the ``scheduling.k8s.io/v1alpha3`` building blocks live as data in
``building_blocks.schema.json`` (JSON Schema draft 2020-12; unions are ``oneOf`` over
single-member ``required`` lists, a form CRD structural schemas accept). This module loads the
document once, refuses at import a construct the translation could not render faithfully, and
derives the self-contained per-block schemas (for embedding in a CRD) and the
:class:`Shape` that ratcheting and error ordering walk.
"""

from __future__ import annotations

import copy
import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "K8S_MARKERS",
    "LIST_MAP_KEYS",
    "BlockType",
    "Shape",
    "block_schema",
    "declaration_only",
    "declared_struct",
    "levels",
    "schema_document",
    "shape_of",
    "union_members",
]

_SCHEMA_FILE = "building_blocks.schema.json"
LIST_MAP_KEYS: Final = "x-kubernetes-list-map-keys"


class BlockType(enum.Enum):
    """A validatable unit; the value is the ``$defs`` name in the schema document."""

    POLICY = "WorkloadPodGroupSchedulingPolicy"
    CONSTRAINTS = "WorkloadPodGroupSchedulingConstraints"
    DISRUPTION = "WorkloadPodGroupDisruptionMode"
    RESOURCE_CLAIM = "WorkloadPodGroupResourceClaim"
    RESOURCE_CLAIMS = "WorkloadPodGroupResourceClaims"
    COMPOSITE_POLICY = "WorkloadCompositePodGroupSchedulingPolicy"
    COMPOSITE_CONSTRAINTS = "WorkloadCompositePodGroupSchedulingConstraints"
    COMPOSITE_DISRUPTION = "WorkloadCompositePodGroupDisruptionMode"
    SCHEDULING = "SchedulingConfiguration"
    COMPOSITE_SCHEDULING = "CompositeSchedulingConfiguration"


def _load_document() -> dict[str, Any]:
    # Beside this module, as the built-in policies are found (webhook/policy/model.py): wasp is
    # installed unpacked (a wheel or a checkout). importlib.resources, which would also read a
    # zip, costs every process start ~4 ms of imports (tempfile, shutil) for that.
    text = (Path(__file__).parent / _SCHEMA_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{_SCHEMA_FILE}: top level must be an object")
    return doc


REF_PREFIX: Final = "#/$defs/"
# A definition marked ``x-wasp-internal`` is a declaration shared by other definitions (one
# place for a rule such as the topology limit, and the v1beta1 structs): the exported document
# inlines it where it is referenced and does not list it, so what wasp exports, the engines run
# and CRDs embed does not depend on how the declarations are factored.
INTERNAL: Final = "x-wasp-internal"
# The ``+k8s:`` markers JSON Schema has no word for (docs/design.md §2.2), read by the
# scheduling_objects interpreter only; the export drops them, the engines never see them.
# keyword -> the check of its value.
K8S_MARKERS: Final[Mapping[str, Callable[[object], bool]]] = {
    # A Go value, not a pointer: its zero value ("", 0, the zero struct) is the absent value.
    "x-k8s-value": lambda v: v is True,
    "x-k8s-immutable": lambda v: v is True,
    "x-k8s-no-set-no-unset": lambda v: v is True,
    # ``+k8s:ifDisabled(gate)``: forbidden (=+k8s:forbidden) unless false; frozen false means the
    # immutability marker is ``ifEnabled(gate)``. Also what the registry strategy drops.
    "x-k8s-if-disabled": lambda v: (
        isinstance(v, dict)
        and isinstance(v.get("gate"), str)
        and set(v) <= {"gate", "forbidden", "frozen"}
        and all(isinstance(v.get(k, True), bool) for k in ("forbidden", "frozen"))
    ),
    # ``+default``: the value the apiserver fills in for an absent member.
    "x-k8s-default": lambda v: v is not None,
}


def declaration_only(keyword: str) -> bool:
    """A keyword of the declarations that no exported schema carries."""
    return keyword == INTERNAL or keyword.startswith("x-k8s-")


def _def_name(ref: str) -> str:
    if not ref.startswith(REF_PREFIX):
        raise ValueError(f"only local $defs references are supported, got {ref!r}")
    return ref[len(REF_PREFIX) :]


def _export(source: dict[str, Any]) -> dict[str, Any]:
    """The document as exported: internal definitions inlined at their references, then
    dropped, and every declaration-only keyword removed."""
    defs = source["$defs"]
    internal = {name for name, definition in defs.items() if definition.get(INTERNAL) is True}

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node and _def_name(node["$ref"]) in internal:
            base = inline(defs[_def_name(node["$ref"])])
            return {
                **base,
                **{k: inline(v) for k, v in node.items() if k != "$ref" and not declaration_only(k)},
            }
        return {k: inline(v) for k, v in node.items() if not declaration_only(k)}

    exported = {name: inline(definition) for name, definition in defs.items() if name not in internal}
    return {**copy.deepcopy(source), "$defs": exported}


SOURCE: Final[dict[str, Any]] = _load_document()
DOCUMENT: Final[dict[str, Any]] = _export(SOURCE)
DEFS: Final[dict[str, Any]] = DOCUMENT["$defs"]


def schema_document() -> dict[str, Any]:
    """A deep copy of the building-block JSON Schema document."""
    return copy.deepcopy(DOCUMENT)


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """Copy ``node`` with every ``$ref`` replaced by the referenced definition in ``defs``.

    Keywords next to a ``$ref`` (e.g. a field-specific ``description``) win over the
    definition's own.
    """
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        base = _inline(defs[_def_name(node["$ref"])], defs)
        siblings = {k: _inline(v, defs) for k, v in node.items() if k != "$ref"}
        return {**base, **siblings}
    return {k: _inline(v, defs) for k, v in node.items()}


def declared_struct(name: str) -> dict[str, Any]:
    """One definition as declared, references inlined and markers (``x-k8s-*``) kept: what
    the scheduling_objects interpreter walks. A fresh copy."""
    result = _inline(SOURCE["$defs"][name], SOURCE["$defs"])
    assert isinstance(result, dict)
    return result


def block_schema(block: BlockType) -> dict[str, Any]:
    """A self-contained schema for one block: references inlined, no ``$defs`` or ``$schema``.

    Meant for embedding in a CRD's ``openAPIV3Schema``. The result is a fresh copy. Note that
    apiextensions rejects ``additionalProperties`` next to ``properties``; a CRD generator
    must drop ``additionalProperties: false`` (CRDs prune unknown fields instead).
    """
    result = _inline(DEFS[block.value], DEFS)
    assert isinstance(result, dict)
    return result


@dataclass(slots=True)
class Shape:
    """The parts of a block's schema that ratcheting and error ordering need."""

    props: dict[str, Shape] = field(default_factory=dict)
    prop_order: dict[str, int] = field(default_factory=dict)
    items: Shape | None = None
    map_keys: tuple[str, ...] | None = None
    max_items: int | None = None


NO_SHAPE: Final = Shape()  # below an unknown member: nothing correlates by key


def shape_of(schema: Mapping[str, Any]) -> Shape:
    shape = Shape()
    for i, (name, sub) in enumerate(schema.get("properties", {}).items()):
        shape.props[name] = shape_of(sub)
        shape.prop_order[name] = i
    for name in schema.get("required", ()):
        shape.prop_order.setdefault(name, len(shape.prop_order))
    if "items" in schema:
        shape.items = shape_of(schema["items"])
    if isinstance(schema.get("maxItems"), int):
        shape.max_items = schema["maxItems"]
    if schema.get("x-kubernetes-list-type") == "map":
        shape.map_keys = tuple(schema.get(LIST_MAP_KEYS, ()))
    return shape


def levels(schema: Mapping[str, Any]) -> int:
    """How many containers deep ``schema`` (references inlined) reads a value: 0 where it
    expects a scalar (an object or array there is a type error, whatever it holds), 1 for an
    object of scalars, and so on. The document has no recursive definition: finite and small."""
    if schema.get("type") not in ("object", "array"):
        return 0
    children = [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]
    return 1 + max(map(levels, children), default=0)


def union_members(one_of: object) -> tuple[str, ...] | None:
    """The members of a union written as ``oneOf: [{required: [a]}, {required: [b]}]``."""
    if not isinstance(one_of, list):
        return None
    members: list[str] = []
    for sub in one_of:
        if not (isinstance(sub, dict) and sub.keys() == {"required"} and isinstance(sub["required"], list)):
            return None
        if len(sub["required"]) != 1 or not isinstance(sub["required"][0], str):
            return None
        members.append(sub["required"][0])
    return tuple(members)


def _check_document(doc: Mapping[str, Any], *, exported: bool) -> None:
    """Fail at import if the document uses a construct this module cannot translate faithfully,
    or if the exported form still carries a declaration-only keyword."""
    problems: list[str] = []
    defs = doc["$defs"]

    def walk(node: object, where: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}/{i}")
            return
        if not isinstance(node, dict):
            return
        if "oneOf" in node and union_members(node["oneOf"]) is None:
            problems.append(f"{where}: oneOf must be a union of single-member required lists")
        if "items" in node:
            items = node["items"]
            target = defs[_def_name(items["$ref"])] if "$ref" in items else items
            if target.get("type") != "object":
                problems.append(f"{where}: list items must be objects (null items decode to {{}})")
        if LIST_MAP_KEYS in node and node.get("x-kubernetes-list-type") != "map":
            problems.append(f"{where}: {LIST_MAP_KEYS} needs x-kubernetes-list-type: map")
        for k in node:
            if exported and declaration_only(k):
                problems.append(f"{where}: declaration-only keyword {k} in the exported document")
            elif k.startswith("x-k8s-") and not ((check := K8S_MARKERS.get(k)) and check(node[k])):
                problems.append(f"{where}: unknown marker keyword or bad value: {k}")
        for k, v in node.items():
            walk(v, f"{where}/{k}")

    for name, definition in doc["$defs"].items():
        if not definition.get("description"):
            problems.append(f"$defs/{name}: missing description")
        walk(definition, f"$defs/{name}")
    for block in BlockType:
        if block.value not in doc["$defs"]:
            problems.append(f"$defs/{block.value}: missing")
    if problems:
        raise ValueError(f"{_SCHEMA_FILE}: " + "; ".join(problems))


_check_document(SOURCE, exported=False)
_check_document(DOCUMENT, exported=True)
