"""The membership identity caches: :class:`IdentityWatch`, the per-process watch of every stamping cache.

A policy with ``stamping.membership`` (LeaderWorkerSet) stamps pods whose owners are not the
governed object, with PodGroup names that hash its UID (docs/decisions.md §28). For each such
kind, :class:`IdentityWatch` lists and watches the objects (the reconciler's
:class:`~webhook.kube.informer.Informer`: one list+watch implementation in wasp, with its
resume, ``410 Gone`` relist and backoff) and keeps ``(namespace, name) -> uid`` in the pure
:class:`~webhook.governed.membership.IdentityCache` that stamping reads. A pod admitted before
the watch delivered its object's ADDED event is resolved by one GET by name, with a deadline
far inside the apiserver's webhook timeout.

The same watch starts the grouping feed of all-or-nothing stamping (:mod:`.grouping`,
docs/decisions.md §30) when a policy stamps pods or child objects, and answers for both in
readiness. Without API access (no token, no RBAC) that part is off and logged, never a reason
to be unready.

The caches are attached to the policies when the app is built (before gunicorn forks);
:meth:`IdentityWatch.start` runs in each worker after the fork, because a thread does not
survive ``fork`` and every worker answers reviews from its own memory.
"""

from __future__ import annotations

import logging
import typing as t
from pathlib import Path

from urllib3.exceptions import HTTPError

from webhook.governed.desired_groups import identity
from webhook.governed.grouping import GroupingCache
from webhook.governed.membership import IdentityCache, IdentityUnavailable, membership_kinds, with_identities
from webhook.governed.outsiders import stamps
from webhook.kube.api import Api, ApiException, Resource
from webhook.kube.informer import Informer
from webhook.policy.model import Identity
from webhook.watches.client import GET_TIMEOUT, api_client
from webhook.watches.grouping import watch_grouping

if t.TYPE_CHECKING:
    from webhook.policy import Policy, PolicySet

__all__ = ["IdentityWatch", "watch_identities"]

log = logging.getLogger("wasp.identities")
Json = dict[str, t.Any]


def _identify(policies: PolicySet) -> t.Callable[[Json], Json]:
    """The informer's transform: what the cache needs of an object (an LWS holds two pod
    templates), its identity computed once per event rather than per review."""

    def transform(obj: Json) -> Json:
        meta = obj.get("metadata") or {}
        keep = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta}
        return {"metadata": keep, "identity": _identity_of(obj, policies)}

    return transform


def _identity_of(obj: Json, policies: PolicySet) -> Identity | None:
    try:
        return identity(obj, policies)
    except Exception:  # noqa: BLE001 - a bug in planning must not stop the watch
        log.exception("cannot plan the PodGroups of %s", (obj.get("metadata") or {}).get("name"))
        uid = (obj.get("metadata") or {}).get("uid")
        return Identity(uid) if isinstance(uid, str) and uid else None  # groups unknown: not checked


