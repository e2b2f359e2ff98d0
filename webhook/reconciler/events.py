"""Events on governed objects, sent off the write path, as client-go's broadcaster does.

Events are best effort: a worker hands one over and goes on; a sender thread posts them
under a rate limit (token bucket), so a cold start over thousands of objects spends the API
server on the objects, not on their Events. When the buffer is full the Event is dropped and
counted (``wasp_reconcile_events_dropped_total``), exactly the trade client-go makes.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import typing as t
from datetime import UTC, datetime

from webhook.governed.reconcile import Report
from webhook.kube.api import EVENTS, Api, ApiException
from webhook.reconciler import metrics

__all__ = ["EventSink"]

log = logging.getLogger("wasp.reconciler")
Json = dict[str, t.Any]


class EventSink:
    def __init__(
        self, api: Api, identity: str, *, qps: float = 50.0, burst: int = 200, buffer: int = 1000
    ) -> None:
        self.api, self.identity = api, identity
        self.qps, self.burst = qps, burst
        self._tokens, self._last = float(burst), time.monotonic()
        self._queue: queue.Queue[Json | None] = queue.Queue(maxsize=buffer)
        self.thread = threading.Thread(target=self._run, name="events", daemon=True)

    def start(self) -> EventSink:
        self.thread.start()
        return self

    def stop(self) -> None:
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass

    def publish(self, obj: t.Mapping[str, t.Any], report: Report) -> bool:
        """Queue an Event about ``obj``; ``False`` when the buffer is full and it was dropped."""
        if self._queue.full():
            # Decided before the Event is built: in a cold start over thousands of objects
            # most Events are dropped, and building each one cost more than deciding.
            metrics.EVENTS_DROPPED.inc()
            return False
        meta = obj.get("metadata") or {}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "metadata": {"generateName": f"{meta.get('name', '')}.", "namespace": meta.get("namespace", "")},
            "involvedObject": {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name"),
                               "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": report.reason, "message": report.message[:1024], "type": report.type, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "wasp-reconciler"},
            "reportingComponent": "wasp-reconciler", "reportingInstance": self.identity,
        }  # fmt: skip
        try:
            self._queue.put_nowait(event)
            return True
        except queue.Full:
            metrics.EVENTS_DROPPED.inc()
            return False

    def _take_token(self) -> None:
        while True:
            now = time.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            time.sleep((1 - self._tokens) / self.qps)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            self._take_token()
            try:
                self.api.create(EVENTS, event["metadata"]["namespace"], event)
                metrics.EVENTS.labels(event["reason"]).inc()
            except (ApiException, OSError) as exc:
                # A lost Event must not fail (and so repeat) the writes it reports.
                metrics.API_ERRORS.labels("event", str(getattr(exc, "status", type(exc).__name__))).inc()
                log.info("event %s on %s: %s", event["reason"], event["involvedObject"]["name"], exc)
            except Exception:  # noqa: BLE001 - the sender must outlive any one Event
                log.exception("event sender")
