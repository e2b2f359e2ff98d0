"""The two engines that run the building-block schema, with wasp's extensions.

* **jsonschema_rs** gives the verdict: compiled once per block with the ``k8s-*`` format checkers
  and the ``x-kubernetes-list-map-keys`` keyword, it answers a valid block in microseconds.
* **python-jsonschema** is the reference: it enumerates every violation, and runs only when
  the verdict is "invalid" or the input is one the fast engine would judge differently. It is
  imported and compiled on first use (:func:`preload` does it up front, for a server that
  forks): a CLI run over valid manifests never pays for it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import jsonschema_rs

from webhook.declarative.decode import duplicate_indices
from webhook.declarative.document import (
    DOCUMENT,
    LIST_MAP_KEYS,
    REF_PREFIX,
    BlockType,
    Shape,
    block_schema,
    levels,
    shape_of,
)
from webhook.vocab.formats import FORMAT_CHECKERS

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator as _PyValidator

__all__ = [
    "COMPILED", "Compiled", "Limits", "compiled_schema", "fast_validator", "limits_of", "preload", "reference_validator",
]  # fmt: skip


class _ListMapKeysKeyword:
    """``x-kubernetes-list-map-keys`` for jsonschema_rs: a verdict only, no enumeration."""

    def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: list[str | int]) -> None:
        self._keys = tuple(value)

    def validate(self, instance: Any) -> None:
        if isinstance(instance, list) and duplicate_indices(instance, self._keys):
            raise ValueError("duplicate list-map key")


def _list_map_keys_keyword(
    validator: _PyValidator, keys: Sequence[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-kubernetes-list-map-keys`` for python-jsonschema: one error per later duplicate."""
    from jsonschema import ValidationError

    if not isinstance(instance, list):
        return
    for i in duplicate_indices(instance, keys):
        yield ValidationError(f"duplicate entry for key {list(keys)}", path=(i,), instance=instance[i])


def _type_keyword(
    validator: _PyValidator, types: str | Sequence[str], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``type`` as python-jsonschema checks it, without ``repr(instance)`` in the message (never
    shown: the error is translated): the repr of a value nested ~1,000 levels deep, which
    orjson decodes, is a ``RecursionError``, and of a large one a string as large as it."""
    from jsonschema import ValidationError

    names = [types] if isinstance(types, str) else types
    if not any(validator.is_type(instance, name) for name in names):
        yield ValidationError(f"not of type {', '.join(names)}")


def _one_of_keyword(
    validator: _PyValidator, subschemas: Sequence[Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``oneOf`` (the document's unions), for the same reason as :func:`_type_keyword`: one
    error when not exactly one member schema holds, its message without the instance."""
    from jsonschema import ValidationError

    holding = sum(1 for sub in subschemas if validator.evolve(schema=sub).is_valid(instance))
    if holding != 1:
        yield ValidationError(f"{holding} of the {len(subschemas)} schemas hold, not exactly one")


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


_RS_FORMATS: Final = {name: _rs_format(check) for name, check in FORMAT_CHECKERS.items()}


@functools.cache
def _reference_class() -> tuple[type[_PyValidator], Any]:
    """python-jsonschema's 2020-12 validator with wasp's keyword, integer type and formats."""
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.validators import extend

    checker = FormatChecker(formats=())
    for name, check in FORMAT_CHECKERS.items():
        checker.checks(name)(_format_predicate(check))
    # ``extend`` is untyped in types-jsonschema; the result is a validator class like its base.
    cls: type[_PyValidator] = extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={LIST_MAP_KEYS: _list_map_keys_keyword, "type": _type_keyword, "oneOf": _one_of_keyword},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int32_candidate),
    )
    return cls, checker


def reference_validator(schema: Mapping[str, Any]) -> _PyValidator:
    """The reference (python-jsonschema) validator for ``schema``, with wasp's extensions."""
    cls, checker = _reference_class()
    return cls(schema, format_checker=checker)


def fast_validator(schema: Mapping[str, Any]) -> jsonschema_rs.Validator:
    """The fast (jsonschema_rs) validator for ``schema``, with wasp's extensions."""
    return jsonschema_rs.validator_for(
        dict(schema),
        formats=dict(_RS_FORMATS),
        validate_formats=True,
        keywords={LIST_MAP_KEYS: _ListMapKeysKeyword},
    )


@dataclass(frozen=True, slots=True)
class Limits:
    """The part of a block's shape that leads to lists with ``maxItems``: all that the limit
    check walks, so a value costs a few lookups there, whatever else it holds."""

    max_items: int | None = None
    props: Mapping[str, Limits] = field(default_factory=dict)
    items: Limits | None = None


def limits_of(shape: Shape) -> Limits | None:
    """``shape`` pruned to the paths that end at a list with ``maxItems`` (``None``: no such list)."""
    props = {name: sub for name, member in shape.props.items() if (sub := limits_of(member)) is not None}
    items = limits_of(shape.items) if shape.items is not None else None
    if shape.max_items is None and not props and items is None:
        return None
    return Limits(shape.max_items, props, items)


class Compiled:
    """One block's schema, its fast validator, its shape and list limits, and its reference
    validator (built on first use; two threads that race both build one, and either is the
    same validator)."""

    __slots__ = ("_reference", "fast", "levels", "limits", "schema", "shape")

    def __init__(self, block: BlockType) -> None:
        # The whole document with a root $ref keeps every definition reachable for both engines.
        self.schema: dict[str, Any] = {**DOCUMENT, "$ref": REF_PREFIX + block.value}
        self.fast: jsonschema_rs.Validator = fast_validator(self.schema)
        inlined = block_schema(block)
        self.shape: Shape = shape_of(inlined)
        self.limits: Limits | None = limits_of(self.shape)
        self.levels: int = levels(inlined)  # how deep normalisation walks a value
        self._reference: _PyValidator | None = None

    @property
    def reference(self) -> _PyValidator:
        if self._reference is None:
            self._reference = reference_validator(self.schema)
        return self._reference


def preload() -> None:
    """Build every reference validator now (a server does, before it forks its workers)."""
    for compiled in COMPILED.values():
        _ = compiled.reference


COMPILED: Final[dict[BlockType, Compiled]] = {block: Compiled(block) for block in BlockType}


def compiled_schema(block: BlockType) -> dict[str, Any]:
    """The exact schema the engines run for ``block`` (a copy; for tests and benchmarks)."""
    return copy.deepcopy(COMPILED[block].schema)
