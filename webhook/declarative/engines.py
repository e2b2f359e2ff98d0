"""The two engines that run the building-block schema, with wasp's extensions.

* **jsonschema_rs** gives the verdict: compiled once per block with the ``k8s-*`` format checkers
  and the ``x-kubernetes-list-map-keys`` keyword, it answers a valid block in microseconds.
* **python-jsonschema** is the reference: it enumerates every violation, and runs only when
  the verdict is "invalid" or the input is one the fast engine would judge differently.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.protocols import Validator as _PyValidator
from jsonschema.validators import extend

from webhook.declarative.decode import duplicate_indices
from webhook.declarative.document import (
    DOCUMENT,
    LIST_MAP_KEYS,
    REF_PREFIX,
    BlockType,
    Shape,
    block_schema,
    shape_of,
)
from webhook.vocab.formats import FORMAT_CHECKERS

__all__ = ["COMPILED", "Compiled", "compiled_schema", "fast_validator", "reference_validator"]


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
    if not isinstance(instance, list):
        return
    for i in duplicate_indices(instance, keys):
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
class Compiled:
    schema: dict[str, Any]
    fast: jsonschema_rs.Validator
    reference: _PyValidator
    shape: Shape


def _compile(block: BlockType) -> Compiled:
    # The whole document with a root $ref keeps every definition reachable for both engines.
    schema = {**DOCUMENT, "$ref": REF_PREFIX + block.value}
    return Compiled(
        schema=schema,
        fast=fast_validator(schema),
        reference=reference_validator(schema),
        shape=shape_of(block_schema(block)),
    )


COMPILED: Final[dict[BlockType, Compiled]] = {block: _compile(block) for block in BlockType}


def compiled_schema(block: BlockType) -> dict[str, Any]:
    """The exact schema the engines run for ``block`` (a copy; for tests and benchmarks)."""
    return copy.deepcopy(COMPILED[block].schema)
