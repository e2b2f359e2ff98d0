"""RFC 6902 JSON Patches from a diff of the subtrees a mutation touched.

The mutating webhook never builds patch paths by hand: it mutates a copy of the object and
diffs it against the original. ``jsonpatch.make_patch`` walks the whole object (about
200 µs for a Job, docs/design.md §11.4), so :func:`make_patch` only walks the subtrees the
mutator names (``roots``), a few µs for the typical default or stamp.

Diff semantics (checked against ``jsonpatch`` in ``tests/test_patch.py``):

* mappings are diffed key by key (``add``/``remove``/recursion into common keys);
* lists that differ are replaced whole: the mutators never edit inside a list, and a whole
  ``replace`` can never be mis-applied the way index-shifting ``add``/``remove`` ops can;
* values of different JSON types (``1`` vs ``true`` vs ``1.0``) are different;
* when a root's parent is missing in the original, the topmost missing ancestor is added
  whole, so the patch applies to the original as it is (RFC 6902 ``add`` needs the parent).

Copy-on-write helpers (:func:`assoc`) live here too: they are the other half of the
contract, producing a mutated object that shares every untouched subtree with the
original, so mutation needs no deep copy and the diff can skip everything outside ``roots``.
"""

from __future__ import annotations

import base64
import json
import typing as t

from webhook.vocab.equality import json_equal
from webhook.vocab.field import FieldPath, Key, Segment

__all__ = ["PatchOp", "assoc", "encode_patch", "make_patch"]

PatchOp = dict[str, t.Any]
_ABSENT: t.Final = object()


def _escape(token: str) -> str:
    """One RFC 6901 reference token (the same escaping as :meth:`FieldPath.json_pointer`)."""
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def _step(value: object, seg: Segment) -> object:
    """The child of ``value`` at ``seg``, or ``_ABSENT`` when it has none."""
    if isinstance(seg, int):
        if isinstance(value, list) and 0 <= seg < len(value):
            return value[seg]
        return _ABSENT
    name = seg.name if isinstance(seg, Key) else seg
    if isinstance(value, dict):
        return value.get(name, _ABSENT)
    return _ABSENT


def _diff(a: object, b: object, pointer: str, ops: list[PatchOp]) -> None:
    if a is b:
        return  # copy-on-write shares untouched subtrees: the common, free case
    if type(a) is dict and type(b) is dict:
        for key, old in a.items():
            if key not in b:
                ops.append({"op": "remove", "path": f"{pointer}/{_escape(str(key))}"})
            else:
                _diff(old, b[key], f"{pointer}/{_escape(str(key))}", ops)
        for key, new in b.items():
            if key not in a:
                ops.append({"op": "add", "path": f"{pointer}/{_escape(str(key))}", "value": new})
        return
    if not json_equal(a, b):
        ops.append({"op": "replace", "path": pointer, "value": b})


def _nested(roots: t.Sequence[FieldPath]) -> list[FieldPath]:
    """``roots`` without duplicates and without roots lying inside another root."""
    ordered = sorted(set(roots), key=lambda p: len(p.segments))
    kept: list[FieldPath] = []
    for root in ordered:
        if not any(root.segments[: len(k.segments)] == k.segments for k in kept):
            kept.append(root)
    return kept


def make_patch(original: object, mutated: object, *, roots: t.Sequence[FieldPath]) -> list[PatchOp]:
    """The RFC 6902 operations turning ``original`` into ``mutated``, looking only at ``roots``.

    Contract: ``original`` and ``mutated`` are equal outside ``roots`` (changes elsewhere are
    not seen). An empty ``roots`` gives ``[]``; the empty path diffs the whole object.
    ``value`` members alias ``mutated``'s subtrees (no copies): serialise the patch before
    changing ``mutated``. Neither input is modified.
    """
    ops: list[PatchOp] = []
    # Subtrees an op above already wrote whole: two roots under one missing parent (two
    # annotation keys of an object without annotations) share its one "add".
    written: list[tuple[Segment, ...]] = []
    for root in _nested(roots):
        a, b = original, mutated
        segments = root.segments
        if any(segments[: len(done)] == done for done in written):
            continue
        for depth, seg in enumerate(segments):
            child_a, child_b = _step(a, seg), _step(b, seg)
            if child_a is _ABSENT and child_b is _ABSENT:
                break  # absent on both sides: nothing below can differ
            if child_a is _ABSENT or child_b is _ABSENT:
                pointer = FieldPath(segments[: depth + 1]).json_pointer()
                if child_a is _ABSENT:
                    if not isinstance(a, dict | list):
                        # The parent itself is not a container (malformed original): replace it.
                        ops.append(
                            {"op": "replace", "path": FieldPath(segments[:depth]).json_pointer(), "value": b}
                        )
                        written.append(segments[:depth])
                    else:
                        ops.append({"op": "add", "path": pointer, "value": child_b})
                        written.append(segments[: depth + 1])
                else:
                    ops.append({"op": "remove", "path": pointer})
                    written.append(segments[: depth + 1])
                break
            a, b = child_a, child_b
        else:
            _diff(a, b, root.json_pointer(), ops)
    return ops


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
