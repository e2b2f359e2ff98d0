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

__all__ = ["converge", "desired_groups", "identity"]

Json = dict[str, t.Any]
# The Workload, then its PodGroups (a composite's children a round later): rounds to converge.
_ROUNDS: t.Final = 4


def converge(obj: t.Mapping[str, t.Any], policies: PolicySet, groups: t.Sequence[Json] = ()) -> list[Json]:
    """The objects the reconciler creates for ``obj`` when none of its own exist (``groups``:
    other objects' groups that do), in creation order and as the apiserver stores them: with
    a UID, which the groups' ``workloadRef`` and owner references need."""
    workloads: list[Json] = []
    mine: list[Json] = []
    out: list[Json] = []
    for _ in range(_ROUNDS):
        observed = Observed(workloads=workloads, groups=[*groups, *mine])
        created = [w for w in plan(obj, policies, observed).writes if isinstance(w, Create)]
        if not created:
            break
        for write in created:
            body = {**write.body, "metadata": {**write.body["metadata"], "uid": f"uid-{write.name}"}}
            (workloads if write.kind == "Workload" else mine).append(body)
            out.append(body)
    return out


def desired_groups(obj: t.Mapping[str, t.Any], policies: PolicySet) -> frozenset[str]:
    """The names of the PodGroups the reconciler creates for ``obj`` from nothing."""
    return frozenset(o["metadata"]["name"] for o in converge(obj, policies) if o.get("kind") == "PodGroup")


def identity(obj: t.Mapping[str, t.Any], policies: PolicySet) -> Identity | None:
    """The object's identity for the membership cache, or ``None`` when it has no UID."""
    metadata = obj.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    if not isinstance(uid, str) or not uid:
        return None
    return Identity(uid, desired_groups(obj, policies))
