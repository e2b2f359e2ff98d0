"""Ratcheting: which errors the apiserver skips on update because the data under them is unchanged.

Old and new values are walked together: object members correlate by name, list-map items by
their key, items of atomic lists not at all (only an unchanged list ratchets them). "Unchanged"
is :func:`~webhook.vocab.equality.semantic_equal`, the one equality of the project.
"""

from __future__ import annotations

from webhook.declarative.decode import ABSENT, UNCORRELATED, Seg, map_key
from webhook.declarative.document import NO_SHAPE, Shape
from webhook.declarative.translate import Kind, Raw
from webhook.vocab.equality import semantic_equal

__all__ = ["ratcheted"]


def _present(v: object) -> bool:
    return v is not ABSENT and v is not UNCORRELATED


def _step(new: object, old: object, shape: Shape, seg: Seg) -> tuple[object, object, Shape]:
    """Move one segment down in the new value and in the *correlated* old value.

    Object members correlate by name. List-map items correlate by key (apimachinery's
    ``EachSliceVal`` with a match function); items of atomic lists do not correlate at all, so
    only an unchanged list as a whole ratchets them.
    """
    if isinstance(seg, str):
        n: object = new.get(seg, ABSENT) if isinstance(new, dict) else ABSENT
        o: object = old.get(seg, ABSENT) if isinstance(old, dict) else UNCORRELATED
        return n, o, shape.props.get(seg, NO_SHAPE)
    n = new[seg] if isinstance(new, list) and 0 <= seg < len(new) else ABSENT
    o = UNCORRELATED
    keys = shape.map_keys
    key = map_key(n, keys) if keys and isinstance(n, dict) else None
    # An item whose key is not made of scalars (map_key None) correlates with nothing.
    if keys and key is not None and isinstance(old, list):
        for candidate in old:
            if isinstance(candidate, dict) and map_key(candidate, keys) == key:
                o = candidate
                break
    return n, o, shape.items or NO_SHAPE


def _is_zero(v: object) -> bool:
    return v is ABSENT or v == ""


def ratcheted(raw: Raw, new: object, old: object, shape: Shape) -> bool:
    """True when the apiserver would skip this error on update (docs/design.md §2.3)."""
    n, o, sh = new, old, shape
    parent_old: object = UNCORRELATED
    for seg in raw.ratchet_loc:
        # Unchanged data is not validated again, whatever lies below it.
        if _present(o) and _present(n) and semantic_equal(n, o):
            return True
        parent_old = o
        n, o, sh = _step(n, o, sh, seg)
    if raw.kind is Kind.REQUIRED:
        # Both zero under a correlated old parent: Go compares the two zero values as equal.
        return isinstance(parent_old, dict) and _is_zero(n) and _is_zero(o)
    if raw.kind is Kind.UNION:
        if isinstance(n, dict) and isinstance(o, dict):
            return all((m in n) == (m in o) for m in raw.members)
        return False
    return _present(o) and _present(n) and semantic_equal(n, o)
