"""The reconciler's Prometheus metrics (the server's conventions: ``wasp_`` prefix, bounded labels).

A registry of its own, so ``/metrics`` of ``wasp reconcile`` carries exactly these series
plus the process collector (resident memory, CPU). Labels: ``kind`` is a governed kind or a
scheduling kind, ``action`` ``create``/``patch``, ``result`` one of a few words, ``verb`` an
API verb, ``code`` an HTTP status or an exception class name.
"""

from __future__ import annotations

import functools
import typing as t

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

from webhook.kube.api import Resource

__all__ = [
    "ACTIONS", "API_ERRORS", "EVENTS", "EVENTS_DROPPED", "LEADER", "QUEUE_DEPTH", "QUEUE_LATENCY", "RECONCILED", "REGISTRY",
    "RELISTS", "SYNC_DURATION", "WATCHES", "action", "exposition", "reconciled",
]  # fmt: skip

REGISTRY: t.Final = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

RECONCILED = Counter(
    "wasp_reconcile_objects", "Governed objects reconciled, by kind.", ["kind"], registry=REGISTRY
)
ACTIONS = Counter(
    "wasp_reconcile_actions",
    "Writes to scheduling objects, by action, object kind and result "
    "(created, exists, patched, conflict, error, not_leader).",
    ["action", "kind", "result"],
    registry=REGISTRY,
)
API_ERRORS = Counter(
    "wasp_reconcile_api_errors", "Failed API calls, by verb and HTTP status (or error type).",
    ["verb", "code"], registry=REGISTRY,
)  # fmt: skip
EVENTS = Counter(
    "wasp_reconcile_events", "Events published on governed objects, by reason.", ["reason"], registry=REGISTRY
)
EVENTS_DROPPED = Counter(
    "wasp_reconcile_events_dropped", "Events dropped because the send buffer was full.", registry=REGISTRY
)
RELISTS = Counter(
    "wasp_reconcile_relists", "Lists made again after 410 Gone, by resource.", ["resource"], registry=REGISTRY
)
QUEUE_DEPTH = Gauge("wasp_reconcile_queue_depth", "Keys waiting in the work queue.", registry=REGISTRY)
QUEUE_LATENCY = Histogram(
    "wasp_reconcile_queue_latency_seconds", "Time a key waited in the queue before a worker took it.",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60), registry=REGISTRY,
)  # fmt: skip
SYNC_DURATION = Histogram(
    "wasp_reconcile_sync_duration_seconds", "Time to reconcile one governed object, writes included.",
    buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5), registry=REGISTRY,
)  # fmt: skip
LEADER = Gauge(
    "wasp_reconcile_leader", "1 while this replica holds the Lease and may write.", registry=REGISTRY
)


# The labelled series the loop counts once or twice per object, looked up once each: the
# client's ``labels()`` validates and locks on every call. Label values are few (kinds, words).
@functools.cache
def action(verb: str, kind: str, result: str) -> Counter:
    return ACTIONS.labels(verb, kind, result)


@functools.cache
def reconciled(kind: str) -> Counter:
    return RECONCILED.labels(kind)


class Watches:
    """The informers' relists and watch failures, in this registry (a ``WatchObserver``)."""

    def relisted(self, resource: Resource) -> None:
        RELISTS.labels(str(resource)).inc()

    def failed(self, reason: str) -> None:
        API_ERRORS.labels("watch", reason).inc()


WATCHES: t.Final = Watches()


def exposition() -> bytes:
    return generate_latest(REGISTRY)
