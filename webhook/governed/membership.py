"""Membership by label (``stamping.membership``): which governed object a pod belongs to, and
the identity cache that turns that object's name into the UID its PodGroup names hash.

A LeaderWorkerSet's pods sit under StatefulSets (the workers under one owned by the leader
Pod), so no ownerReference of theirs names the LWS; every one of them carries the label
``leaderworkerset.sigs.k8s.io/name``. The PodGroup names (:func:`webhook.governed.workloads.pod_group_name`)
hash the object's UID, so a pod's name alone is not enough: :class:`IdentityCache` maps
``(namespace, name)`` to the UID and the PodGroups the reconciler plans for the object
(:mod:`webhook.governed.desired_groups`). The webhook server fills it from a list+watch of the
kind (:mod:`webhook.watches.identities`, the only I/O) and gives it a ``fetch`` for the objects
the watch has not delivered yet; the decision here is pure and has three outcomes
(docs/decisions.md §28):

* the UID is known: the pod is stamped like a pod the object controls, unless its PodGroup is
  not one the reconciler creates (then it is left alone with a warning);
* the object does not exist (a synced cache and a GET say so): the pod is left alone with a
  warning, since any name would be one nobody creates;
* the cache cannot tell right now (not listed yet, the API unreachable): :class:`IdentityUnavailable`,
  which the server answers with a retriable error, because controllers retry pod creates and
  a guessed name would strand the pod outside its gang for good.
"""

from __future__ import annotations

import threading
import time
import typing as t
from dataclasses import dataclass, replace

from webhook.policy import Policy, PolicySet
from webhook.policy.model import Identity, IdentityLookup
from webhook.vocab.formats import dns_subdomain

__all__ = [
    "IdentityCache",
    "IdentityUnavailable",
    "Member",
    "member_of",
    "membership_kinds",
    "membership_policy",
    "resolve_member",
    "unknown_group",
    "with_identities",
]

Fetch = t.Callable[[str, str], "Identity | None"]
# How long "this object does not exist" (from a GET) is believed before asking again; an
# ADDED event from the watch ends it at once.
NEGATIVE_TTL: t.Final = 10.0


class IdentityUnavailable(Exception):
    """The object's UID cannot be known right now; retrying the request later can succeed."""


class IdentityCache:
    """``(namespace, name) -> Identity`` for one governed kind; thread-safe (request threads read,
    the watch thread writes). Not synced until the first list is in: before that, an absent
    entry means nothing. ``fetch`` (set by the server) asks the API for one object: its UID,
    ``None`` when it does not exist, :class:`IdentityUnavailable` when it cannot be reached;
    without one, the synced cache is the whole truth."""

    def __init__(self, kind: str, *, clock: t.Callable[[], float] = time.monotonic) -> None:
        self.kind = kind
        self.fetch: Fetch | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], Identity] = {}
        self._absent: dict[tuple[str, str], float] = {}
        # Set once the first list is in (the server's watch sets it; threads may wait on it).
        self.listed = threading.Event()

    @property
    def synced(self) -> bool:
        return self.listed.is_set()

    def mark_synced(self) -> None:
        self.listed.set()

    def put(self, namespace: str, name: str, identity: Identity) -> None:
        with self._lock:
            self._known[namespace, name] = identity
            self._absent.pop((namespace, name), None)

    def remove(self, namespace: str, name: str) -> None:
        with self._lock:
            self._known.pop((namespace, name), None)

    def cached(self, namespace: str, name: str) -> Identity | None:
        """What the watch (or an earlier GET) gave, without asking the API."""
        with self._lock:
            return self._known.get((namespace, name))

    def identity_of(self, namespace: str, name: str) -> Identity | None:
        key = (namespace, name)
        with self._lock:
            known = self._known.get(key)
            absent_since = self._absent.get(key)
        if known is not None:
            return known
        if not self.listed.is_set():
            raise IdentityUnavailable(f"the wasp webhook has not listed {self.kind} objects yet")
        if self.fetch is None or (absent_since is not None and self._clock() - absent_since < NEGATIVE_TTL):
            return None
        # A pod can be admitted before the watch delivers its object's ADDED event.
        found = self.fetch(namespace, name)
        with self._lock:
            if found is not None:
                self._known[key] = found
            else:
                self._absent[key] = self._clock()
        return found


