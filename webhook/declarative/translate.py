"""python-jsonschema errors → the :class:`~webhook.vocab.field.FieldError` values the apiserver reports.

On top of the raw errors this reproduces the apiserver's conventions: error types, details and
origins as ``pkg/api/validate`` words them, Go's zero-value-is-absent for required strings,
short-circuiting validators (type, required, ``maxItems``), and the order of errors (document
order of the value, then type, required, union and the rest at one location).
"""

from __future__ import annotations

import enum
import heapq
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from webhook.declarative.decode import ABSENT, Loc, Seg
from webhook.declarative.document import LIST_MAP_KEYS, NO_SHAPE, Shape, union_members
from webhook.declarative.engines import Compiled, Limits
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

if TYPE_CHECKING:
    from jsonschema import ValidationError

# Unknown members of one object named one by one; past it, one error says how many more.
MAX_UNKNOWN_FIELDS: Final = 100

__all__ = ["MAX_UNKNOWN_FIELDS", "Kind", "Raw", "enumerate_errors", "ordering", "over_limit", "short_circuit"]


class Kind(enum.Enum):
    """How an error ratchets and short-circuits."""

    TYPE = 0  # wrong JSON type: nothing else is reported at that location
    REQUIRED = 1  # value absent or zero: nothing else is reported at that location
    UNION = 2  # ratchets on the set of members that are set
    VALUE = 3  # ratchets on the value at its location
    TOO_MANY = 4  # maxItems: short-circuits the list's other checks and its items
    DUPLICATE = 5  # ratchets on the whole list, reported at the item


# Order of errors that share one location: type, required, union, then the rest.
_RANK: Final = {
    Kind.TYPE: 0,
    Kind.REQUIRED: 1,
    Kind.UNION: 2,
    Kind.VALUE: 3,
    Kind.TOO_MANY: 3,
    Kind.DUPLICATE: 3,
}


@dataclass(frozen=True, slots=True)
class Raw:
    loc: Loc
    kind: Kind
    error: FieldError  # rooted at the block value; re-rooted at the end
    members: tuple[str, ...] = ()

    @property
    def ratchet_loc(self) -> Loc:
        # Uniqueness is a property of the list, so only an unchanged list ratchets it.
        return self.loc[:-1] if self.kind is Kind.DUPLICATE else self.loc


def _number(limit: object) -> str:
    if isinstance(limit, float) and limit.is_integer():
        return str(int(limit))
    return str(limit)


def _segment(seg: object) -> Seg:
    return seg if isinstance(seg, str | int) else str(seg)


def _copy(value: object) -> object:
    """A copy of decoded JSON made with a stack, not recursion: a bad value nested a thousand
    levels deep (orjson decodes up to 1,024) is copied, not a ``RecursionError``."""
    root: list[object] = [None]
    todo: list[tuple[Any, Any, object]] = [(root, 0, value)]
    while todo:
        parent, key, source = todo.pop()
        if isinstance(source, dict):
            parent[key] = members = dict.fromkeys(source)  # the keys in the client's order
            todo.extend((members, k, v) for k, v in source.items())
        elif isinstance(source, list):
            parent[key] = items = [None] * len(source)
            todo.extend((items, i, v) for i, v in enumerate(source))
        else:
            parent[key] = source  # scalars are immutable
    return root[0]


def _translate(err: ValidationError) -> Iterator[Raw]:
    """Turn one python-jsonschema error into the apiserver's error(s)."""
    loc = tuple(_segment(s) for s in err.absolute_path)
    at = FieldPath(loc)
    keyword = err.validator
    inst: Any = err.instance
    value: Any = err.validator_value
    if keyword in ("type", LIST_MAP_KEYS) and isinstance(inst, dict | list):
        # Normalisation is copy-on-write, so the instance may be the caller's own object: copy
        # it before it becomes a bad value that outlives this call (only these keywords show it).
        inst = _copy(inst)
    if keyword == "type":
        expected = value if isinstance(value, str) else " or ".join(value)
        yield Raw(loc, Kind.TYPE, type_invalid(at, inst, f"must be of type {expected}"))
    elif keyword == "required":
        # One jsonschema error per missing property, each carrying the full list; emit every
        # missing property from the first and let the caller drop the repeats.
        for name in value:
            if isinstance(inst, dict) and name not in inst:
                child = (*loc, name)
                yield Raw(child, Kind.REQUIRED, required(FieldPath(child), origin="required"))
    elif keyword == "minLength":
        if inst == "":
            # Go cannot tell "" from an absent non-pointer string: the required rule fires.
            yield Raw(loc, Kind.REQUIRED, required(at, origin="required"))
        else:
            detail = f"must be at least {value} characters"
            yield Raw(loc, Kind.VALUE, invalid(at, inst, detail, origin="minLength"))
    elif keyword == "oneOf":
        members = union_members(value) or ()
        listed = ", ".join(f"`{m}`" for m in members)
        present = [m for m in members if isinstance(inst, dict) and m in inst]
        if present:
            error = invalid(
                at, "{" + ", ".join(present) + "}", f"must specify exactly one of: {listed}", origin="union"
            )
        else:
            error = invalid(at, "", f"must specify one of: {listed}", origin="union")
        yield Raw(loc, Kind.UNION, error, members)
    elif keyword == "minimum":
        detail = f"must be greater than or equal to {_number(value)}"
        yield Raw(loc, Kind.VALUE, invalid(at, inst, detail, origin="minimum"))
    elif keyword == "maximum":
        detail = f"must be less than or equal to {_number(value)}"
        yield Raw(loc, Kind.VALUE, invalid(at, inst, detail, origin="maximum"))
    elif keyword == "format":
        messages = FORMAT_CHECKERS[value](inst)
        yield Raw(loc, Kind.VALUE, invalid(at, inst, "; ".join(messages), origin=f"format={value}"))
    elif keyword == "additionalProperties":
        known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        unknown = [name for name in inst if name not in known]
        if len(unknown) > MAX_UNKNOWN_FIELDS:
            # Work bounded by the input: the first names in the order errors are reported in
            # (by name), and one error for the rest, not one per key of a hostile body.
            rest = len(unknown) - MAX_UNKNOWN_FIELDS
            unknown = heapq.nsmallest(MAX_UNKNOWN_FIELDS, unknown, key=str)
            detail = f"{rest} more unknown fields not shown"
            yield Raw(loc, Kind.VALUE, forbidden(at, detail, origin="additionalProperties"))
        for name in unknown:
            child = (*loc, _segment(name))
            detail = f"unknown field {json.dumps(str(name))}"
            yield Raw(child, Kind.VALUE, forbidden(FieldPath(child), detail, origin="additionalProperties"))
    elif keyword == LIST_MAP_KEYS:
        # Bad value: the whole duplicate item, as apimachinery's validate.Unique reports it.
        yield Raw(loc, Kind.DUPLICATE, duplicate(at, inst, origin="listType=map"))
    else:
        detail = f"unexpected schema keyword {keyword!r}: {err.message}"
        yield Raw(loc, Kind.VALUE, internal_error(at, detail))


