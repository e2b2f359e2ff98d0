"""Prometheus metrics, correct under several gunicorn workers (docs/design.md §9.9 O1).

Each worker writes its samples to files in ``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's
multiprocess mode); the probe server in the arbiter merges them on every scrape. The
variable must be set *before* this module is imported, because prometheus_client picks its
value class at import: ``wasp serve`` creates a private directory, sets it, and only then
imports the HTTP stack. Without the variable (tests, a single process) the default
in-process registry is used.

Labels are bounded: ``kind`` is a governed kind or ``other``, ``operation`` one of four
words or ``""``, ``outcome`` one of :data:`webhook.admission.handler.Outcome`.
"""

from __future__ import annotations

import os
import typing as t

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    multiprocess,
)

__all__ = ["CERT_EXPIRY", "CERT_RELOADS", "CONNECTIONS_CLOSED", "IN_FLIGHT", "INTERNAL_ERRORS", "LATENCY",
           "LATENCY_BUCKETS", "REQUESTS", "exposition", "mark_process_dead", "observe_review"]  # fmt: skip

MULTIPROC_ENV: t.Final = "PROMETHEUS_MULTIPROC_DIR"
# prometheus_client's multiprocess helpers are unannotated; call them through Any.
_multiprocess: t.Any = multiprocess

REQUESTS = Counter(
    "wasp_admission_requests",
    "AdmissionReviews answered, by endpoint, object kind, operation and outcome.",
    ["endpoint", "kind", "operation", "outcome"],
)
# Buckets around the budget that matters: well under 10 ms normally, the apiserver's
# timeoutSeconds (1-10 s) as the far end, so alerting on p99 > 1 s / 5 s is possible.
LATENCY_BUCKETS: t.Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                           1.0, 2.5, 5.0, 10.0)  # fmt: skip
LATENCY = Histogram(
    "wasp_admission_duration_seconds",
    "Time from reading the request to having the answer serialised, by endpoint.",
    ["endpoint"],
    buckets=LATENCY_BUCKETS,
)
IN_FLIGHT = Gauge(
    "wasp_admission_in_flight_requests",
    "AdmissionReviews being handled right now, summed over live workers.",
    multiprocess_mode="livesum",
)
INTERNAL_ERRORS = Counter(
    "wasp_internal_errors",
    "Reviews answered with InternalError because the core raised (each is logged with a stack trace).",
    ["endpoint"],
)
CONNECTIONS_CLOSED = Counter(
    "wasp_connections_closed",
    "Connections the server closed itself, by reason: a deadline (handshake_timeout, idle_timeout, "
    "head_timeout, body_timeout, write_timeout), max_age (answered with Connection: close), "
    "handshake_failed, client_not_allowed, buffer_budget (413: the worker holds too many bodies), "
    "bad_request (answered 4xx).",
    ["reason"],
)
CERT_RELOADS = Counter(
    "wasp_certificate_reloads",
    "Serving certificate changes seen on disk: loaded, or rejected (the old pair keeps serving).",
    ["result"],
)
CERT_EXPIRY = Gauge(
    "wasp_certificate_expiry_timestamp_seconds",
    "notAfter of the serving certificate in use; the earliest over live workers.",
    multiprocess_mode="livemin",
)


def observe_review(endpoint: str, kind: str, operation: str, outcome: str, seconds: float) -> None:
    """Count one answered review and record its latency."""
    REQUESTS.labels(endpoint, kind, operation, outcome).inc()
    LATENCY.labels(endpoint).observe(seconds)


def exposition() -> tuple[bytes, str]:
    """The text exposition of every worker's samples (or this process's), and its content type."""
    from prometheus_client import generate_latest

    if os.environ.get(MULTIPROC_ENV):
        # The workers' samples, from their files; this process (the arbiter) serves no reviews.
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def mark_process_dead(pid: int) -> None:
    """Drop a dead worker's live gauges (called from the arbiter's ``child_exit`` hook)."""
    if os.environ.get(MULTIPROC_ENV):
        _multiprocess.mark_process_dead(pid)
