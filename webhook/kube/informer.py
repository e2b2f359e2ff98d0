"""List + watch one resource into a cache, as client-go's reflector does.

The first list gives the cache and a resourceVersion; a watch from that version (with
bookmarks, which move it forward while nothing changes) keeps the cache current. A stream
the server ends (its ``timeoutSeconds``, a dropped connection) is resumed from the last
version seen; ``410 Gone`` (the version was compacted away) means list again, and the
relist's differences are delivered as changes, so nothing that happened in the gap is
missed. Other failures reconnect after an exponential backoff.
"""

from __future__ import annotations

import logging
import random
import threading
import typing as t

import orjson
from urllib3.exceptions import HTTPError

from webhook.kube.api import Api, ApiException, Resource

__all__ = ["Informer", "WatchObserver"]

log = logging.getLogger("wasp.kube")
Json = dict[str, t.Any]
Key = tuple[str, str]  # (namespace, name)
# Called with (old, new): old None on add, new None on delete.
Handler = t.Callable[[Json | None, Json | None], None]


class WatchObserver(t.Protocol):
    """Where an informer reports what its owner counts (the reconciler's metrics)."""

    def relisted(self, resource: Resource) -> None: ...

    def failed(self, reason: str) -> None: ...


class _Unobserved:
    def relisted(self, resource: Resource) -> None:
        pass

    def failed(self, reason: str) -> None:
        pass


def lines(response: t.Any) -> t.Iterator[bytes]:
    """The newline-delimited lines of a watch stream, as bytes (orjson reads them as they
    are: no decoding to text first); a chunk may hold several lines or part of one."""
    partial = b""
    for chunk in response.stream(amt=None, decode_content=False):
        if b"\n" not in chunk:
            partial += chunk
            continue
        *complete, partial = (partial + chunk).split(b"\n") if partial else chunk.split(b"\n")
        yield from complete


def key_of(obj: t.Mapping[str, t.Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class Informer:
    def __init__(self, api: Api, resource: Resource, handler: Handler, *,
                 transform: t.Callable[[Json], Json] | None = None, watch_timeout: int = 300,
                 max_backoff: float = 30.0, observer: WatchObserver | None = None) -> None:  # fmt: skip
        self.api, self.resource, self.handler = api, resource, handler
        self.observer: WatchObserver = observer or _Unobserved()
        self.transform = transform  # keeps only what is needed of large objects (Pods)
        self.watch_timeout, self.max_backoff = watch_timeout, max_backoff
        self.cache: dict[Key, Json] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self.stopped = threading.Event()
        self._response: t.Any = None
        self.failures = 0  # consecutive failures since the last watch that connected
        self.thread = threading.Thread(target=self.run, name=f"informer {resource}", daemon=True)

    def start(self) -> Informer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()  # unblocks a read in progress (urllib3 ≥ 2.3)
            except Exception:  # noqa: BLE001 - best effort: the thread is a daemon
                pass

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                if not self.resource_version:
                    self._relist()
                self._watch()
            except ApiException as exc:
                if exc.status == 410:
                    # Compacted away: only a fresh list shows the current state.
                    self.observer.relisted(self.resource)
                    self.resource_version = ""
                    continue
                self.observer.failed(str(exc.status))
                self.failures += 1
            except (HTTPError, OSError, ValueError) as exc:  # ValueError: orjson.JSONDecodeError too
                if self.stopped.is_set():
                    break
                self.observer.failed(type(exc).__name__)
                self.failures += 1
            if self.failures:
                # Full jitter, so replicas and resources do not reconnect in lockstep.
                delay = random.uniform(0, min(self.max_backoff, 0.1 * float(2**self.failures)))
                log.info("watch %s: reconnecting in %.2fs", self.resource, delay)
                self.stopped.wait(delay)

    def _put(self, obj: Json) -> None:
        obj = self.transform(obj) if self.transform is not None else obj
        key = key_of(obj)
        old = self.cache.get(key)
        self.cache[key] = obj
        self.handler(old, obj)

    def _relist(self) -> None:
        listed = self.api.list(self.resource)
        seen: set[Key] = set()
        for item in listed.get("items") or []:
            item.setdefault("apiVersion", self.resource.api_version)
            item.setdefault("kind", self.resource.kind)
            seen.add(key_of(item))
            old = self.cache.get(key_of(item))
            if old is None or old.get("metadata", {}).get("resourceVersion") != item["metadata"].get(
                "resourceVersion"
            ):
                self._put(item)
        for key in [k for k in self.cache if k not in seen]:
            self.handler(self.cache.pop(key), None)  # deleted while we were not watching
        self.resource_version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        self.synced.set()

    def _watch(self) -> None:
        self._response = response = self.api.watch(self.resource, self.resource_version, self.watch_timeout)
        self.failures = 0
        try:
            for line in lines(response):
                if self.stopped.is_set():
                    return
                if not line:
                    continue
                event = orjson.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    raise ApiException(status=obj.get("code", 500), reason=obj.get("message", ""))
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if kind in ("ADDED", "MODIFIED"):
                    self._put(obj)
                elif kind == "DELETED":
                    old = self.cache.pop(key_of(obj), None)
                    self.handler(old, None)
                if version:
                    self.resource_version = str(version)  # BOOKMARK moves it too
        finally:
            self._response = None
            response.release_conn()
