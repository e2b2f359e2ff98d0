"""``identity``: what a member pod may be stamped with, for one governed object, from the object.

Its UID, and the PodGroup names the reconciler's plan creates for it as it is now, run from
nothing until it creates nothing more (the Workload first, then its groups): the one decision
the reconciler makes, not a copy of it. A member pod whose PodGroup is not among them is left
alone (:func:`webhook.governed.membership.unknown_group`): an object the reconciler refuses
(invalid, opted out, a deferring inner object) gets no PodGroup at all, and a LeaderWorkerSet
surging past ``spec.replicas`` in a rolling update runs groups it has no PodGroup for.
"""

from __future__ import annotations

import typing as t

from webhook.governed.reconcile import Create, Observed, plan
from webhook.policy import PolicySet
from webhook.policy.model import Identity

__all__ = ["desired_groups", "identity"]

Json = dict[str, t.Any]
# The Workload, then its PodGroups (a composite's children a round later): rounds to converge.
_ROUNDS: t.Final = 4


def desired_groups(obj: t.Mapping[str, t.Any], policies: PolicySet) -> frozenset[str]:
    """The names of the PodGroups the reconciler creates for ``obj`` from nothing."""
    workloads: list[Json] = []
    groups: list[Json] = []
    for _ in range(_ROUNDS):
        created = [w for w in plan(obj, policies, Observed(workloads=workloads, groups=groups)).writes
                   if isinstance(w, Create)]  # fmt: skip
        if not created:
            break
        for write in created:
            # As the apiserver stores it: with a UID, which the groups' workloadRef needs.
            body = {**write.body, "metadata": {**write.body["metadata"], "uid": f"uid-{write.name}"}}
            (workloads if write.kind == "Workload" else groups).append(body)
    return frozenset(g["metadata"]["name"] for g in groups if g.get("kind") == "PodGroup")


def identity(obj: t.Mapping[str, t.Any], policies: PolicySet) -> Identity | None:
    """The object's identity for the membership cache, or ``None`` when it has no UID."""
    metadata = obj.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    if not isinstance(uid, str) or not uid:
        return None
    return Identity(uid, desired_groups(obj, policies))
