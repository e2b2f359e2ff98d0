"""Layered workloads: an inner governed object defers to the outermost governed one.

A TrainJob creates a JobSet, a RayJob a RayCluster: with both policies loaded, the inner
object is governed too. A layered workload gets exactly one Workload, from the outermost
governed object, as the Job controller defers to a Job's controller (docs/design.md §7.1):

* an inner object (its controller ownerReference names a governed kind) gets no Workload
  of its own (``management_mode`` is ``NONE``);
* it is not judged (``validate_object`` skips it): blocks it carries are copies of the
  outer object's (RayJob metadata is copied onto its RayCluster), judged there already, and
  have no effect of their own;
* it is not defaulted, and its pods and children are not stamped with its own names: the
  outer object's stamping gave its pod templates the outer names, or marked them as
  deliberately left out of every group (:data:`NOT_STAMPED`).

Kinds whose controller knows WAS (batch Jobs and CronJobs, docs/decisions.md §9) are
judged as always: the Job controller reads their ``spec.scheduling`` itself.
"""

from __future__ import annotations

import typing as t

from webhook.governed.ownership import WAS_AWARE_KINDS, controller_of
from webhook.policy import Policy, PolicySet

__all__ = ["outer_owner"]

Obj = t.Mapping[str, t.Any]


def outer_owner(obj: Obj, policies: PolicySet) -> tuple[Policy, Obj] | None:
    """``(the outer policy, the controller ref)`` when ``obj`` is an inner governed object."""
    own = policies.for_object(obj)
    if own is None or (own.group, own.kind) in WAS_AWARE_KINDS:
        return None
    ref = controller_of(obj)
    if ref is None:
        return None
    api_version, kind = ref.get("apiVersion"), ref.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    outer = policies.for_kind(api_version, kind)
    return (outer, ref) if outer is not None else None
