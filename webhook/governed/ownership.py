"""Who controls an object: its controller ownerReference, and the kinds whose own controller
knows WAS.

Layering, stamping, the reconciler's decisions and the audit all ask these two questions; this
module answers them with nothing else imported, so a validation (which asks only whether an
object is an inner, layered one) does not load the stamping and reconciling modules with them.
"""

from __future__ import annotations

import typing as t

__all__ = ["WAS_AWARE_KINDS", "controller_of"]

Obj = t.Mapping[str, t.Any]

# docs/decisions.md §9: the 1.37 Job controller creates the objects of Jobs (and so of
# CronJobs' Jobs) itself; wasp creating them too would duplicate them.
WAS_AWARE_KINDS: t.Final = frozenset({("batch", "Job"), ("batch", "CronJob")})


def controller_of(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, or ``None`` (absent or malformed)."""
    metadata = obj.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, dict) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None
