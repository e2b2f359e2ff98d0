"""The reconcile loop: informers feed the world and the queue; workers plan and write.

For each key a worker takes, :func:`webhook.governed.reconcile.plan` decides from the
caches; the worker executes the writes (only while the Lease fence is open), feeds each
answer back into the caches so the next plan sees it at once, and publishes the plan's
reports as Events (each distinct message once per object, so a resync of an unchanged
world writes nothing). A 409 on create is success: the object exists (a racing replica, or
a watch event not seen yet) and is read back. Failures retry with per-key backoff, never
sooner than the ``Retry-After`` the server asked for.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import typing as t
from dataclasses import dataclass

from webhook.governed.grouping import GroupingCache
from webhook.governed.outsiders import CRDS, slim_crd
from webhook.governed.reconcile import Create, Patch, Plan, Report, plan, reconciled_policies
from webhook.kube.api import (
    BY_KIND,
    PODS,
    Api,
    ApiException,
    Resource,
    retry_after,
)
from webhook.kube.informer import Informer
from webhook.policy import PolicySet
from webhook.reconciler import metrics
from webhook.reconciler.events import EventSink
from webhook.reconciler.leader import Fence
from webhook.reconciler.workqueue import WorkQueue
from webhook.reconciler.world import ObjectKey, World, slim_pod

__all__ = ["NotLeader", "Options", "Reconciler", "governed_resources"]

log = logging.getLogger("wasp.reconciler")
Json = dict[str, t.Any]
MEMO_SIZE: t.Final = 4096
MAX_ROUNDS: t.Final = 3  # Workload, then its groups, then a plan that writes nothing


class NotLeader(Exception):
    """The fence closed: this replica must not write."""


class _Exists(Exception):
    """A create met 409: the object was read back into the caches; plan again at once."""


@dataclass(frozen=True)
class Options:
    workers: int = 4
    resync_period: float = 300.0
    watch_timeout: int = 300
    identity: str = "wasp-reconciler"
    event_qps: float = 50.0
    event_burst: int = 200


def governed_resources(policies: PolicySet) -> list[Resource]:
    """One watched resource per reconciled policy (its first served version)."""
    return [Resource(p.group, p.versions[0], p.resource, p.kind) for p in reconciled_policies(policies)]


def _meta(obj: t.Mapping[str, t.Any]) -> t.Mapping[str, t.Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class Reconciler:
    def __init__(self, api: Api, policies: PolicySet, fence: Fence, options: Options = Options(),
                 *, scheduling: t.Mapping[str, Resource] | None = None) -> None:  # fmt: skip
        self.api, self.policies, self.fence, self.options = api, policies, fence, options
        # The scheduling resources in the versions discovery chose (reconciler/startup.py).
        self.scheduling = {**BY_KIND, **(scheduling or {})}
        # Kinds whose served CRD says their controller manages WAS itself (spec.native): the
        # plans read it through the policies; nothing is planned before the CRDs are listed.
        self.native = GroupingCache()
        self.policies = policies = policies.with_grouping(self.native)
        self.world = World()
        self.queue: WorkQueue[ObjectKey] = WorkQueue()
        self.stopped = threading.Event()
        self._published: dict[tuple[str, str], str] = {}  # (uid, reason) -> last message published
        # Compilations of the objects planned lately; a sync plans one object 2-3 times.
        self._memo: dict[str, t.Any] = {}
        self.events = EventSink(api, options.identity, qps=options.event_qps, burst=options.event_burst)
        self.informers = [
            Informer(
                api, r, self._on_governed(r), watch_timeout=options.watch_timeout, observer=metrics.WATCHES
            )
            for r in governed_resources(policies)
        ]
        watched = [self.scheduling["Workload"], self.scheduling["PodGroup"]]
        if (
            any(p.root.composite for p in reconciled_policies(policies))
            and "CompositePodGroup" in policies.gates
        ):
            watched.append(self.scheduling["CompositePodGroup"])
        self.informers += [
            Informer(
                api, r, self._on_scheduling(r), watch_timeout=options.watch_timeout, observer=metrics.WATCHES
            )
            for r in watched
        ]
        if any(p.native is not None and p.native.crd_fields for p in reconciled_policies(policies)):
            self.informers.append(
                Informer(api, Resource(*CRDS), self._on_crd, transform=slim_crd(policies),
                         watch_timeout=options.watch_timeout, observer=metrics.WATCHES)
            )  # fmt: skip
        self.informers.append(
            Informer(api, PODS, self._enqueue_all(self.world.pod_changed), transform=slim_pod,
                     watch_timeout=options.watch_timeout, observer=metrics.WATCHES)
        )  # fmt: skip
        self.threads: list[threading.Thread] = []

    # -- wiring -----------------------------------------------------------------------------------

    def _enqueue(self, keys: t.Collection[ObjectKey]) -> None:
        if not keys:
            return  # most watch events (the echoes of our own writes) change nothing to queue
        for key in keys:
            self.queue.add(key)
        metrics.QUEUE_DEPTH.set(len(self.queue))

    def _enqueue_all(
        self, change: t.Callable[[Json | None, Json | None], set[ObjectKey]]
    ) -> t.Callable[[Json | None, Json | None], None]:
        return lambda old, new: self._enqueue(change(old, new))

    def _on_governed(self, resource: Resource) -> t.Callable[[Json | None, Json | None], None]:
        def changed(old: Json | None, new: Json | None) -> None:
            if new is None and old is not None:  # gone: forget what was said and compiled for it
                uid = _meta(old).get("uid", "")
                self._memo.pop(uid, None)
                for said in [k for k in self._published if k[0] == uid]:
                    self._published.pop(said, None)
            self._enqueue(self.world.governed_changed(resource, old, new))

        return changed

    def _on_crd(self, old: Json | None, new: Json | None) -> None:
        """A governed kind switched between adapter and native mode: plan its objects again."""
        before = {(g, k): why for g, k, why in (old or {}).get("natives", ())}
        after = {(g, k): why for g, k, why in (new or {}).get("natives", ())}
        self.native.crd_changed(old, new)
        if before != after:
            for kind in sorted({k for _, k in before.keys() ^ after.keys()} | {k for _, k in after}):
                log.info(
                    "%s is managed %s", kind, "natively" if any(k == kind for _, k in after) else "by wasp"
                )
            self._enqueue(self.world.keys())

    def _on_scheduling(self, resource: Resource) -> t.Callable[[Json | None, Json | None], None]:
        kind = t.cast(t.Any, resource.kind)
        return self._enqueue_all(lambda old, new: self.world.scheduling_changed(kind, old, new))

    def start(self) -> Reconciler:
        self.events.start()
        for informer in self.informers:
            informer.start()
        for i in range(self.options.workers):
            self.threads.append(threading.Thread(target=self._worker, name=f"worker {i}", daemon=True))
        self.threads.append(threading.Thread(target=self._resync, name="resync", daemon=True))
        for thread in self.threads:
            thread.start()
        return self

    @property
    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers)

    def healthy(self) -> bool:
        return not self.stopped.is_set() and all(
            t.is_alive() for t in [*self.threads, *(i.thread for i in self.informers)]
        )

    def stop(self) -> None:
        self.stopped.set()
        self.queue.shutdown()
        self.events.stop()
        for informer in self.informers:
            informer.stop()

    def _resync(self) -> None:
        while not self.synced and not self.stopped.wait(0.1):
            pass
        # The caches are long-lived, acyclic JSON: keep the cyclic collector from rescanning
        # them (a full collection over 10,000 cached objects stalled every worker for ~1 s).
        # Replaced versions are still freed by reference counting.
        gc.freeze()
        while not self.stopped.wait(self.options.resync_period):
            gc.freeze()
            for key in self.world.keys():
                self.queue.add(key, resync=True)
            metrics.QUEUE_DEPTH.set(len(self.queue))

    # -- workers ----------------------------------------------------------------------------------

    def _worker(self) -> None:
        while not self.stopped.is_set():
            # Decisions read the caches: nothing is planned before every informer has listed,
            # and nothing while another replica leads.
            if not self.synced or not self.fence.wait_open(0.2):
                self.stopped.wait(0.05)
                continue
            item = self.queue.get(timeout=0.5)
            if item is None:
                continue
            key, waited = item
            metrics.QUEUE_LATENCY.observe(waited)
            started = time.monotonic()
            try:
                result = self.sync(key)
            except NotLeader:
                self.queue.add(key)  # the next leader (maybe us again) takes it
            except _Exists:
                self.queue.forget(key)
                self.queue.add(key)
            except Exception as exc:  # noqa: BLE001 - one object's failure must not stop the loop
                # A throttled (429) or unavailable server names its wait: never ask sooner.
                delay = self.queue.add_rate_limited(key, at_least=retry_after(exc))
                log.warning("reconcile %s/%s: %s; retrying in %.2fs", key[1], key[2], exc, delay)
            else:
                if result.retry:
                    self.queue.add_rate_limited(key)
                else:
                    self.queue.forget(key)
            finally:
                self.queue.done(key)
                metrics.SYNC_DURATION.observe(time.monotonic() - started)
                metrics.QUEUE_DEPTH.set(len(self.queue))

    def sync(self, key: ObjectKey) -> Plan:
        """Plan and execute until a plan has nothing more to do; the last plan."""
        obj = self.world.get(key)
        if obj is None:
            return Plan()  # deleted: the garbage collector removes what it owned
        metrics.reconciled(key[0].kind).inc()
        done: list[Create | Patch] = []
        try:
            for _ in range(MAX_ROUNDS):
                if len(self._memo) > MEMO_SIZE:
                    self._memo.clear()  # bounded; a miss only costs one compilation
                decided = plan(obj, self.policies, self.world.observe(obj), memo=self._memo)
                for report in decided.reports:
                    self._publish(obj, report)
                for write in decided.writes:
                    self._execute(obj, write)
                    done.append(write)
                if not (decided.again and decided.writes):
                    break
        finally:
            self._summarise(obj, done)
        return decided

    def _summarise(self, obj: Json, done: list[Create | Patch]) -> None:
        """One Event per sync for what it created, one for what it resized: a new object's
        Workload and groups are one ``WorkloadCreated`` (half the Events of one per object)."""
        created = [w for w in done if isinstance(w, Create)]
        if created:
            reason = "WorkloadCreated" if created[0].kind == "Workload" else "PodGroupCreated"
            self._publish(
                obj, Report("Normal", reason, "Created " + ", ".join(f"{w.kind} {w.name}" for w in created))
            )
        patched = [w for w in done if isinstance(w, Patch)]
        if patched:
            message = "; ".join(f"{w.kind} {w.name}: {w.summary}" for w in patched)
            self._publish(obj, Report("Normal", "GangResized", message))

    def _execute(self, obj: Json, write: Create | Patch) -> None:
        action = "create" if isinstance(write, Create) else "patch"
        if not self.fence.may_write():
            metrics.action(action, write.kind, "not_leader").inc()
            raise NotLeader()
        resource = self.scheduling[write.kind]
        namespace = _meta(obj).get("namespace", "")
        writing = (write.kind, namespace, write.name)
        self.world.writing.add(writing)
        try:
            if isinstance(write, Create):
                answer = self.api.create(resource, namespace, write.body)
            else:
                answer = self.api.json_patch(resource, namespace, write.name, write.ops)
            self.world.put(write.kind, answer)
        except ApiException as exc:
            if isinstance(write, Create) and exc.status == 409:
                # It exists: ours (a racing replica, an earlier run) or someone else's; read it
                # back so the next plan decides which.
                self.world.put(write.kind, self.api.get(resource, namespace, write.name))
                metrics.action(action, write.kind, "exists").inc()
                raise _Exists() from None
            metrics.API_ERRORS.labels(action, str(exc.status)).inc()
            metrics.action(action, write.kind, "error").inc()
            if isinstance(write, Create):
                message = f"{write.kind} {write.name}: {exc.status} {exc.reason}"
                self._publish(obj, Report("Warning", f"Failed{write.kind}Create", message))
            raise
        finally:
            self.world.writing.discard(writing)
        metrics.action(action, write.kind, "created" if isinstance(write, Create) else "patched").inc()

    def _publish(self, obj: Json, report: Report) -> None:
        uid = _meta(obj).get("uid", "")
        if self._published.get((uid, report.reason)) == report.message or not self.fence.may_write():
            return  # said already (a resync must write nothing); or not ours to say
        if self.events.publish(obj, report):
            self._published[(uid, report.reason)] = report.message
