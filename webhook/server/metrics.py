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

import bisect
import math
import os
import sys
import types
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

from webhook.server.batching import Batches

__all__ = [
    "CERT_EXPIRY",
    "CERT_RELOADS",
    "CONNECTIONS_CLOSED",
    "IN_FLIGHT",
    "INTERNAL_ERRORS",
    "LATENCY",
    "LATENCY_BUCKETS",
    "PENDING",
    "REQUESTS",
    "count_in_flight",
    "exposition",
    "flush",
    "mark_process_dead",
    "observe_review",
]

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
LATENCY_BUCKETS: t.Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
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
    "head_timeout, body_timeout), max_age (answered with Connection: close), evicted (at "
    "--max-connections), handshake_failed, client_not_allowed, head_too_large, buffer_budget (413: the largest unfinished upload when a worker holds too much), bad_request (answered 4xx).",
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


Observation = tuple[str, str, str, str, float]  # endpoint, kind, operation, outcome, seconds


# The code of the functions that handle a review (the admission view): a thread with one of
# them on its stack is a review in flight.
_REVIEW_CODE: set[types.CodeType] = set()


def count_in_flight(function: t.Callable[..., object]) -> None:
    """Count the threads running ``function`` in the in-flight gauge (sampled at each flush)."""
    _REVIEW_CODE.add(function.__code__)


def _in_flight() -> int:
    # Once a flush: a walk up each thread's stack, instead of bookkeeping in every review.
    codes = _REVIEW_CODE
    count = 0
    for frame in sys._current_frames().values():
        current: types.FrameType | None = frame
        while current is not None:
            if current.f_code in codes:
                count += 1
                break
            current = current.f_back
    return count


def observe_review(endpoint: str, kind: str, operation: str, outcome: str, seconds: float) -> None:
    """Count one answered review and record its latency (published by the next flush)."""
    PENDING.add((endpoint, kind, operation, outcome, seconds))


def flush() -> None:
    """Publish what this process gathered since the last flush (also called at worker exit
    and before a single-process scrape)."""
    PENDING.flush()


def _publish(observations: list[Observation]) -> None:
    requests: dict[tuple[str, str, str, str], int] = {}
    latency: dict[str, list[float]] = {}
    for endpoint, kind, operation, outcome, seconds in observations:
        key = (endpoint, kind, operation, outcome)
        requests[key] = requests.get(key, 0) + 1
        latency.setdefault(endpoint, []).append(seconds)
    for key, count in requests.items():
        REQUESTS.labels(*key).inc(count)
    for endpoint, samples in latency.items():
        _observe_all(LATENCY.labels(endpoint), samples)
    IN_FLIGHT.set(_in_flight())


def _observe_all(child: t.Any, samples: list[float]) -> None:
    """``child.observe`` for every sample, with each bucket and the sum written once.

    In multiprocess mode every value written is a lock, a pid check and an mmap write, and
    ``observe`` writes two per sample (the flusher's share of a worker's time was 2%, a
    tenth of wasp's own work per review). This counts the samples per bucket first and
    writes the same values through the same objects ``observe`` uses (prometheus_client
    keeps per-bucket, not cumulative, counts; the first bound not below a sample is its
    bucket, the last is +Inf); tests/http/test_metrics.py compares the two.
    """
    bounds = child._upper_bounds
    counts = [0] * len(bounds)
    for seconds in samples:
        counts[bisect.bisect_left(bounds, seconds)] += 1
    for bucket, count in zip(child._buckets, counts, strict=True):
        if count:
            bucket.inc(count)
    child._sum.inc(math.fsum(samples))


FLUSH_INTERVAL: t.Final = 1.0  # seconds, unless Settings.flush_interval says otherwise
# Review metrics gathered in this process since the last flush. Writing a multiprocess sample
# costs a lock, a pid check and an mmap write per value, five per review (counter, histogram
# bucket and sum, gauge up and down): about a tenth of wasp's own time per review in the
# server. So a review only queues its observation, and a flush aggregates and publishes
# them; a scrape sees the counts at most one interval late. The in-flight gauge costs the
# review path nothing: each flush counts the threads inside a function registered with
# :func:`count_in_flight` (a worker thread handles one review at a time).
PENDING: t.Final[Batches[Observation]] = Batches(
    _publish,
    name="wasp-metrics",
    interval=FLUSH_INTERVAL,
    cap=50_000,  # observations; ~10 s of one worker at full speed
    failure="could not publish review metrics",
)


def exposition() -> tuple[bytes, str]:
    """The text exposition of every worker's samples (or this process's), and its content type."""
    from prometheus_client import generate_latest

    if os.environ.get(MULTIPROC_ENV):
        # Workers flush on their own; this process (the arbiter) serves no reviews.
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    flush()
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def mark_process_dead(pid: int) -> None:
    """Drop a dead worker's live gauges (called from the arbiter's ``child_exit`` hook)."""
    if os.environ.get(MULTIPROC_ENV):
        _multiprocess.mark_process_dead(pid)