class IdentityWatch:
    """List+watch of every membership kind into its :class:`IdentityCache`, and of the grouping
    feed (:mod:`.grouping`) when a policy stamps; started per process."""

    def __init__(self, policies: t.Sequence[Policy], caches: t.Mapping[str, IdentityCache], planner: PolicySet,
                 *, kubeconfig: Path | None = None, watch_timeout: int = 300,
                 grouping: GroupingCache | None = None) -> None:  # fmt: skip
        self.grouping = grouping
        self.policies = tuple(policies)
        self.planner = planner  # the policy set the reconciler plans with
        self.caches = caches
        self.kubeconfig = kubeconfig
        self.watch_timeout = watch_timeout
        self.informers: list[Informer] = []
        self.api: Api | None = None

    def start(self) -> IdentityWatch:
        if self.grouping is not None and not self.policies:
            # The grouping watch alone (no membership policy) must never make the webhook
            # unready: without API access it is off, and stamping is as without it.
            try:
                self.api = api_client(self.kubeconfig)
            except Exception as exc:  # noqa: BLE001 - no config, no token mounted
                log.error("all-or-nothing stamping is off: no Kubernetes API client (%s); grant the webhook "
                          "list/watch on pods, workloads and the child kinds (docs/decisions.md §30)", exc)  # fmt: skip
                return self
            self.informers += watch_grouping(self.api, self.grouping, self.planner, self.watch_timeout)
            return self
        try:
            self.api = api = api_client(self.kubeconfig)
        except Exception as exc:  # noqa: BLE001 - no config, a bad one: no worker serves (unready); the log says why
            log.error("cannot reach the Kubernetes API for the identity caches: %s", exc)
            return self
        for policy in self.policies:
            cache = self.caches[policy.name]
            resource = Resource(policy.group, policy.versions[0], policy.resource, policy.kind)
            cache.fetch = _getter(api, resource, self.planner)
            if not _served(api, resource):
                # No such objects can exist (their CRD is not installed), so none is missing:
                # an empty cache is the truth, and the webhook must not stay unready for it.
                log.warning("%s is not served: no %s pod can be stamped until the webhook restarts "
                            "after its CRD is installed", resource, policy.kind)  # fmt: skip
                cache.mark_synced()
                continue
            informer = Informer(api, resource, _feeder(cache), transform=_identify(self.planner),
                                watch_timeout=self.watch_timeout)  # fmt: skip
            # The cache is synced exactly when the informer has listed once.
            informer.synced = cache.listed
            self.informers.append(informer.start())
        if self.grouping is not None:
            self.informers += watch_grouping(api, self.grouping, self.planner, self.watch_timeout)
        return self

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def synced(self) -> bool:
        grouped = self.grouping is None or self.grouping.synced
        return grouped and all(cache.synced for cache in self.caches.values())

    def wait(self, timeout: float) -> bool:
        """Whether every cache has listed once, waiting up to ``timeout`` seconds in all."""
        events = [c.listed for c in self.caches.values()] + (self.grouping.listed if self.grouping else [])
        return all(event.wait(timeout) for event in events)


def _served(api: Api, resource: Resource) -> bool:
    """Whether discovery lists ``resource``; an unreachable API counts as served (the
    informer then retries, and readiness waits for it)."""
    try:
        served = api.discover(resource.group, resource.version)
    except (ApiException, HTTPError, OSError, ValueError):
        return True
    return served is not None and resource.plural in served


def _feeder(cache: IdentityCache) -> t.Callable[[Json | None, Json | None], None]:
    def handle(old: Json | None, new: Json | None) -> None:
        meta = (new if new is not None else old or {}).get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        found = new.get("identity") if new is not None else None
        if found is None:
            cache.remove(namespace, name)
        else:
            cache.put(namespace, name, found)

    return handle


def _getter(api: Api, resource: Resource, planner: PolicySet) -> t.Callable[[str, str], Identity | None]:
    def fetch(namespace: str, name: str) -> Identity | None:
        try:
            obj = api.call("GET", resource.path(namespace, name), timeout=GET_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise IdentityUnavailable(
                f"reading {resource.kind} {namespace}/{name} failed: HTTP {exc.status}"
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            raise IdentityUnavailable(
                f"reading {resource.kind} {namespace}/{name} failed: {type(exc).__name__}"
            ) from None
        if not isinstance(obj, dict):
            return None
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        return _identity_of(obj, planner)

    return fetch


def watch_identities(
    policies: PolicySet, *, kubeconfig: Path | None = None
) -> tuple[PolicySet, IdentityWatch | None]:
    """``policies`` with an identity cache on each membership policy, and the (unstarted)
    watch that fills them; ``(policies, None)`` when no policy has ``membership``."""
    members = membership_kinds(policies)
    grouping = GroupingCache() if stamps(policies) else None
    if not members and grouping is None:
        return policies, None
    caches = {p.name: IdentityCache(p.kind) for p in members}
    attached = with_identities(policies, caches).with_grouping(grouping)
    return attached, IdentityWatch(members, caches, policies, kubeconfig=kubeconfig, grouping=grouping)
