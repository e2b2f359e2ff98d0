"""Structural validation of the ``scheduling.k8s.io/v1alpha3`` building blocks.

The rules live as data in ``building_blocks.schema.json`` (JSON Schema draft 2020-12; unions
are written as ``oneOf`` over single-member ``required`` lists, a form CRD structural schemas
accept). This module turns that document into validators and translates violations into the
:class:`~webhook.vocab.field.FieldError` values that the apiserver's declarative validation reports
(api.md §2.2, §5.4(a)).

Two engines run over the same data:

* **jsonschema_rs** gives the verdict. It is compiled once per block with the ``k8s-*`` format
  checkers and the ``x-kubernetes-list-map-keys`` keyword, and answers a valid block in a few
  microseconds. Valid input, by far the common case, never touches Python-level validation.
* **python-jsonschema** is the reference. It runs only when the verdict is "invalid" (or when
  the input holds values the fast engine would judge differently, see :func:`_normalize`), and
  enumerates every violation for translation.

On top of the raw JSON Schema errors this module reproduces the apiserver's conventions:
Go-decoder null handling, zero-value-is-absent for required strings, short-circuiting
validators (type, required, ``maxItems``), and ratcheting on update.

Contract details a caller may rely on:

* Errors come in document order of the value (pre-order: a struct's own errors before its
  members'; absent required members after present ones); at one location: type, required,
  union, then the rest.
* ``maxItems`` short-circuits like validation-gen's ``ShortCircuit`` flag: a list over its
  limit reports only ``TooMany`` (no duplicates, no item errors).
* A duplicate list-map key is reported at each later item with the whole (null-stripped) item
  as the bad value, as apimachinery's ``validate.Unique`` does.
* ``shallow=True`` cuts every reference to an object-typed block down to ``{"type":
  "object"}``; array-typed definitions (the claims list) stay part of the container with
  their items cut the same way. The container still reports a nested block's (or claim's)
  JSON *type*, so callers should validate a nested block separately only when it is an
  object, or they see that type error twice.
* ``reference_validator``, ``fast_validator``, ``compiled_schema`` and ``verdicts`` expose the
  engines for tests and benchmarks.
"""

from __future__ import annotations

import copy
import enum
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.protocols import Validator as _PyValidator
from jsonschema.validators import extend

from webhook.vocab.field import (
    FieldError,
    FieldPath,
    duplicate,
    forbidden,
    internal_error,
    invalid,
    required,
    too_many,
    type_invalid,
)
from webhook.vocab.formats import FORMAT_CHECKERS
from webhook.vocab.sentinel import Sentinel

__all__ = ["NO_OLD", "BlockType", "block_schema", "is_valid", "schema_document", "validate_block"]

_SCHEMA_FILE = "building_blocks.schema.json"
LIST_MAP_KEYS: Final = "x-kubernetes-list-map-keys"

# jsonschema_rs converts Python ints through 64-bit integers; anything wider is routed to the
# reference engine rather than trusting a lossy conversion.
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


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


# A create: there is no old value to ratchet against.
NO_OLD: Final = Sentinel("NO_OLD", __name__)


# Locations inside a block value: object member names and list indices.
_Seg = str | int
_Loc = tuple[_Seg, ...]


class _Marker(enum.Enum):
    """Positions in a value that hold no usable JSON value."""

    ABSENT = "absent"  # the key is not there (or was null)
    UNCORRELATED = "uncorrelated"  # there is no old value this position can be compared with


_ABSENT: Final = _Marker.ABSENT
_UNCORRELATED: Final = _Marker.UNCORRELATED


# --------------------------------------------------------------------------- the document


