"""``Batches``: what a review leaves behind (metrics, its log line), handed on in batches.

A review only appends one item to a deque: ``append`` and ``popleft`` are atomic, so the
review path takes no lock. A daemon thread per process hands everything pending to the sink
every ``interval`` seconds; so does a full batch (``cap`` items, which bounds memory when
the thread falls behind) and an explicit :meth:`Batches.flush` (worker exit, a scrape).
``interval`` 0 hands each item on at once. One flush runs at a time, so batches stay in
order. A forked child starts empty and without a thread: the parent's thread and locks do
not exist in it. Used by :mod:`webhook.server.metrics` and :class:`webhook.server.logs.ReviewLog`.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import typing as t

__all__ = ["Batches"]

T = t.TypeVar("T")


class Batches(t.Generic[T]):
    def __init__(
        self, sink: t.Callable[[list[T]], None], *, name: str, interval: float, cap: int, failure: str
    ) -> None:
        """``sink`` gets each batch (possibly empty); ``name`` names the thread; ``failure``
        is logged, with the exception, when the sink raises."""
        self.sink = sink
        self.name = name
        self.interval = interval
        self.cap = cap
        self.failure = failure
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.pending: collections.deque[T] = collections.deque()
        self._flush_lock = threading.Lock()
        self.flusher: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def add(self, item: T) -> None:
        """Queue one item (handed on at once with interval 0 or a full batch)."""
        pending = self.pending
        pending.append(item)
        if self.interval <= 0 or len(pending) >= self.cap:
            self.flush_safely()
        elif self.flusher is None:
            self._start()

    def flush(self) -> None:
        """Hand everything pending to the sink now (raises what the sink raises)."""
        with self._flush_lock:
            taken: list[T] = []
            pending = self.pending
            while True:
                try:
                    taken.append(pending.popleft())
                except IndexError:
                    break
            self.sink(taken)

    def flush_safely(self) -> None:
        # A failing sink (a broken log pipe, a metrics file) must neither fail the review
        # being answered nor stop the thread.
        try:
            self.flush()
        except Exception:  # noqa: BLE001
            logging.getLogger("wasp").exception(self.failure)

    def _start(self) -> None:
        with self._start_lock:
            if self.flusher is not None:
                return
            self.flusher = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.flusher.start()

    def _run(self) -> None:
        me = threading.current_thread()
        while self.flusher is me:  # until the batches are reset
            # Interval 0 (set after the thread started) means additions flush themselves.
            time.sleep(self.interval if self.interval > 0 else 1.0)
            self.flush_safely()
