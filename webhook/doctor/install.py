"""What the install ``wasp doctor`` inspects was configured to do: pure, from the release's own
annotations on its webhook configurations (charts/wasp, ``wasp.installAnnotations`` in
templates/_helpers.tpl), else the chart's defaults.
"""

from __future__ import annotations

import json
import typing as t
from dataclasses import dataclass, field, replace
from datetime import timedelta

__all__ = [
    "ENTRIES_ANNOTATION",
    "INSTALL_ANNOTATION",
    "Expected",
    "configured_entries",
    "configured_lease",
    "installed",
]

Json = dict[str, t.Any]
# Written by charts/wasp on both webhook configurations: the release's configuration, and the
# entries it rendered in that configuration.
INSTALL_ANNOTATION: t.Final = "wasp.dev/install"
ENTRIES_ANNOTATION: t.Final = "wasp.dev/entries"
_STAMPING: t.Final = (".pods.mutate.wasp.dev", ".children.mutate.wasp.dev", ".members.mutate.wasp.dev")


@dataclass(frozen=True, slots=True)
class Expected:
    """What the install was configured with (charts/wasp's defaults unless the release's own
    ``wasp.dev/install`` annotation says otherwise, see :func:`installed`), and how near expiry
    is too near."""

    # failurePolicy per kind of entry: validating, defaulting (the governed kind's /mutate entry)
    # and stamping (pods, children, members).
    failure_policy: t.Mapping[str, str] = field(
        default_factory=lambda: {"validating": "Fail", "defaulting": "Fail", "stamping": "Fail"}
    )
    validating_timeout: int = 3
    mutating_timeout: int = 2
    validating_condition: str = "has-scheduling-blocks"
    expiry_margin: timedelta = timedelta(days=30)
    lease_name: str = "wasp-reconciler"
    reconciler: bool = True  # whether the install runs the reconciler (and so holds the Lease)
    source: str = "the chart's defaults"  # what the expectations were read from

    @staticmethod
    def role(entry: str) -> str:
        """The kind of a webhook entry, by the name the chart gives it."""
        if entry.endswith(".validate.wasp.dev"):
            return "validating"
        return "stamping" if entry.endswith(_STAMPING) else "defaulting"


def installed(config: Json | None, base: Expected) -> Expected:
    """``base`` with what the release's ``wasp.dev/install`` annotation on ``config`` says it was
    configured to do; ``base`` itself when there is none (an install by hand, an older chart)."""
    annotations = ((config or {}).get("metadata") or {}).get("annotations") or {}
    try:
        doc = json.loads(annotations[INSTALL_ANNOTATION])
        policies = doc["failurePolicy"]
        timeouts = doc["timeoutSeconds"]
        reconciler = doc["reconciler"]
        return replace(
            base,
            failure_policy={role: str(policies[role]) for role in ("validating", "defaulting", "stamping")},
            validating_timeout=int(timeouts["validating"]),
            mutating_timeout=int(timeouts["mutating"]),
            reconciler=bool(reconciler["installed"]),
            source=f"the release's {INSTALL_ANNOTATION} annotation",
        )
    except (KeyError, TypeError, ValueError):
        return base


def configured_lease(config: Json | None) -> str | None:
    """The reconciler's Lease name the release's annotation gives, if any."""
    annotations = ((config or {}).get("metadata") or {}).get("annotations") or {}
    try:
        return str(json.loads(annotations[INSTALL_ANNOTATION])["reconciler"]["lease"])
    except (KeyError, TypeError, ValueError):
        return None


def configured_entries(config: Json) -> int | None:
    value = ((config.get("metadata") or {}).get("annotations") or {}).get(ENTRIES_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
