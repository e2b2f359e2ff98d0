"""Which controllers hold pods back until others are ready: the start order of a workload.

The one seam ``wasp explain`` reads start order through. It asks the policy's own description
of its controller (``spec.schedulability.startOrder``, docs/schedulability.md), the same entries
that admission judges a gang by, so a controller's start order is declared once, in its policy.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.governed.schedulability import held_back
from webhook.policy import Policy

__all__ = ["StartOrder", "start_order"]


@dataclass(frozen=True, slots=True)
class StartOrder:
    """``why``: what in the object sequences the start; ``fix``: how to start everything at once."""

    why: str
    fix: str


def start_order(policy: Policy, obj: t.Mapping[str, t.Any]) -> StartOrder | None:
    """Why ``obj``'s controller creates some of its pods only after others are ready, or ``None``."""
    held = held_back(policy, obj)
    if not held:
        return None
    return StartOrder("; ".join(h.why for h in held), "; ".join(dict.fromkeys(h.fix for h in held)))
