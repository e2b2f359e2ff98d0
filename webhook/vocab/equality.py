"""Equality of decoded JSON values: the one place that decides whether two values are the same.

Every comparison wasp makes between an object and its stored version (update rules,
ratcheting, the Workload and PodGroup update checks) and between list-map keys goes through
this module, so no two callers can disagree on what "unchanged" means. (The JSON Patch of a
mutation is ``jsonpatch``'s diff, which keeps JSON types apart the same way.)

* :func:`json_equal`: the same JSON value. JSON types are kept apart even where Python's
  ``==`` joins them: ``true`` is not ``1``, and ``1`` is not ``1.0`` (Go's decoder rejects
  ``1.0`` for an integer field, so the two are different inputs).
* :func:`semantic_equal`: apimachinery's semantic equality as it applies to decoded objects
  (``equality.Semantic.DeepEqual``): :func:`json_equal`, except that a ``null`` object member
  is the same as an absent one, and an empty list is the same as an absent (``null``) one,
  as a nil and an empty Go slice are. An empty *object* is a value (``basic: {}`` is set).
* :func:`json_key`: a hashable form with ``json_key(a) == json_key(b)`` exactly when
  ``json_equal(a, b)``, for sets and dicts of values (list-map keys).

None of them raises on decoded input. A value nested deeper than Python can walk (JSON
decoders accept about a thousand levels) compares *unequal*: a caller then validates it
instead of skipping it, and validation reports the depth.
"""

from __future__ import annotations

import typing as t

__all__ = ["is_absent", "json_equal", "json_key", "semantic_equal"]


def is_absent(value: object) -> bool:
    """``null`` or an empty list: what semantic equality treats as "not there"."""
    return value is None or (type(value) is list and not value)


def json_equal(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value (types kept apart)."""
    try:
        return _equal(a, b, semantic=False)
    except RecursionError:
        return False


def semantic_equal(a: object, b: object) -> bool:
    """Whether an update leaves a value as it was (null member == absent, ``[]`` == absent)."""
    try:
        return _equal(a, b, semantic=True)
    except RecursionError:
        return False


def _equal(a: object, b: object, *, semantic: bool) -> bool:
    if a is b:
        return True
    if semantic and (is_absent(a) or is_absent(b)):
        return is_absent(a) and is_absent(b)
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        da, db = t.cast(dict[object, object], a), t.cast(dict[object, object], b)
        if not semantic:
            return da.keys() == db.keys() and all(_equal(v, db[k], semantic=False) for k, v in da.items())
        return _members_equal(da, db) and all(k in da or is_absent(v) for k, v in db.items())
    if kind is list:
        la, lb = t.cast(list[object], a), t.cast(list[object], b)
        return len(la) == len(lb) and all(
            _equal(x, y, semantic=semantic) for x, y in zip(la, lb, strict=True)
        )
    return a == b


def _members_equal(a: dict[object, object], b: dict[object, object]) -> bool:
    """Every member of ``a`` has its semantic equal in ``b`` (absent there if absent here)."""
    for key, value in a.items():
        if key in b:
            if not _equal(value, b[key], semantic=True):
                return False
        elif not is_absent(value):
            return False
    return True


def json_key(value: object) -> t.Hashable:
    """A hashable stand-in for ``value``: equal exactly when the values are :func:`json_equal`.

    Raises ``RecursionError`` only for values nested deeper than Python can walk.
    """
    kind = type(value)
    if kind is dict:
        items = t.cast(dict[object, object], value).items()
        return ("object", frozenset((json_key(k), json_key(v)) for k, v in items))
    if kind is list:
        return ("array", tuple(json_key(v) for v in t.cast(list[object], value)))
    return (kind.__name__, value)