def over_limit(value: object, limits: Limits | None) -> tuple[object, list[Raw]]:
    """``maxItems``, which validation-gen marks ShortCircuit: a list over its limit reports only
    ``TooMany`` (neither its uniqueness nor its items are validated). Checked first, on the
    value as sent (before decoding: a ``null`` item still counts, as it does in Go), so a long
    list costs one error and no per-item work anywhere after: the value comes back with every
    such list emptied (copy-on-write), beside the ``TooMany`` errors."""
    raws: list[Raw] = []
    if limits is None:
        return value, raws
    return _cut(value, limits, (), raws), raws


def _cut(value: object, limits: Limits, loc: Loc, raws: list[Raw]) -> object:
    # Only the members on the way to a limited list are looked at (valid input: a few dict
    # lookups, nothing allocated).
    if isinstance(value, list):
        if limits.max_items is not None and len(value) > limits.max_items:
            raws.append(Raw(loc, Kind.TOO_MANY, too_many(FieldPath(loc), len(value), limits.max_items)))
            return []
        if limits.items is None:
            return value
        items: list[object] | None = None
        for i, item in enumerate(value):
            new = _cut(item, limits.items, (*loc, i), raws)
            if items is None and new is not item:
                items = list(value[:i])
            if items is not None:
                items.append(new)
        return value if items is None else items
    if isinstance(value, dict):
        out: dict[object, object] | None = None
        for name, sub in limits.props.items():
            member = value.get(name)
            if member is None:
                continue
            new = _cut(member, sub, (*loc, name), raws)
            if new is not member:
                out = dict(value) if out is None else out
                out[name] = new
        return value if out is None else out
    return value


def short_circuit(raws: list[Raw]) -> list[Raw]:
    """Drop what the apiserver never evaluates once a short-circuiting validator failed.

    * a type error: Go's decoder rejects the value, nothing else is checked at that location;
    * required (absent or zero): the field's other validators (e.g. format) do not run.

    (``maxItems`` short-circuits too, before the engine runs: :func:`over_limit`.)
    """
    exact = {raw.loc for raw in raws if raw.kind in (Kind.TYPE, Kind.REQUIRED)}
    if not exact:
        return raws
    return [raw for raw in raws if raw.kind in _BLOCKERS or raw.loc not in exact]


_BLOCKERS: Final = frozenset({Kind.TYPE, Kind.REQUIRED})


def ordering(new: object, shape: Shape) -> Callable[[Raw], tuple[tuple[tuple[int, str], ...], int]]:
    """The sort key of errors in ``new``: pre-order over the value, members in declaration order
    (unknown ones after them, by name; absent required ones last), then the per-location rank.
    A step is ``(position, name)``: an unknown member sorts by its name in place, so ordering N
    of them costs N log N whatever the object's size (ranking them by a sort per error was
    quadratic: a body of a few thousand unknown keys held a worker for seconds)."""

    def key_of(raw: Raw) -> tuple[tuple[tuple[int, str], ...], int]:
        key: list[tuple[int, str]] = []
        node, sh = new, shape
        for seg in raw.loc:
            if isinstance(seg, int):
                key.append((seg, ""))
                node = node[seg] if isinstance(node, list) and 0 <= seg < len(node) else ABSENT
                sh = sh.items or NO_SHAPE
                continue
            declared = len(sh.prop_order)
            if isinstance(node, dict) and seg in node:
                # Present members in declaration order, then unknown ones by name: the order
                # never depends on how the client happened to order its keys.
                known = sh.prop_order.get(seg) if isinstance(seg, str) else None
                key.append((known, "") if known is not None else (declared, str(seg)))
                node = node[seg]
            else:
                # Absent members (Required) come after the present ones, in declaration order.
                key.append((declared + 1 + sh.prop_order.get(seg, declared), ""))
                node = ABSENT
            sh = sh.props.get(seg, NO_SHAPE)
        return tuple(key), _RANK[raw.kind]

    return key_of


# --------------------------------------------------------------------------- entry point


def enumerate_errors(compiled: Compiled, value: object) -> list[Raw]:
    raws: list[Raw] = []
    seen: set[tuple[Loc, Kind, str]] = set()
    instance: Any = value
    for err in compiled.reference.iter_errors(instance):
        for raw in _translate(err):
            ident = (raw.loc, raw.kind, raw.error.origin)
            if ident in seen:
                continue
            seen.add(ident)
            raws.append(raw)
    return raws
