"""The grouping feed of all-or-nothing stamping: list+watch into the pure grouping cache.

:class:`~webhook.governed.grouping.GroupingCache` decides whether a workload's pods may be
stamped (docs/decisions.md §30); :func:`~webhook.governed.outsiders.grouping_feeds` says what
it must see (Workloads, the pods and child objects stamping makes, the governed kinds' CRDs)
and how each object is reduced. This module starts one informer per feed, at the Workload
version discovery lists, and leaves out, with an error logged, what the webhook cannot list:
stamping then goes on as without that feed, never a reason to be unready.
"""

from __future__ import annotations

import logging
import typing as t

from urllib3.exceptions import HTTPError

from webhook.governed.apis import GROUP, choose
from webhook.governed.grouping import GroupingCache
from webhook.governed.outsiders import grouping_feeds
from webhook.kube.api import Api, ApiException, Resource
from webhook.kube.informer import Informer
from webhook.watches.client import GET_TIMEOUT

if t.TYPE_CHECKING:
    from webhook.policy import PolicySet

__all__ = ["watch_grouping"]

log = logging.getLogger("wasp.identities")  # the one logger of the webhook's watches


def watch_grouping(api: Api, cache: GroupingCache, planner: PolicySet, watch_timeout: int) -> list[Informer]:
    """Workloads, and the pods and child objects stamping makes, into the grouping cache; a
    resource that is not served, or that the webhook may not list, is left out (logged).
    Returns the informers started; the cache is synced when each has listed once."""
    try:  # the Workload version is discovered (docs/coexistence.md), never guessed
        workload_version = choose(api.group_versions(GROUP), write=False).versions.get("Workload")
    except (ApiException, HTTPError, OSError, ValueError):
        workload_version = None  # unreachable now: the informer retries with the emitted version
    informers = []
    for (group, version, plural, kind), transform, handler in grouping_feeds(planner, cache):
        if (group, kind) == (GROUP, "Workload") and workload_version is not None:
            version = workload_version
        resource = Resource(group, version, plural, kind)
        problem = _listable(api, resource)
        if problem is not None:
            log.error("all-or-nothing stamping does not see %s: %s", resource, problem)
            continue
        informer = Informer(api, resource, handler, transform=transform, watch_timeout=watch_timeout)
        cache.listed.append(informer.synced)
        informers.append(informer.start())
    return informers


def _listable(api: Api, resource: Resource) -> str | None:
    """Why the webhook cannot list ``resource`` (not served, forbidden), or ``None``."""
    try:
        api.call("GET", resource.path(), query=[("limit", 1)], timeout=GET_TIMEOUT)
    except ApiException as exc:
        if exc.status in (401, 403, 404):
            return "not served" if exc.status == 404 else f"HTTP {exc.status} (RBAC)"
        return None  # a passing failure: the informer retries, and readiness waits for it
    except (HTTPError, OSError, ValueError):
        return None
    return None
