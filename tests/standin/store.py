"""The stand-in API server's state: objects, resourceVersions, the watch log, faults.

A STAND-IN, not kube-apiserver (no kube-apiserver binary can be obtained on these
machines): it keeps just enough of the apiserver's storage semantics for the resources
wasp's reconciler uses: one global, increasing resourceVersion; create-if-absent with
409 AlreadyExists; replace with optimistic concurrency (409 Conflict); JSON merge and
JSON patches; a bounded event log per resource, so a watch resumed from a compacted
resourceVersion gets 410 Gone, as from etcd compaction.
"""

from __future__ import annotations

import copy
import threading
import typing as t
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

import jsonpatch

from tests.standin import gates, listing

Json = dict[str, t.Any]


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def parse(cls, spec: str) -> Resource:
        """``group/version/plural/Kind[/cluster]`` (``/v1/pods/Pod`` for the core group)."""
        group, version, plural, kind, *scope = spec.split("/")
        return cls(group, version, plural, kind, namespaced=scope != ["cluster"])


BUILTIN: t.Final = (
    Resource("", "v1", "pods", "Pod"),
    Resource("", "v1", "events", "Event"),
    Resource("", "v1", "namespaces", "Namespace", namespaced=False),
    Resource("", "v1", "nodes", "Node", namespaced=False),
    Resource("coordination.k8s.io", "v1", "leases", "Lease"),
    Resource("scheduling.k8s.io", "v1beta1", "workloads", "Workload"),
    Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup"),
    Resource("scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup"),
    # What `wasp audit` and `wasp doctor` read besides the above.
    Resource("batch", "v1", "jobs", "Job"),
    Resource("", "v1", "services", "Service"),
    Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
             "ValidatingWebhookConfiguration", namespaced=False),
    Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
             "MutatingWebhookConfiguration", namespaced=False),
)  # fmt: skip


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, metadata: Json | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.metadata = code, reason, message, metadata or {}

    def status(self) -> Json:
        return {"kind": "Status", "apiVersion": "v1", "metadata": self.metadata, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}  # fmt: skip


@dataclass
class Faults:
    """Injected failures: the next ``count`` requests matching ``verb`` (and ``plural``) get
    ``code`` (a 429 with the rule's ``retryAfter`` seconds, 1 by default); ``slow`` seconds are
    added to every write."""

    rules: list[Json] = field(default_factory=list)

    def take(self, verb: str, plural: str) -> Json | None:
        """The first rule that matches (its count taken), or ``None``."""
        for rule in self.rules:
            if (
                rule["count"] > 0
                and rule.get("verb") in (None, verb)
                and rule.get("plural") in (None, plural)
            ):
                rule["count"] -= 1
                return rule
        return None


