"""The JSON Patch of a mutation, and the copy-on-write helper the mutators write with.

The mutating webhook never builds patch paths by hand: it mutates a copy of the object and
``jsonpatch.make_patch`` diffs it against the original (:func:`diff`).
:func:`encode_patch` is the ``AdmissionResponse.patch`` encoding of that patch.

:func:`assoc` returns a mutated object that shares every untouched subtree with the original,
so mutation needs no deep copy and the original is never modified.
"""

from __future__ import annotations

import base64
import json
import typing as t

import jsonpatch

from webhook.vocab.field import FieldPath, Key

__all__ = ["PatchOp", "assoc", "diff", "encode_patch"]

PatchOp = dict[str, t.Any]
# Stands, on both sides, for a subtree the mutation shares with the original.
_SHARED: t.Final = "\x00wasp:shared"


def diff(original: object, mutated: object) -> list[PatchOp]:
    """The RFC 6902 patch from ``original`` to ``mutated`` (made with :func:`assoc`).

    ``jsonpatch.make_patch`` walks both objects whole, two stack frames a level, so a value
    nested a thousand levels deep anywhere in the object (hostile, or a CRD's free-form
    field) would exhaust the stack although wasp never touched it. Subtrees the mutation
    shares with the original (the same object, as :func:`assoc` leaves them) are first
    replaced by one placeholder on both sides: the library then compares only the paths the
    mutation wrote, and its patch is the same (a placeholder is never inside an operation,
    since only values that differ are written into one)."""
    a, b = _unshared(original, mutated)
    return list(jsonpatch.make_patch(a, b))


def _unshared(a: object, b: object) -> tuple[object, object]:
    if a is b:
        return _SHARED, _SHARED
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = dict(a), dict(b)
        for key in a.keys() & b.keys():
            left[key], right[key] = _unshared(a[key], b[key])
        return left, right
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = [_unshared(x, y) for x, y in zip(a, b, strict=True)]
        return [x for x, _ in pairs], [y for _, y in pairs]
    return a, b


def encode_patch(ops: t.Sequence[PatchOp]) -> str:
    """``AdmissionResponse.patch``: base64 of the compact JSON text of ``ops``."""
    text = json.dumps(list(ops), separators=(",", ":"), ensure_ascii=False)
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def assoc(obj: t.Mapping[str, t.Any], path: FieldPath, value: object) -> dict[str, t.Any]:
    """A copy of ``obj`` with ``value`` at ``path``, sharing every untouched subtree.

    Mappings along ``path`` are copied shallowly and created when missing; lists along it are
    copied shallowly. Raises ``ValueError`` when a step is not traversable (a scalar where a
    mapping is needed, or a list index out of range): the caller turns that into a warning.
    """
    if not path:
        raise ValueError("cannot replace the whole object")
    top = dict(obj)
    parent: dict[str, t.Any] | list[t.Any] = top
    segments = path.segments
    for depth, seg in enumerate(segments):
        last = depth == len(segments) - 1
        if isinstance(seg, int):
            if not isinstance(parent, list) or not 0 <= seg < len(parent):
                raise ValueError(f"{FieldPath(segments[: depth + 1])}: no such list element")
            if last:
                parent[seg] = value
                break
            current: object = parent[seg]
        else:
            name = seg.name if isinstance(seg, Key) else seg
            if not isinstance(parent, dict):
                raise ValueError(f"{FieldPath(segments[:depth])}: not an object")
            if last:
                parent[name] = value
                break
            current = parent.get(name)
        if current is None:
            nxt: dict[str, t.Any] | list[t.Any] = {}
        elif isinstance(current, dict):
            nxt = dict(current)
        elif isinstance(current, list):
            nxt = list(current)
        else:
            raise ValueError(f"{FieldPath(segments[: depth + 1])}: not an object")
        if isinstance(seg, int):
            t.cast(list[t.Any], parent)[seg] = nxt
        else:
            t.cast(dict[str, t.Any], parent)[seg.name if isinstance(seg, Key) else seg] = nxt
        parent = nxt
    return top