def _load_document() -> dict[str, Any]:
    # Anchored on the regular package ``webhook`` so it works from a wheel, a zip or a checkout.
    text = resources.files("webhook").joinpath("declarative", _SCHEMA_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError(f"{_SCHEMA_FILE}: top level must be an object")
    return doc


_DOCUMENT: Final[dict[str, Any]] = _load_document()
_DEFS: Final[dict[str, Any]] = _DOCUMENT["$defs"]
_REF_PREFIX: Final = "#/$defs/"


def schema_document() -> dict[str, Any]:
    """A deep copy of the building-block JSON Schema document."""
    return copy.deepcopy(_DOCUMENT)


def _def_name(ref: str) -> str:
    if not ref.startswith(_REF_PREFIX):
        raise ValueError(f"only local $defs references are supported, got {ref!r}")
    return ref[len(_REF_PREFIX) :]


def _inline(node: Any, *, cut: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None = None) -> Any:
    """Copy ``node`` with every ``$ref`` replaced by the referenced definition.

    Keywords next to a ``$ref`` (e.g. a field-specific ``description``) win over the
    definition's own. ``cut(name, definition)`` may return a replacement for a reference
    instead of inlining it (used to derive the shallow schemas).
    """
    if isinstance(node, list):
        return [_inline(item, cut=cut) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = _def_name(node["$ref"])
        target = _DEFS[name]
        replacement = cut(name, target) if cut is not None else None
        base = replacement if replacement is not None else _inline(target, cut=cut)
        siblings = {k: _inline(v, cut=cut) for k, v in node.items() if k != "$ref"}
        return {**base, **siblings}
    return {k: _inline(v, cut=cut) for k, v in node.items()}


def block_schema(block: BlockType) -> dict[str, Any]:
    """A self-contained schema for one block: references inlined, no ``$defs`` or ``$schema``.

    Meant for embedding in a CRD's ``openAPIV3Schema``. The result is a fresh copy. Note that
    apiextensions rejects ``additionalProperties`` next to ``properties``; a CRD generator
    must drop ``additionalProperties: false`` (CRDs prune unknown fields instead).
    """
    result = _inline(_DEFS[block.value])
    assert isinstance(result, dict)
    return result


def _shallow_cut(name: str, target: dict[str, Any]) -> dict[str, Any] | None:
    """Where a shallow schema stops descending.

    A reference to an object-typed definition is a nested block, which the caller validates
    separately: keep only its JSON type. A reference to an array-typed definition (the claims
    list) is part of the container, so it is inlined; its own item references are cut in turn.
    """
    if target.get("type") == "array":
        return None
    return {"type": target["type"]}


def _shallow_schema(block: BlockType) -> dict[str, Any]:
    result = _inline(_DEFS[block.value], cut=_shallow_cut)
    assert isinstance(result, dict)
    return result


# --------------------------------------------------------------------------- value helpers


def _json_equal(a: object, b: object) -> bool:
    """Deep equality with JSON types kept apart (``True != 1``, ``1 != 1.0``), like Go's decoder."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _freeze(value: object) -> object:
    """A hashable form of a JSON value that keeps JSON types apart (for list-map keys)."""
    if isinstance(value, dict):
        return ("object", tuple(sorted((str(k), _freeze(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("array", tuple(_freeze(v) for v in value))
    return (type(value).__name__, value)


_MISSING_KEY_VALUE: Final = _freeze("")


def _map_key(item: Mapping[str, object], keys: Sequence[str]) -> tuple[object, ...]:
    # A missing key counts as the empty string: every list-map key in these blocks is a
    # non-pointer Go string, whose zero value is "" (two nameless claims are duplicates).
    return tuple(_freeze(item[k]) if k in item else _MISSING_KEY_VALUE for k in keys)


def _duplicate_indices(items: Sequence[object], keys: Sequence[str]) -> list[int]:
    """Indices of the items whose key repeats an earlier item's (apimachinery ``validate.Unique``).

    Items that are not objects take no part: they already fail their type check.
    """
    seen: set[tuple[object, ...]] = set()
    dups: list[int] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        key = _map_key(item, keys)
        if key in seen:
            dups.append(i)
        else:
            seen.add(key)
    return dups


@dataclass(slots=True)
class _Scan:
    """What :func:`_normalize` found that the fast engine would judge differently."""

    slow_only: bool = False


def _normalize(value: object, scan: _Scan) -> object:
    """Apply Go-decoder semantics to decoded JSON.

    * A ``null`` member of an object is the same as an absent one (nil pointer / zero value).
    * A ``null`` list item decodes to the zero value of the item type; every list in these
      blocks holds structs, so that is ``{}`` (checked by :func:`_check_document`).

    It also flags inputs that must go to the reference engine: floats (jsonschema_rs accepts
    ``5.0`` as an integer, Go's decoder rejects it for an int32), integers beyond int64, and
    anything that is not plain JSON.
    """
    # Copy-on-write: valid input (no nulls) comes back as the very same objects, so the common
    # case costs one walk and no allocation.
    kind = type(value)
    if kind is str or kind is bool:
        return value
    if kind is int and isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            scan.slow_only = True
        return value
    if isinstance(value, dict):
        out: dict[Any, object] | None = None
        for i, (k, v) in enumerate(value.items()):
            if type(k) is not str:
                scan.slow_only = True
            nv = _DROP if v is None else _normalize(v, scan)
            if out is None and nv is not v:
                out = dict(itertools.islice(value.items(), i))
            if out is not None and nv is not _DROP:
                out[k] = nv
        return value if out is None else out
    if isinstance(value, list):
        items: list[object] | None = None
        for i, v in enumerate(value):
            nv = {} if v is None else _normalize(v, scan)
            if items is None and nv is not v:
                items = list(value[:i])
            if items is not None:
                items.append(nv)
        return value if items is None else items
    scan.slow_only = True  # floats, subclasses of str/int, non-JSON objects
    return value


_DROP: Final = object()  # marks a null member that _normalize removes


# Deeper than any valid block: the schema closes every object, so a valid value is a few levels
# deep at most. A deeper value takes _normalize's path, whose RecursionError is_valid handles.
_PLAIN_DEPTH: Final = 32


def _is_plain(node: Any, depth: int = 0) -> bool:
    """True only when :func:`_normalize` would return ``node`` itself and flag nothing.

    That holds for exact ``dict`` (``str`` keys) and ``list`` containers whose leaves are exact
    ``str``, ``bool`` or int64-range ``int``: no null, no float, no subclass. Anything else,
    and nesting beyond ``_PLAIN_DEPTH``, answers ``False`` and is left to :func:`_normalize`.
    It keeps no copy-on-write state; on ``{"schedulingPolicy": {"gang": {"minCount": 4}}}`` it
    took 0.64 us against 1.06 us for :func:`_normalize` (medians of 7, one dev machine).
    """
    if depth > _PLAIN_DEPTH:
        return False
    members: Iterable[Any]
    if type(node) is dict:
        for key in node:
            if type(key) is not str:
                return False
        members = node.values()
    elif type(node) is list:
        members = node
    else:
        return False
    for v in members:
        kind = type(v)
        if kind is str or kind is bool:
            continue
        if kind is int:
            if _INT64_MIN <= v <= _INT64_MAX:
                continue
            return False
        if (kind is dict or kind is list) and _is_plain(v, depth + 1):
            continue
        return False
    return True


# --------------------------------------------------------------------------- shapes


@dataclass(slots=True)
class _Shape:
    """The parts of a block's schema that ratcheting and error ordering need."""

    props: dict[str, _Shape] = field(default_factory=dict)
    prop_order: dict[str, int] = field(default_factory=dict)
    items: _Shape | None = None
    map_keys: tuple[str, ...] | None = None


_NO_SHAPE: Final = _Shape()  # below an unknown member: nothing correlates by key


def _shape_of(schema: Mapping[str, Any]) -> _Shape:
    shape = _Shape()
    for i, (name, sub) in enumerate(schema.get("properties", {}).items()):
        shape.props[name] = _shape_of(sub)
        shape.prop_order[name] = i
    for name in schema.get("required", ()):
        shape.prop_order.setdefault(name, len(shape.prop_order))
    if "items" in schema:
        shape.items = _shape_of(schema["items"])
    if schema.get("x-kubernetes-list-type") == "map":
        shape.map_keys = tuple(schema.get(LIST_MAP_KEYS, ()))
    return shape


def _union_members(one_of: object) -> tuple[str, ...] | None:
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


def _check_document(doc: Mapping[str, Any]) -> None:
    """Fail at import if the document uses a construct this module cannot translate faithfully."""
    problems: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}/{i}")
            return
        if not isinstance(node, dict):
            return
        if "oneOf" in node and _union_members(node["oneOf"]) is None:
            problems.append(f"{where}: oneOf must be a union of single-member required lists")
        if "items" in node:
            items = node["items"]
            target = _DEFS[_def_name(items["$ref"])] if "$ref" in items else items
            if target.get("type") != "object":
                problems.append(f"{where}: list items must be objects (null items decode to {{}})")
        if LIST_MAP_KEYS in node and node.get("x-kubernetes-list-type") != "map":
            problems.append(f"{where}: {LIST_MAP_KEYS} needs x-kubernetes-list-type: map")
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


_check_document(_DOCUMENT)


# --------------------------------------------------------------------------- engines


class _ListMapKeysKeyword:
    """``x-kubernetes-list-map-keys`` for jsonschema_rs: a verdict only, no enumeration."""

    def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list[str | int]) -> None:
        self._keys = tuple(value)

    def validate(self, instance: Any) -> None:
        if isinstance(instance, list) and _duplicate_indices(instance, self._keys):
            raise ValueError("duplicate list-map key")


def _list_map_keys_keyword(
    validator: _PyValidator, keys: Sequence[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-kubernetes-list-map-keys`` for python-jsonschema: one error per later duplicate."""
    if not isinstance(instance, list):
        return
    for i in _duplicate_indices(instance, keys):
        yield ValidationError(f"duplicate entry for key {list(keys)}", path=(i,), instance=instance[i])


def _is_int32_candidate(_checker: object, instance: object) -> bool:
    # Go's decoder rejects 5.0 for an int32 and JSON Schema would accept it; booleans are never
    # integers in either.
    return isinstance(instance, int) and not isinstance(instance, bool)


def _format_predicate(check: Callable[[str], list[str]]) -> Callable[[object], bool]:
    def predicate(instance: object) -> bool:
        # python-jsonschema hands every instance type to a format checker; formats only
        # constrain strings.
        return not isinstance(instance, str) or not check(instance)

    return predicate


def _rs_format(check: Callable[[str], list[str]]) -> Callable[[str], bool]:
    def predicate(instance: str) -> bool:
        return not check(instance)

    return predicate


_FORMAT_CHECKER: Final = FormatChecker(formats=())
for _name, _check in FORMAT_CHECKERS.items():
    _FORMAT_CHECKER.checks(_name)(_format_predicate(_check))

_RS_FORMATS: Final = {name: _rs_format(check) for name, check in FORMAT_CHECKERS.items()}

# ``extend`` is untyped in types-jsonschema; the result is a validator class like its base.
_ReferenceValidator: Final[type[_PyValidator]] = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={LIST_MAP_KEYS: _list_map_keys_keyword},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int32_candidate),
)


def reference_validator(schema: Mapping[str, Any]) -> _PyValidator:
    """The reference (python-jsonschema) validator for ``schema``, with wasp's extensions."""
    return _ReferenceValidator(schema, format_checker=_FORMAT_CHECKER)


def fast_validator(schema: Mapping[str, Any]) -> jsonschema_rs.Validator:
    """The fast (jsonschema_rs) validator for ``schema``, with wasp's extensions."""
    return jsonschema_rs.validator_for(
        dict(schema),
        formats=dict(_RS_FORMATS),
        validate_formats=True,
        keywords={LIST_MAP_KEYS: _ListMapKeysKeyword},
    )


@dataclass(frozen=True, slots=True)
class _Compiled:
    schema: dict[str, Any]
    fast: jsonschema_rs.Validator
    reference: _PyValidator
    shape: _Shape


def _compile(block: BlockType, shallow: bool) -> _Compiled:
    if shallow:
        schema = {"$schema": _DOCUMENT["$schema"], **_shallow_schema(block)}
    else:
        # The whole document with a root $ref keeps every definition reachable for both engines.
        schema = {**_DOCUMENT, "$ref": _REF_PREFIX + block.value}
    return _Compiled(
        schema=schema,
        fast=fast_validator(schema),
        reference=reference_validator(schema),
        # Ratcheting correlates old and new items through the full shape even in shallow mode.
        shape=_shape_of(block_schema(block)),
    )


_COMPILED: Final[dict[tuple[BlockType, bool], _Compiled]] = {
    (block, shallow): _compile(block, shallow) for block in BlockType for shallow in (False, True)
}


# The deep-schema engines by block alone, for is_valid (one lookup per block per review).
_FAST: Final[dict[BlockType, _Compiled]] = {block: _COMPILED[(block, False)] for block in BlockType}


def compiled_schema(block: BlockType, *, shallow: bool = False) -> dict[str, Any]:
    """The exact schema the engines run for ``block`` (a copy; for tests and benchmarks)."""
    return copy.deepcopy(_COMPILED[(block, shallow)].schema)


# --------------------------------------------------------------------------- translation


class _Kind(enum.Enum):
    """How an error ratchets and short-circuits."""

    TYPE = 0  # wrong JSON type: nothing else is reported at that location
    REQUIRED = 1  # value absent or zero: nothing else is reported at that location
    UNION = 2  # ratchets on the set of members that are set
    VALUE = 3  # ratchets on the value at its location
    TOO_MANY = 4  # maxItems: short-circuits the list's other checks and its items
    DUPLICATE = 5  # ratchets on the whole list, reported at the item


# Order of errors that share one location: type, required, union, then the rest.
_RANK: Final = {
    _Kind.TYPE: 0,
    _Kind.REQUIRED: 1,
    _Kind.UNION: 2,
    _Kind.VALUE: 3,
    _Kind.TOO_MANY: 3,
    _Kind.DUPLICATE: 3,
}


@dataclass(frozen=True, slots=True)
class _Raw:
    loc: _Loc
    kind: _Kind
    error: FieldError  # rooted at the block value; re-rooted at the end
    members: tuple[str, ...] = ()

    @property
    def ratchet_loc(self) -> _Loc:
        # Uniqueness is a property of the list, so only an unchanged list ratchets it.
        return self.loc[:-1] if self.kind is _Kind.DUPLICATE else self.loc


def _number(limit: object) -> str:
    if isinstance(limit, float) and limit.is_integer():
        return str(int(limit))
    return str(limit)


def _segment(seg: object) -> _Seg:
    return seg if isinstance(seg, str | int) else str(seg)


def _translate(err: ValidationError) -> Iterator[_Raw]:
    """Turn one python-jsonschema error into the apiserver's error(s)."""
    loc = tuple(_segment(s) for s in err.absolute_path)
    at = FieldPath(loc)
    keyword = err.validator
    # Normalisation is copy-on-write, so the instance may be the caller's own object: copy it
    # before it becomes a bad value that outlives this call.
    inst: Any = copy.deepcopy(err.instance) if isinstance(err.instance, dict | list) else err.instance
    value: Any = err.validator_value
    if keyword == "type":
        expected = value if isinstance(value, str) else " or ".join(value)
        yield _Raw(loc, _Kind.TYPE, type_invalid(at, inst, f"must be of type {expected}"))
    elif keyword == "required":
        # One jsonschema error per missing property, each carrying the full list; emit every
        # missing property from the first and let the caller drop the repeats.
        for name in value:
            if isinstance(inst, dict) and name not in inst:
                child = (*loc, name)
                yield _Raw(child, _Kind.REQUIRED, required(FieldPath(child), origin="required"))
    elif keyword == "minLength":
        if inst == "":
            # Go cannot tell "" from an absent non-pointer string: the required rule fires.
            yield _Raw(loc, _Kind.REQUIRED, required(at, origin="required"))
        else:
            detail = f"must be at least {value} characters"
            yield _Raw(loc, _Kind.VALUE, invalid(at, inst, detail, origin="minLength"))
    elif keyword == "oneOf":
        members = _union_members(value) or ()
        listed = ", ".join(f"`{m}`" for m in members)
        present = [m for m in members if isinstance(inst, dict) and m in inst]
        if present:
            error = invalid(
                at, "{" + ", ".join(present) + "}", f"must specify exactly one of: {listed}", origin="union"
            )
        else:
            error = invalid(at, "", f"must specify one of: {listed}", origin="union")
        yield _Raw(loc, _Kind.UNION, error, members)
    elif keyword == "minimum":
        detail = f"must be greater than or equal to {_number(value)}"
        yield _Raw(loc, _Kind.VALUE, invalid(at, inst, detail, origin="minimum"))
    elif keyword == "maximum":
        detail = f"must be less than or equal to {_number(value)}"
        yield _Raw(loc, _Kind.VALUE, invalid(at, inst, detail, origin="maximum"))
    elif keyword == "maxItems":
        yield _Raw(loc, _Kind.TOO_MANY, too_many(at, len(inst), int(value)))
    elif keyword == "format":
        messages = FORMAT_CHECKERS[value](inst)
        yield _Raw(loc, _Kind.VALUE, invalid(at, inst, "; ".join(messages), origin=f"format={value}"))
    elif keyword == "additionalProperties":
        known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        for name in inst:
            if name not in known:
                child = (*loc, _segment(name))
                detail = f"unknown field {json.dumps(str(name))}"
                yield _Raw(
                    child, _Kind.VALUE, forbidden(FieldPath(child), detail, origin="additionalProperties")
                )
    elif keyword == LIST_MAP_KEYS:
        # Bad value: the whole duplicate item, as apimachinery's validate.Unique reports it.
        yield _Raw(loc, _Kind.DUPLICATE, duplicate(at, inst, origin="listType=map"))
    else:
        detail = f"unexpected schema keyword {keyword!r}: {err.message}"
        yield _Raw(loc, _Kind.VALUE, internal_error(at, detail))


def _short_circuit(raws: list[_Raw]) -> list[_Raw]:
    """Drop what the apiserver never evaluates once a short-circuiting validator failed.

    * a type error: Go's decoder rejects the value, nothing else is checked at that location;
    * required (absent or zero): the field's other validators (e.g. format) do not run;
    * maxItems: validation-gen marks it ShortCircuit, so neither the list's uniqueness nor its
      items are validated.
    """
    exact: set[_Loc] = set()
    subtree: set[_Loc] = set()
    for raw in raws:
        if raw.kind in (_Kind.TYPE, _Kind.REQUIRED):
            exact.add(raw.loc)
        elif raw.kind is _Kind.TOO_MANY:
            subtree.add(raw.loc)
    if not exact and not subtree:
        return raws
    kept: list[_Raw] = []
    for raw in raws:
        if raw.kind not in _BLOCKERS and raw.loc in exact:
            continue
        if raw.kind is not _Kind.TOO_MANY and any(raw.loc[: len(p)] == p for p in subtree):
            continue
        kept.append(raw)
    return kept


_BLOCKERS: Final = frozenset({_Kind.TYPE, _Kind.REQUIRED, _Kind.TOO_MANY})


# --------------------------------------------------------------------------- ratcheting


def _present(v: object) -> bool:
    return v is not _ABSENT and v is not _UNCORRELATED


def _step(new: object, old: object, shape: _Shape, seg: _Seg) -> tuple[object, object, _Shape]:
    """Move one segment down in the new value and in the *correlated* old value.

    Object members correlate by name. List-map items correlate by key (apimachinery's
    ``EachSliceVal`` with a match function); items of atomic lists do not correlate at all, so
    only an unchanged list as a whole ratchets them.
    """
    if isinstance(seg, str):
        n: object = new.get(seg, _ABSENT) if isinstance(new, dict) else _ABSENT
        o: object = old.get(seg, _ABSENT) if isinstance(old, dict) else _UNCORRELATED
        return n, o, shape.props.get(seg, _NO_SHAPE)
    n = new[seg] if isinstance(new, list) and 0 <= seg < len(new) else _ABSENT
    o = _UNCORRELATED
    if shape.map_keys and isinstance(old, list) and isinstance(n, dict):
        key = _map_key(n, shape.map_keys)
        for candidate in old:
            if isinstance(candidate, dict) and _map_key(candidate, shape.map_keys) == key:
                o = candidate
                break
    return n, o, shape.items or _NO_SHAPE


def _is_zero(v: object) -> bool:
    return v is _ABSENT or v == ""


def _ratcheted(raw: _Raw, new: object, old: object, shape: _Shape) -> bool:
    """True when the apiserver would skip this error on update (api.md §2.3)."""
    n, o, sh = new, old, shape
    parent_old: object = _UNCORRELATED
    for seg in raw.ratchet_loc:
        # Unchanged data is not validated again, whatever lies below it.
        if _present(o) and _present(n) and _json_equal(n, o):
            return True
        parent_old = o
        n, o, sh = _step(n, o, sh, seg)
    if raw.kind is _Kind.REQUIRED:
        # Both zero under a correlated old parent: Go compares the two zero values as equal.
        return isinstance(parent_old, dict) and _is_zero(n) and _is_zero(o)
    if raw.kind is _Kind.UNION:
        if isinstance(n, dict) and isinstance(o, dict):
            return all((m in n) == (m in o) for m in raw.members)
        return False
    return _present(o) and _present(n) and _json_equal(n, o)


# --------------------------------------------------------------------------- ordering


def _order_key(raw: _Raw, new: object, shape: _Shape) -> tuple[tuple[int, ...], int]:
    """Document order of the value (pre-order), then the per-location rank."""
    key: list[int] = []
    node, sh = new, shape
    for seg in raw.loc:
        if isinstance(seg, int):
            key.append(seg)
            node = node[seg] if isinstance(node, list) and 0 <= seg < len(node) else _ABSENT
            sh = sh.items or _NO_SHAPE
            continue
        if isinstance(node, dict) and seg in node:
            key.append(list(node).index(seg))
            node = node[seg]
        else:
            # Absent members (Required) come after the present ones, in declaration order.
            size = len(node) if isinstance(node, dict) else 0
            key.append(size + sh.prop_order.get(seg, len(sh.prop_order)))
            node = _ABSENT
        sh = sh.props.get(seg, _NO_SHAPE)
    return tuple(key), _RANK[raw.kind]


# --------------------------------------------------------------------------- entry point


def _enumerate(compiled: _Compiled, value: object) -> list[_Raw]:
    raws: list[_Raw] = []
    seen: set[tuple[_Loc, _Kind, str]] = set()
    instance: Any = value
    for err in compiled.reference.iter_errors(instance):
        for raw in _translate(err):
            ident = (raw.loc, raw.kind, raw.error.origin)
            if ident in seen:
                continue
            seen.add(ident)
            raws.append(raw)
    return raws


def _fast_verdict(compiled: _Compiled, value: object) -> bool | None:
    try:
        return bool(compiled.fast.is_valid(value))
    except Exception:  # noqa: BLE001 - any conversion problem just means "ask the reference engine"
        return None


def is_valid(block: BlockType, value: object) -> bool:
    """The fast engine's verdict alone: ``True`` only when ``value`` certainly has no
    structural error (then :func:`validate_block` would return ``[]`` on create and update
    alike, since ratcheting only removes errors). ``False`` means "ask validate_block"."""
    try:
        if _is_plain(value):
            # _normalize would hand back this very object unflagged: skip its copy-on-write walk.
            new, slow_only = value, False
        else:
            scan = _Scan()
            new = _normalize(value, scan)
            slow_only = scan.slow_only
    except RecursionError:
        return False  # validate_block reports it
    return not slow_only and _fast_verdict(_FAST[block], new) is True


def verdicts(block: BlockType, value: object, *, shallow: bool = False) -> tuple[bool | None, bool]:
    """``(fast, reference)`` verdicts on ``value`` after null stripping (for tests and benchmarks).

    ``fast`` is ``None`` when the input is routed straight to the reference engine (floats,
    integers beyond int64, non-JSON objects) or when jsonschema_rs cannot convert it.
    """
    compiled = _COMPILED[(block, shallow)]
    scan = _Scan()
    new = _normalize(value, scan)
    fast = None if scan.slow_only else _fast_verdict(compiled, new)
    instance: Any = new
    return fast, not any(True for _ in compiled.reference.iter_errors(instance))


def validate_block(
    block: BlockType,
    value: object,
    path: FieldPath,
    *,
    old: object = NO_OLD,
    shallow: bool = False,
) -> list[FieldError]:
    """Validate one building block (decoded JSON) and report every violation at ``path``.

    ``old`` is the previous value on update (``NO_OLD`` on create; ``None`` means the old
    object did not have the block). ``shallow`` checks only the container level of an
    embedding (see module docs). Never raises for any input: an internal failure is reported
    as an ``InternalError`` at ``path``.
    """
    if value is None:
        return []
    try:
        return _validate(block, value, path, old, shallow)
    except RecursionError:
        return [internal_error(path, "value is nested too deeply to validate")]
    except Exception as exc:  # noqa: BLE001 - admission must answer, not crash
        return [internal_error(path, f"validation failed: {type(exc).__name__}: {exc}")]


def _validate(
    block: BlockType, value: object, path: FieldPath, old: object, shallow: bool
) -> list[FieldError]:
    compiled = _COMPILED[(block, shallow)]
    scan = _Scan()
    new = _normalize(value, scan)
    # Valid input (the common case, create or update) ends here: ratcheting only removes errors.
    if not scan.slow_only and _fast_verdict(compiled, new) is True:
        return []
    ratchet = old is not NO_OLD
    old_value: object = _ABSENT  # old None: the old object did not have the block
    if ratchet and old is not None:
        old_value = _normalize(old, _Scan())
        if _json_equal(new, old_value):
            return []
    raws = _short_circuit(_enumerate(compiled, new))
    if ratchet:
        raws = [raw for raw in raws if not _ratcheted(raw, new, old_value, compiled.shape)]
    raws.sort(key=lambda raw: _order_key(raw, new, compiled.shape))
    return [raw.error.with_prefix(path) for raw in raws]
