"""A level-based work queue, as client-go's: one entry per key, coalesced, rate-limited retries.

A key added while queued is not queued twice; a key added while a worker processes it is
queued again once the worker is done, so no change is lost and no key is worked on by two
workers at once. Failed keys come back after a per-key exponential backoff.

Periodic resyncs go to a second, low lane, served only when the first is empty: a resync of
ten thousand unchanged objects must not delay the object that was just created.
"""

from __future__ import annotations

import heapq
import threading
import time
import typing as t
from collections import deque

__all__ = ["WorkQueue"]

K = t.TypeVar("K", bound=t.Hashable)


class WorkQueue(t.Generic[K]):
    def __init__(self, *, base_delay: float = 0.05, max_delay: float = 60.0) -> None:
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._low: deque[K] = deque()  # resync keys
        self._lane: dict[K, bool] = {}  # queued key -> in the low lane (stale deque entries are skipped)
        self._dirty: dict[K, float] = {}  # key -> when it was first added (for latency)
        self._processing: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._seq = 0
        self._failures: dict[K, int] = {}
        self._base, self._max = base_delay, max_delay
        self._shutdown = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._lane) + len(self._delayed)

    def add(self, key: K, *, resync: bool = False) -> None:
        with self._cond:
            if self._shutdown:
                return
            if key in self._dirty:
                if not resync and self._lane.get(key):
                    self._lane[key] = False  # a real change: promote it out of the resync lane
                    self._queue.append(key)
                    self._cond.notify()
                return
            self._dirty[key] = time.monotonic()
            if key not in self._processing:
                self._lane[key] = resync
                (self._low if resync else self._queue).append(key)
                self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            self._seq += 1
            heapq.heappush(self._delayed, (time.monotonic() + delay, self._seq, key))
            self._cond.notify()

    def add_rate_limited(self, key: K, *, at_least: float = 0.0) -> float:
        """Retry ``key`` after its backoff (doubling per consecutive failure), and no sooner than
        ``at_least`` seconds (what the server asked for); the delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = max(min(self._max, self._base * float(2**failures)), at_least)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> tuple[K, float] | None:
        """The next key and the seconds it waited, or ``None`` on shutdown or timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key = heapq.heappop(self._delayed)
                    if key not in self._dirty:
                        self._dirty[key] = now
                        if key not in self._processing:
                            self._lane[key] = False
                            self._queue.append(key)
                ready = self._pop()
                if ready is not None:
                    self._processing.add(ready)
                    added = self._dirty.pop(ready, now)
                    return ready, now - added
                if self._shutdown:
                    return None
                waits = [d - now for d in (deadline,) if d is not None]
                if self._delayed:
                    waits.append(self._delayed[0][0] - now)
                if deadline is not None and now >= deadline:
                    return None
                self._cond.wait(timeout=max(0.0, min(waits)) if waits else None)

    def _pop(self) -> K | None:
        """The next queued key, the first lane before the resync lane."""
        for lane, low in ((self._queue, False), (self._low, True)):
            while lane:
                key = lane.popleft()
                if self._lane.get(key) is low:  # else: promoted (or re-queued) since
                    del self._lane[key]
                    return key
        return None

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._lane[key] = False
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
