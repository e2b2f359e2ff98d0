"""The caches the decisions read, indexed the way discovery looks things up.

Informer threads write here, workers read: one lock guards every index, and
:meth:`World.observe` hands a worker a consistent snapshot for one object.
"""

from __future__ import annotations

import threading
import typing as t
from collections import defaultdict

from webhook.compiler.builder import parse_group
from webhook.governed.ownership import controller_of
from webhook.governed.reconcile import Observed
from webhook.governed.reconcile_model import Kind
from webhook.kube.api import Resource

__all__ = ["ObjectKey", "World", "slim_pod"]

Json = dict[str, t.Any]
ObjectKey = tuple[Resource, str, str]  # a governed object: its resource, namespace, name
Identity = tuple[str, str, str, str]  # namespace, apiGroup, kind, name: what a controllerRef names


def _meta(obj: t.Mapping[str, t.Any]) -> t.Mapping[str, t.Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def _controller_uid(obj: t.Mapping[str, t.Any]) -> str:
    ref = controller_of(obj)
    uid = ref.get("uid") if ref is not None else None
    return uid if isinstance(uid, str) else ""


def slim_pod(pod: Json) -> Json:
    """What the reconciler keeps of a Pod: who controls it and whether it has a group."""
    meta = _meta(pod)
    spec = _dict(pod.get("spec"))
    return {"metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "ownerReferences": [r for r in meta.get("ownerReferences") or [] if r.get("controller")]},
            "stamped": bool(spec.get("schedulingGroup"))}  # fmt: skip


class World:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.governed: dict[ObjectKey, Json] = {}
        self.by_uid: dict[str, ObjectKey] = {}
        self.by_identity: dict[Identity, ObjectKey] = {}
        self.children: defaultdict[str, set[ObjectKey]] = defaultdict(set)  # owner uid -> governed objects
        self.objects: dict[Kind, dict[tuple[str, str], Json]] = {
            "Workload": {},
            "PodGroup": {},
            "CompositePodGroup": {},
        }
        self.workloads_by_ref: defaultdict[Identity, set[str]] = defaultdict(set)
        self.groups_by_workload: defaultdict[tuple[str, str], set[tuple[Kind, str]]] = defaultdict(set)
        self.unstamped: defaultdict[str, int] = defaultdict(int)
        # Objects a worker is writing right now: their watch events (which may arrive before
        # the write's answer) echo that worker's own write and must not queue it again.
        self.writing: set[tuple[Kind, str, str]] = set()

    # -- updates from informers: each returns the governed objects to reconcile --------------------

    def governed_changed(self, resource: Resource, old: Json | None, new: Json | None) -> set[ObjectKey]:
        obj = new if new is not None else old
        assert obj is not None
        meta = _meta(obj)
        key: ObjectKey = (resource, meta.get("namespace", ""), meta.get("name", ""))
        identity = (key[1], resource.group, resource.kind, key[2])
        with self.lock:
            if old is not None:
                self.by_uid.pop(_meta(old).get("uid", ""), None)
                self.children[_controller_uid(old)].discard(key)
            if new is None:
                self.governed.pop(key, None)
                self.by_identity.pop(identity, None)
                return set()
            self.governed[key] = new
            self.by_uid[meta.get("uid", "")] = key
            self.by_identity[identity] = key
            if _controller_uid(new):
                self.children[_controller_uid(new)].add(key)
            return {key}

    def _owners(self, obj: Json) -> set[ObjectKey]:
        """The governed object controlling ``obj``, and its delegated children."""
        key = self.by_uid.get(_controller_uid(obj))
        if key is None:
            return set()
        return {key, *self.children.get(_meta(self.governed[key]).get("uid", ""), ())}

    def scheduling_changed(self, kind: Kind, old: Json | None, new: Json | None) -> set[ObjectKey]:
        with self.lock:
            if new is not None:
                meta = _meta(new)
                place = (meta.get("namespace", ""), meta.get("name", ""))
                known = self.objects[kind].get(place)
                if known is not None and _meta(known).get("resourceVersion") == meta.get("resourceVersion"):
                    # The watch echoes our own write, already put here from the write's answer.
                    # Keep the watch's copy, which the informer caches too: one object, not two.
                    self.objects[kind][place] = new
                    return set()
            echo = (
                new is not None
                and (kind, _meta(new).get("namespace", ""), _meta(new).get("name", "")) in self.writing
            )
            out: set[ObjectKey] = set()
            for obj, present in ((old, False), (new, True)):
                if obj is None:
                    continue
                meta = _meta(obj)
                ns, name = meta.get("namespace", ""), meta.get("name", "")
                spec = _dict(obj.get("spec"))
                if kind == "Workload":
                    ref = _dict(spec.get("controllerRef"))
                    identity = (ns, ref.get("apiGroup", ""), ref.get("kind", ""), ref.get("name", ""))
                    index: set[t.Any] = self.workloads_by_ref[identity]
                    entry: t.Any = name
                    named = self.by_identity.get(identity)
                    if named is not None:  # also a foreign Workload naming the object: it may hold our name
                        out |= {named, *self.children.get(_meta(self.governed[named]).get("uid", ""), ())}
                else:
                    wref = _dict(spec.get("workloadRef"))
                    index, entry = self.groups_by_workload[(ns, wref.get("workloadName", ""))], (kind, name)
                if present:
                    index.add(entry)
                    self.objects[kind][(ns, name)] = obj
                else:
                    index.discard(entry)
                    if new is None:
                        self.objects[kind].pop((ns, name), None)
                out |= self._owners(obj)
            if echo:  # the writer itself needs no second look; its delegated children do
                out.discard(self.by_uid.get(_controller_uid(t.cast(Json, new)), t.cast(ObjectKey, None)))
            return out

    def pod_changed(self, old: Json | None, new: Json | None) -> set[ObjectKey]:
        with self.lock:
            before = (_controller_uid(old), not old.get("stamped")) if old is not None else ("", False)
            after = (_controller_uid(new), not new.get("stamped")) if new is not None else ("", False)
            if before == after:
                return set()
            if before[1]:
                self.unstamped[before[0]] -= 1
            if after[1]:
                self.unstamped[after[0]] += 1
            keys = {self.by_uid.get(uid) for uid in (before[0], after[0])}
            return {k for k in keys if k is not None}

    # -- reads ------------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> Json | None:
        with self.lock:
            return self.governed.get(key)

    def keys(self) -> list[ObjectKey]:
        with self.lock:
            return list(self.governed)

    def put(self, kind: Kind, obj: Json) -> None:
        """A write's answer, so the next plan sees it before its watch event arrives."""
        meta = _meta(obj)
        with self.lock:
            known = self.objects[kind].get((meta.get("namespace", ""), meta.get("name", "")))
            if known is not None and _meta(known).get("resourceVersion") == meta.get("resourceVersion"):
                return  # its watch event came first: indexed already, and shared with the informer's cache
            self.scheduling_changed(kind, known, obj)

    def observe(self, obj: Json) -> Observed:
        meta = _meta(obj)
        ns = meta.get("namespace", "")
        owner = controller_of(obj)
        with self.lock:
            identities = [
                (ns, parse_group(obj.get("apiVersion", "")), obj.get("kind", ""), meta.get("name", ""))
            ]
            if owner is not None:  # a delegated child's parent Workload
                identities.append(
                    (
                        ns,
                        parse_group(owner.get("apiVersion", "")),
                        owner.get("kind", ""),
                        owner.get("name", ""),
                    )
                )
            workloads = [
                self.objects["Workload"][(ns, n)]
                for i in identities
                for n in self.workloads_by_ref.get(i, ())
            ]
            groups = [
                self.objects[k][(ns, n)]
                for w in workloads
                for k, n in self.groups_by_workload.get((ns, _meta(w).get("name", "")), ())
            ]
            objects = self.objects
            return Observed(
                workloads=workloads,
                groups=groups,
                by_name=lambda kind, name: objects[kind].get((ns, name)),
                unstamped_pods=self.unstamped.get(meta.get("uid", ""), 0),
            )
