"""``validate_block``: structural validation of one building block, at the user's own field path.

The fast engine's verdict comes first: valid input, by far the common case, never reaches
Python-level validation. Only an "invalid" verdict (or an input the fast engine would judge
differently, see :func:`~webhook.declarative.decode.normalize`) runs the reference engine, whose
errors are translated, short-circuited, ratcheted and ordered. :func:`reference_engine_only`
switches the verdict off, so tests can run the reference path on the same inputs.

Contract details a caller may rely on:

* Errors come in pre-order over the value, an object's members in the order its type declares
  them (unknown members after, by name; absent required members after the present ones), so
  the order never depends on the order of the client's keys; at one location: type,
  required, union, then the rest.
* ``maxItems`` short-circuits like validation-gen's ``ShortCircuit`` flag: a list over its
  limit reports only ``TooMany`` (no duplicates, no item errors).
* A duplicate list-map key is reported at each later item with the whole (null-stripped) item
  as the bad value, as apimachinery's ``validate.Unique`` does.
* On update, an error is dropped when the data it concerns is unchanged
  (:mod:`~webhook.declarative.ratchet`); a value unchanged as a whole reports nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Final

from webhook.declarative.decode import ABSENT, Scan, normalize
from webhook.declarative.document import BlockType
from webhook.declarative.engines import COMPILED, Compiled
from webhook.declarative.ratchet import ratcheted
from webhook.declarative.translate import enumerate_errors, ordering, over_limit, short_circuit
from webhook.vocab.equality import semantic_equal
from webhook.vocab.field import FieldError, FieldPath, internal_error
from webhook.vocab.sentinel import Sentinel

__all__ = ["NO_OLD", "reference_engine_only", "validate_block", "verdicts"]

# A create: there is no old value to ratchet against.
NO_OLD: Final = Sentinel("NO_OLD", __name__)

# The fast engine's verdict runs first (see the module docs); tests switch it off to run the
# reference path on the same inputs.
_use_fast_verdict = True


@contextlib.contextmanager
def reference_engine_only() -> Iterator[None]:
    """Within the block, :func:`validate_block` skips the fast verdict: every input takes the
    reference engine, as an invalid one does. Not thread-safe; for tests and benchmarks."""
    global _use_fast_verdict
    previous, _use_fast_verdict = _use_fast_verdict, False
    try:
        yield
    finally:
        _use_fast_verdict = previous


def _fast_verdict(compiled: Compiled, value: object) -> bool | None:
    try:
        return bool(compiled.fast.is_valid(value))
    except Exception:  # noqa: BLE001 - any conversion problem just means "ask the reference engine"
        return None


def verdicts(block: BlockType, value: object) -> tuple[bool | None, bool]:
    """``(fast, reference)`` verdicts on ``value`` after null stripping (for tests and benchmarks).

    ``fast`` is ``None`` when the input is routed straight to the reference engine (floats,
    integers beyond int64, non-JSON objects) or when jsonschema_rs cannot convert it.
    """
    compiled = COMPILED[block]
    scan = Scan()
    new = normalize(value, scan, compiled.levels)
    fast = None if scan.slow_only else _fast_verdict(compiled, new)
    instance: Any = new
    return fast, not any(True for _ in compiled.reference.iter_errors(instance))


def validate_block(
    block: BlockType,
    value: object,
    path: FieldPath,
    *,
    old: object = NO_OLD,
) -> list[FieldError]:
    """Validate one building block (decoded JSON) and report every violation at ``path``.

    ``old`` is the previous value on update (``NO_OLD`` on create; ``None`` means the old
    object did not have the block). Never raises for any input: an internal failure is reported
    as an ``InternalError`` at ``path``.
    """
    if value is None:
        return []
    try:
        return _validate(block, value, path, old)
    except RecursionError:
        return [internal_error(path, "value is nested too deeply to validate")]
    except Exception as exc:  # noqa: BLE001 - admission must answer, not crash
        return [internal_error(path, f"validation failed: {type(exc).__name__}: {exc}")]


def _validate(block: BlockType, value: object, path: FieldPath, old: object) -> list[FieldError]:
    compiled = COMPILED[block]
    # maxItems short-circuits before anything else looks at the value: a list over its limit
    # is one TooMany error and is emptied here, so none of its items is decoded or validated,
    # whatever its length.
    cut, too_many = over_limit(value, compiled.limits)
    scan = Scan()
    new = normalize(cut, scan, compiled.levels)
    # Valid input (the common case, create or update) ends here: ratcheting only removes errors.
    # A cut value is invalid by its TooMany errors, whatever the fast engine says of the rest.
    if _use_fast_verdict and not too_many and not scan.slow_only and _fast_verdict(compiled, new) is True:
        return []
    ratchet = old is not NO_OLD
    old_value: object = ABSENT  # old None: the old object did not have the block
    # Ratcheting compares what was sent, over-limit lists included (an unchanged one is not
    # reported): only an update that carries such a list decodes it whole.
    whole = normalize(value, Scan(), compiled.levels) if too_many and ratchet and old is not None else new
    if ratchet and old is not None:
        old_value = normalize(old, Scan(), compiled.levels)
        if semantic_equal(whole, old_value):
            return []
    raws = short_circuit([*too_many, *enumerate_errors(compiled, new)])
    if ratchet:
        raws = [raw for raw in raws if not ratcheted(raw, whole, old_value, compiled.shape)]
    raws.sort(key=ordering(new, compiled.shape))
    return [raw.error.with_prefix(path) for raw in raws]
