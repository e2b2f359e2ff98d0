"""Review metrics are gathered per process and published in batches (webhook.server.metrics).

Batching must not change what a scrape shows: after a flush, every bucket, count and sum
equals what prometheus_client's own ``observe``/``inc`` would have written.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from prometheus_client import CollectorRegistry, Histogram

from webhook.server import metrics

BOUNDS = metrics.LATENCY_BUCKETS


def sample(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    "latencies",
    [
        pytest.param([0.0], id="zero"),
        pytest.param([BOUNDS[0], BOUNDS[3], BOUNDS[-1]], id="exactly-on-bounds"),
        pytest.param([b * 1.0001 for b in BOUNDS], id="just-above-each-bound"),
        pytest.param([0.0003, 0.0007, 0.0042, 0.3, 12.0, 3600.0], id="spread-and-beyond-the-last"),
        pytest.param([0.002] * 50, id="many-in-one-bucket"),
    ],
)
def test_batched_latency_equals_prometheus_observe(latencies: list[float]) -> None:
    reference = Histogram("ref", "reference", ["endpoint"], buckets=BOUNDS, registry=CollectorRegistry())
    endpoint = f"test-{len(latencies)}-{latencies[0]}"
    for seconds in latencies:
        metrics.observe_review(endpoint, "Job", "CREATE", "allowed", seconds)
        reference.labels(endpoint).observe(seconds)
    metrics.flush()
    expected = {s.labels.get("le"): s.value for s in next(iter(reference.collect())).samples
                if s.name == "ref_bucket"}  # fmt: skip
    for le, value in expected.items():
        assert sample("wasp_admission_duration_seconds_bucket", endpoint=endpoint, le=le) == value, le
    assert sample("wasp_admission_duration_seconds_count", endpoint=endpoint) == len(latencies)
    assert sample("wasp_admission_duration_seconds_sum", endpoint=endpoint) == pytest.approx(sum(latencies))


def test_counts_wait_for_a_flush_and_are_published_once() -> None:
    labels = {"endpoint": "validate", "kind": "Batched", "operation": "UPDATE", "outcome": "denied"}
    metrics.flush()
    before = sample("wasp_admission_requests_total", **labels)
    for _ in range(3):
        metrics.observe_review(*labels.values(), 0.001)
    metrics.flush()
    metrics.flush()  # a second flush publishes nothing twice
    assert sample("wasp_admission_requests_total", **labels) == before + 3


def review_in_flight(inside: threading.Barrier, leave: threading.Event) -> None:
    inside.wait()
    leave.wait()


metrics.count_in_flight(review_in_flight)


def not_a_review(inside: threading.Barrier, leave: threading.Event) -> None:
    inside.wait()
    leave.wait()


def test_the_in_flight_gauge_counts_the_threads_inside_a_review_at_each_flush() -> None:
    # A worker thread handles one review at a time: the gauge counts the threads whose stack
    # is inside the admission view (here: a function registered the same way).
    inside, leave = threading.Barrier(4), threading.Event()
    threads = [threading.Thread(target=review_in_flight, args=(inside, leave)) for _ in range(2)]
    threads.append(threading.Thread(target=not_a_review, args=(inside, leave)))
    for th in threads:
        th.start()
    inside.wait()
    metrics.flush()
    assert sample("wasp_admission_in_flight_requests") == 2
    leave.set()
    for th in threads:
        th.join()
    metrics.flush()
    assert sample("wasp_admission_in_flight_requests") == 0


def test_observations_beyond_the_cap_are_published_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    labels = {"endpoint": "validate", "kind": "Capped", "operation": "CREATE", "outcome": "allowed"}
    metrics.flush()
    before = sample("wasp_admission_requests_total", **labels)
    monkeypatch.setattr(metrics.PENDING, "cap", 5)
    for _ in range(5):
        metrics.observe_review(*labels.values(), 0.001)
    from prometheus_client import REGISTRY  # read without sample(), which would flush

    assert (REGISTRY.get_sample_value("wasp_admission_requests_total", labels) or 0.0) == before + 5


def test_a_forked_worker_starts_with_nothing_pending() -> None:
    # The arbiter (preload_app) imports metrics before forking: a child must neither inherit
    # pending counts nor believe it already has a flusher thread.
    code = """
import os
from webhook.server import metrics
metrics.observe_review("validate", "Job", "CREATE", "allowed", 0.001)
assert metrics.PENDING.flusher is not None
pid = os.fork()
if pid == 0:
    p = metrics.PENDING
    ok = not p.pending and p.flusher is None
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
"""
    env = {k: v for k, v in os.environ.items() if k != metrics.MULTIPROC_ENV}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 0
