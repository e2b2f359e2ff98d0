"""Leader election on a ``coordination.k8s.io/v1`` Lease, with the client's ``leaderelection``.

Only the leader writes. :class:`Fence` is what every write asks first: it is open only
while this replica holds the Lease *and* its last successful renewal is younger than the
renew deadline, so a leader cut off from the API server stops writing at once, before
another replica can acquire the Lease (lease duration > renew deadline).
"""

from __future__ import annotations

import logging
import threading
import time
import typing as t

from kubernetes import client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from webhook.reconciler import metrics

__all__ = ["Elector", "Fence"]

log = logging.getLogger("wasp.reconciler")


class Fence:
    def __init__(self, *, always_open: bool = False, renew_deadline: float = 10.0) -> None:
        self.always_open = always_open
        self.renew_deadline = renew_deadline
        self._leading = threading.Event()
        self._renewed = 0.0
        if always_open:
            self._leading.set()

    def renewed(self) -> None:
        self._renewed = time.monotonic()
        if not self._leading.is_set():
            self._leading.set()
            metrics.LEADER.set(1)

    def lost(self) -> None:
        if not self.always_open:
            self._leading.clear()
            metrics.LEADER.set(0)

    def may_write(self) -> bool:
        if self.always_open:
            return True
        return self._leading.is_set() and time.monotonic() - self._renewed < self.renew_deadline

    def wait_open(self, timeout: float) -> bool:
        return self._leading.wait(timeout) and self.may_write()

    @property
    def leading(self) -> bool:
        return self._leading.is_set()


class _Election(leaderelection.LeaderElection):
    """The client's election loop, made stoppable and reporting renewals to the fence."""

    def __init__(self, config: t.Any, fence: Fence, stop: threading.Event) -> None:
        super().__init__(config)
        self.fence, self.stop = fence, stop

    def try_acquire_or_renew(self) -> bool:
        try:
            ok = bool(super().try_acquire_or_renew())
        except Exception:  # noqa: BLE001 - a failed renewal is a "no", never a crash
            log.exception("lease: acquire or renew failed")
            ok = False
        if (
            ok
            and self.observed_record is not None
            and self.observed_record.holder_identity == self.election_config.lock.identity
        ):
            self.fence.renewed()
        return ok

    def acquire(self) -> bool:
        while not self.stop.is_set():
            if self.try_acquire_or_renew():
                return True
            self.stop.wait(self.election_config.retry_period)
        return False

    def renew_loop(self, leading_failed: threading.Event | None = None) -> None:
        retry, deadline = self.election_config.retry_period, self.election_config.renew_deadline
        while not self.stop.is_set():
            until = time.monotonic() + deadline
            while time.monotonic() < until and not self.stop.is_set():
                if self.try_acquire_or_renew():
                    break
                self.stop.wait(retry)
            else:
                return  # the deadline passed without a renewal: leadership is lost
            self.stop.wait(retry)


class Elector:
    """Runs elections until stopped; ``fence`` opens while this replica leads."""

    def __init__(self, api_client: t.Any, fence: Fence, *, namespace: str, name: str, identity: str,
                 lease_duration: int = 15, renew_deadline: int = 10, retry_period: int = 2) -> None:  # fmt: skip
        lock = LeaseLock(name, namespace, identity)
        lock.api_instance = client.CoordinationV1Api(api_client)  # not the default client
        self.lock = lock
        self.fence = fence
        fence.renew_deadline = renew_deadline
        self.stop = threading.Event()
        self.config = electionconfig.Config(
            lock, lease_duration, renew_deadline, retry_period, self._started, self._stopped
        )
        self.thread = threading.Thread(target=self._run, name="leader election", daemon=True)

    def _started(self) -> None:
        log.info("lease: leading")

    def _stopped(self) -> None:
        log.info("lease: lost")
        self.fence.lost()

    def _run(self) -> None:
        while not self.stop.is_set():
            _Election(self.config, self.fence, self.stop).run()
            self.fence.lost()

    def start(self) -> Elector:
        self.thread.start()
        return self

    def close(self) -> None:
        """Stop electing; a leader then releases the Lease (an empty holder), so a standby takes
        over on its next retry instead of waiting out the lease duration."""
        leading = self.fence.leading and not self.fence.always_open
        self.stop.set()
        self.fence.lost()
        if self.thread.is_alive():
            self.thread.join(timeout=self.config.retry_period + 5)
        if leading:
            self._release()

    def _release(self) -> None:
        api, name, namespace = self.lock.api_instance, self.lock.name, self.lock.namespace
        try:
            lease = api.read_namespaced_lease(name, namespace)
            if lease.spec is None or lease.spec.holder_identity != self.lock.identity:
                return  # someone else holds it already: nothing of ours to release
            lease.spec.holder_identity = None
            # The read's resourceVersion rides along: a replica that took the Lease meanwhile
            # makes this a 409, and its hold stands.
            api.replace_namespaced_lease(name, namespace, lease)
            log.info("lease: released")
        except Exception as exc:  # noqa: BLE001 - best effort at exit: the Lease then expires
            log.warning("lease: not released (%s); it expires after the lease duration", exc)
