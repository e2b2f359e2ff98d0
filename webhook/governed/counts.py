"""Pod and group count expressions (``podCount.expression``, ``groups.expression``): CEL over
the node's context bound as ``self``, with the few functions counts need.

Counts are products, sums over lists (Volcano tasks, Ray worker groups) and clamps, so beyond
standard CEL an expression may call ``sum``, ``min`` and ``max``, which the binding lacks.
"""

from __future__ import annotations

import typing as t

from webhook.policy import PodCount
from webhook.policy.celbinding import binding

if t.TYPE_CHECKING:
    import cel

__all__ = ["POD_COUNT_FUNCTIONS", "evaluate", "evaluate_count"]


def evaluate_count(pc: PodCount, context: t.Mapping[str, t.Any]) -> tuple[object, str | None]:
    """The pod count expression's value over ``context`` as ``self`` and ``None``; ``(None,
    None)`` when it reads a field the object does not have (the count is then absent, as for
    an unset field); ``(None, why)`` when it fails on the object's values (a string times a
    number, ...)."""
    assert pc.program is not None  # set with every expression at load
    return evaluate(pc.program, context)


def evaluate(program: cel.Program, context: t.Mapping[str, t.Any]) -> tuple[object, str | None]:
    """``program``'s value over ``context`` as ``self``, as :func:`evaluate_count` gives it."""
    try:
        bound = binding().Context()
        bound.add_variable("self", context)
        for name, function in POD_COUNT_FUNCTIONS.items():
            bound.add_function(name, function)
        return program.execute(bound), None
    except KeyError:
        return None, None  # a field the expression reads is absent
    except Exception as exc:  # noqa: BLE001 - a user's object must never crash admission
        return None, f"{type(exc).__name__}: {exc}"


def _total(values: object) -> int:
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise TypeError("sum() takes a list of integers")
    return sum(values)


# Functions a pod count expression may call beyond standard CEL, which the binding lacks:
# counts are sums over lists (Volcano tasks, Ray worker groups) and clamps (min/max).
POD_COUNT_FUNCTIONS: t.Final[dict[str, t.Callable[..., int]]] = {"sum": _total, "min": min, "max": max}