@dataclass(frozen=True, slots=True)
class Member:
    """A pod's governed object by label: its policy, the ownerReference-shaped identity that
    stamping names the PodGroup from, and the PodGroups the reconciler creates for it."""

    policy: Policy
    name: str
    ref: t.Mapping[str, str]
    groups: frozenset[str] | None = None


def _labels(pod: t.Mapping[str, t.Any]) -> t.Mapping[str, object]:
    metadata = pod.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return labels if isinstance(labels, dict) else {}


def membership_policy(pod: t.Mapping[str, t.Any], policies: PolicySet) -> tuple[Policy, str] | None:
    """The membership policy whose label ``pod`` carries, and the label's value; no lookup."""
    labels = _labels(pod)
    for policy in policies.policies:
        membership = policy.membership
        value = labels.get(membership.label) if membership is not None else None
        if isinstance(value, str):
            return policy, value
    return None


def member_of(pod: t.Mapping[str, t.Any], policy: Policy, name: str) -> Member | str:
    """Which object of ``policy``'s kind named ``name`` the pod belongs to, with its UID, or
    why none; raises :class:`IdentityUnavailable` when that cannot be known right now."""
    membership = policy.membership
    assert membership is not None  # membership_policy chose it
    metadata = pod.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    where = f"label {membership.label}={name!r}"
    if not isinstance(namespace, str) or not namespace:
        return f"{where}: the pod has no namespace"
    if dns_subdomain(name):
        return f"{where} cannot be the name of a {policy.kind}"
    if membership.identities is None:
        # `wasp` commands other than serve keep no cache: they cannot know the UID.
        return f"{where}: no identity cache for {policy.kind} in this process"
    identity = membership.identities.identity_of(namespace, name)
    if identity is None:
        return f"{where}: {policy.kind} {namespace}/{name} does not exist"
    api_version = f"{policy.group}/{policy.versions[0]}" if policy.group else policy.versions[0]
    ref = {"apiVersion": api_version, "kind": policy.kind, "name": name, "uid": identity.uid}
    return Member(policy, name, ref, groups=identity.groups)


def resolve_member(
    pod: t.Mapping[str, t.Any], policies: PolicySet, *, lookup: bool = True
) -> Member | str | None:
    """For stamping: ``None`` when no membership label is on ``pod``; the member, whose ``ref``
    (ownerReference-shaped) names its PodGroup; or why it is left alone (a warning's tail).
    Without ``lookup`` (stamping's gate is off) the ref has no UID: stamping then says why it
    stamps nothing, and no pod is denied for the cache's sake."""
    found = membership_policy(pod, policies)
    if found is None:
        return None
    policy, name = found
    if not lookup:
        return Member(policy, name, {"kind": policy.kind, "name": name})
    member = member_of(pod, policy, name)
    if isinstance(member, str):
        return f"(member of {policy.kind} {name}): not stamped: {member}"
    return member


def unknown_group(stamped: t.Mapping[str, t.Any], member: Member) -> str | None:
    """Why a pod stamped for ``member`` must be left alone after all: its PodGroup is not one
    the reconciler creates for the object as it is now (a group past ``spec.replicas`` in a
    rolling update's surge, an object it refuses to compile); ``None`` when it is."""
    group = (stamped.get("spec") or {}).get("schedulingGroup") or {}
    name = group.get("podGroupName")
    if member.groups is None or name in member.groups:
        return None
    return (
        f"(member of {member.policy.kind} {member.name}): not stamped: PodGroup {name} is not among "
        f"the {len(member.groups)} the reconciler creates for it"
    )


def membership_kinds(policies: PolicySet) -> list[Policy]:
    """The policies with ``stamping.membership``: the kinds the webhook must watch."""
    return [p for p in policies.policies if p.membership is not None]


def with_identities(policies: PolicySet, caches: t.Mapping[str, IdentityLookup]) -> PolicySet:
    """``policies`` with each membership policy's cache (by policy name) attached."""
    attached = [
        replace(p, membership=replace(p.membership, identities=caches[p.name]))
        if p.membership is not None and p.name in caches
        else p
        for p in policies.policies
    ]
    return PolicySet(attached, gates=policies.gates, notes=policies.notes, grouping=policies.grouping)
