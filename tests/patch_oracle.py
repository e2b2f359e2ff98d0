"""The check every produced JSON Patch must pass (shared by the mutating-webhook tests)."""

from __future__ import annotations

import copy
import json

import jsonpatch

from webhook.governed.patch import PatchOp


def _text(value: object) -> str:
    # JSON text, so 1, 1.0 and true stay different (Python's == says they are equal).
    return json.dumps(value, sort_keys=True)


def check_patch(original: object, mutated: object, ops: list[PatchOp]) -> None:
    """``ops`` applies cleanly to ``original`` and yields ``mutated`` (JSON types compared as JSON
    text); ``original`` is left untouched."""
    before = copy.deepcopy(original)
    applied = jsonpatch.apply_patch(original, ops)
    assert _text(applied) == _text(mutated)
    assert _text(original) == _text(before), "the original must not be modified"
