"""Go-decoder semantics on decoded JSON, and the value positions ratcheting and ordering walk.

The apiserver decodes a request into Go structs before it validates anything; this module
gives decoded JSON the same meaning (a ``null`` member is absent, a ``null`` list item is the
zero struct, list-map keys compare by JSON type), and flags the inputs that the fast engine would
judge differently from Go (floats, integers beyond int64, non-JSON objects).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from webhook.vocab.equality import json_key

__all__ = ["ABSENT", "UNCORRELATED", "Loc", "Scan", "Seg", "duplicate_indices", "map_key", "normalize"]

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


Seg = str | int
Loc = tuple[Seg, ...]


class Marker(enum.Enum):
    """Positions in a value that hold no usable JSON value."""

    ABSENT = "absent"  # the key is not there (or was null)
    UNCORRELATED = "uncorrelated"  # there is no old value this position can be compared with


ABSENT: Final = Marker.ABSENT
UNCORRELATED: Final = Marker.UNCORRELATED


def map_key(item: Mapping[str, object], keys: Sequence[str]) -> tuple[object, ...] | None:
    """The list-map key of ``item``: its ``keys`` members, compared by JSON type.

    ``None`` when a key member is an object or an array: every list-map key in these blocks
    is a Go string, so such an item fails its type check and neither repeats nor correlates
    with another (and a member nested a thousand levels deep is never walked).
    """
    # A missing key counts as the empty string: every list-map key in these blocks is a
    # non-pointer Go string, whose zero value is "" (two nameless claims are duplicates).
    values = [item.get(k, "") for k in keys]
    if any(isinstance(v, dict | list) for v in values):
        return None
    return tuple(map(json_key, values))


def duplicate_indices(items: Sequence[object], keys: Sequence[str]) -> list[int]:
    """Indices of the items whose key repeats an earlier item's (apimachinery ``validate.Unique``).

    Items that are not objects, or whose key is not made of scalars, take no part: they
    already fail their type check.
    """
    seen: set[tuple[object, ...]] = set()
    dups: list[int] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        key = map_key(item, keys)
        if key is None:
            continue
        if key in seen:
            dups.append(i)
        else:
            seen.add(key)
    return dups


@dataclass(slots=True)
class Scan:
    """What :func:`normalize` found that the fast engine would judge differently."""

    slow_only: bool = False


def normalize(value: object, scan: Scan, levels: int) -> object:
    """Apply Go-decoder semantics to decoded JSON, ``levels`` containers deep.

    ``levels`` is how deep the block's schema reads (:func:`~webhook.declarative.document.levels`):
    an object or array below that is where the schema expects a scalar, so its type is all
    either engine checks and it is returned unwalked. A value nested a thousand levels deep
    costs as little as a shallow one, and nothing here recurses more than the schema does.

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
        if levels <= 0:
            return value  # a type error wherever it is: its content is never read
        out: dict[Any, object] | None = None
        for i, (k, v) in enumerate(value.items()):
            if type(k) is not str:
                scan.slow_only = True
            nv = _DROP if v is None else normalize(v, scan, levels - 1)
            if out is None and nv is not v:
                out = dict(itertools.islice(value.items(), i))
            if out is not None and nv is not _DROP:
                out[k] = nv
        return value if out is None else out
    if isinstance(value, list):
        if levels <= 0:
            return value
        items: list[object] | None = None
        for i, v in enumerate(value):
            nv = {} if v is None else normalize(v, scan, levels - 1)
            if items is None and nv is not v:
                items = list(value[:i])
            if items is not None:
                items.append(nv)
        return value if items is None else items
    scan.slow_only = True  # floats, subclasses of str/int, non-JSON objects
    return value


_DROP: Final = object()  # marks a null member that normalize removes