class Store:
    def __init__(
        self,
        resources: t.Iterable[Resource],
        log_size: int = 200_000,
        gates_off: frozenset[str] = frozenset(),
    ) -> None:
        self.gates_off = gates_off  # feature gates turned off: their fields are dropped on create
        self.compactions = 0  # continue tokens issued before the last compaction are expired
        self.resources = {r.api_version + "/" + r.plural: r for r in resources}
        self.objects: dict[str, dict[tuple[str, str], Json]] = {key: {} for key in self.resources}
        self.logs: dict[str, deque[tuple[int, str, Json]]] = {
            k: deque(maxlen=log_size) for k in self.resources
        }
        self.horizon: dict[str, int] = dict.fromkeys(self.resources, 0)  # oldest rv a watch may resume from
        self.rv = 0
        # One lock over all state, as one etcd revision orders every resource; but one
        # condition per resource, as kube-apiserver's watch cache per resource: a write wakes
        # only the watch streams of its own resource.
        self.lock = threading.RLock()
        self.changed = {key: threading.Condition(self.lock) for key in self.resources}
        self.faults = Faults()
        self.requests: dict[str, int] = {}
        self.generation = 0  # bumped by drop_watches: open streams end

    def count(self, verb: str, plural: str) -> None:
        key = f"{verb} {plural}"
        self.requests[key] = self.requests.get(key, 0) + 1

    def _record(self, key: str, kind: str, obj: Json) -> None:
        log = self.logs[key]
        if len(log) == log.maxlen:
            self.horizon[key] = log[0][0]
        log.append((self.rv, kind, obj))
        self.changed[key].notify_all()

    def _stamp(self, obj: Json) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def create(self, key: str, namespace: str, body: Json, *, dry_run: bool = False) -> Json:
        """Store ``body``; ``dry_run`` (``dryRun=All``): the same checks and answer, nothing stored."""
        resource = self.resources[key]
        obj = copy.deepcopy(body)
        gates.drop_disabled(resource.kind, obj, self.gates_off)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(
                    422, "Invalid", "metadata.name: Required value: name or generateName is required"
                )
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if resource.namespaced:
            meta["namespace"] = namespace
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        with self.lock:
            ident = (namespace, meta["name"])
            if ident in self.objects[key]:
                raise ApiError(409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" already exists')
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["generation"] = 1
            if dry_run:
                return obj
            self._stamp(obj)
            self.objects[key][ident] = obj
            self._record(key, "ADDED", obj)
            return obj

    def get(self, key: str, namespace: str, name: str) -> Json:
        obj = self.objects[key].get((namespace, name))
        if obj is None:
            raise ApiError(404, "NotFound", f'{self.resources[key].plural} "{name}" not found')
        return obj

    def replace(self, key: str, namespace: str, name: str, body: Json) -> Json:
        with self.lock:
            current = self.get(key, namespace, name)
            sent = (body.get("metadata") or {}).get("resourceVersion")
            if sent and sent != current["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {self.resources[key].plural} "{name}": the object has been modified; please apply your changes to the latest version and try again',
                )
            return self._update(key, current, copy.deepcopy(body))

    def patch(self, key: str, namespace: str, name: str, content_type: str, patch: t.Any) -> Json:
        with self.lock:
            current = self.get(key, namespace, name)
            try:
                if content_type.startswith("application/json-patch+json"):
                    new = jsonpatch.apply_patch(current, patch)
                else:  # merge and strategic-merge patches: RFC 7386 is enough here
                    new = _merge(copy.deepcopy(current), patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise ApiError(422, "Invalid", f"the patch cannot be applied: {exc}") from None
            return self._update(key, current, new)

    def _update(self, key: str, current: Json, new: Json) -> Json:
        meta = new.setdefault("metadata", {})
        for fixed in ("name", "namespace", "uid", "creationTimestamp"):
            if fixed in current["metadata"]:
                meta[fixed] = current["metadata"][fixed]
        if new.get("spec") != current.get("spec"):
            meta["generation"] = current["metadata"].get("generation", 1) + 1
        new["apiVersion"], new["kind"] = current["apiVersion"], current["kind"]
        self._stamp(new)
        self.objects[key][(meta.get("namespace", ""), meta["name"])] = new
        self._record(key, "MODIFIED", new)
        return new

    def delete(self, key: str, namespace: str, name: str) -> Json:
        with self.lock:
            obj = self.objects[key].pop((namespace, name), None)
            if obj is None:
                raise ApiError(404, "NotFound", f'{self.resources[key].plural} "{name}" not found')
            obj = copy.deepcopy(obj)
            self._stamp(obj)
            self._record(key, "DELETED", obj)
            return obj

    def items(self, key: str, namespace: str | None) -> tuple[list[Json], int]:
        with self.lock:
            found = [o for (ns, _), o in self.objects[key].items() if namespace is None or ns == namespace]
            return found, self.rv

    def page(
        self,
        key: str,
        namespace: str | None,
        *,
        limit: int,
        token: str,
        labels: str,
        field_selector: str = "",
    ) -> tuple[list[Json], int, str, int]:
        """(items, resourceVersion, continue token or "", items left) of one page of a list."""
        try:
            match = listing.selector(labels)
            picked = listing.fields(field_selector, self.resources[key].kind)
            rv, epoch, start = listing.decode(token) if token else (self.rv, self.compactions, ("", ""))
        except ValueError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        with self.lock:
            if token and epoch < self.compactions:
                # As kube-apiserver does: the Status carries a token to go on with, at the
                # current resourceVersion (the list is then no longer one consistent snapshot).
                raise ApiError(
                    410, "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter, or use the continue token in this response to "
                    "retrieve the remainder of the results. Continuing with the provided token results in an "
                    "inconsistent list - objects that were created, modified, or deleted between the time the first "
                    "chunk was returned and now may show up in the list.",
                    {"continue": listing.encode(self.rv, self.compactions, start)},
                )  # fmt: skip
            objects = self.objects[key]
            keys = sorted(
                k for k in objects if (namespace is None or k[0] == namespace) and (not token or k > start)
            )
            found: list[Json] = []
            for i, k in enumerate(keys):
                if limit and len(found) == limit:
                    return found, rv, listing.encode(rv, epoch, keys[i - 1]), len(keys) - i
                if match(listing.labels_of(objects[k])) and picked(objects[k]):
                    found.append(objects[k])
            return found, rv, "", 0

    def compact(self) -> None:
        """Forget the watch history, as etcd compaction does: resumes from older rvs get 410."""
        with self.lock:
            self.compactions += 1
            for key in self.logs:
                self.logs[key].clear()
                self.horizon[key] = self.rv
            self._wake_all()

    def drop_watches(self) -> None:
        with self.lock:
            self.generation += 1
            self._wake_all()

    def _wake_all(self) -> None:
        for cond in self.changed.values():
            cond.notify_all()


def _merge(target: t.Any, patch: t.Any) -> t.Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = _merge(target.get(k), v)
    return target
