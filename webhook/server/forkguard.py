"""``ForkGuard``: code that a ``fork()`` of this process must not cut through.

OpenSSL is not fork-safe: a process forked while another of its threads is inside OpenSSL
inherits that thread's locks held, and nothing in the child will ever release them. The
gunicorn arbiter forks workers (at start, and to replace one that died) while its probe
thread handshakes with the serving port (:func:`webhook.server.probes.serving_problems`); a worker
forked mid-handshake then hung in every TLS handshake it accepted (one start in ten with
``/readyz`` probed during boot; 3-5 forks in 1,000 in a stress loop).

Threads run such code in :meth:`ForkGuard.section`. A fork waits until no section is running
and holds new ones back until it is done, so sections that keep coming (a busy probe) cannot
starve it. The child starts with no section running. A thread must not fork inside a section
(it would wait for itself).
"""

from __future__ import annotations

import contextlib
import os
import threading
import typing as t

__all__ = ["ForkGuard"]


class ForkGuard:
    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(
            before=self._before_fork, after_in_parent=self._after_fork, after_in_child=self._reset
        )

    def _reset(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._forking = False

    @contextlib.contextmanager
    def section(self) -> t.Iterator[None]:
        """Run the body with no fork of this process happening meanwhile."""
        with self._changed:
            while self._forking:
                self._changed.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    def _before_fork(self) -> None:
        # The condition's lock stays held through the fork, so no section starts meanwhile.
        self._changed.acquire()
        self._forking = True
        while self._running:
            self._changed.wait()

    def _after_fork(self) -> None:
        self._forking = False
        self._changed.notify_all()
        self._changed.release()
