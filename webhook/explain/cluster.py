"""``wasp explain`` against a cluster: the reads that fill a :class:`Snapshot`, and no more.

Read-only and bounded: the object named and the references up to its governing object
(GETs); the namespace's Workloads and (Composite)PodGroups (the reconciler's discovery picks
among them); the object's pods by their controller's label (``labelSelector``); the
namespace's ``FailedCreate`` and ``FailedScheduling`` events (``fieldSelector`` on
``reason``); and only when a gang has its pods but they are not placed, the nodes and the
requests of the pods bound to them (``fieldSelector`` ``spec.nodeName!=`` and unfinished
phases, summed page by page). Every list is paginated (``limit``/``continue``). Everything
but the nodes and the cluster-wide pods is namespaced, so a namespace-scoped Role suffices;
without the cluster-wide reads (403) the capacity check says what it could not check.
"""

from __future__ import annotations

import typing as t

from webhook.explain.capacity import Usage, add_usage
from webhook.explain.diagnose import Explanation, Options, explain
from webhook.explain.kinds import KindSpec, by_kind
from webhook.explain.selection import belongs, pod_selector, resolve
from webhook.explain.snapshot import Snapshot
from webhook.governed.apis import GROUP, PLURALS, Chosen, choose
from webhook.kube.api import Api, ApiException, Resource
from webhook.policy import PolicySet

__all__ = ["EVENTS", "EVENT_REASONS", "PODS", "NotFound", "Reader", "explain_in_cluster", "forbidden"]

Json = dict[str, t.Any]
NODES: t.Final = Resource("", "v1", "nodes", "Node")
PODS: t.Final = Resource("", "v1", "pods", "Pod")
EVENTS: t.Final = Resource("", "v1", "events", "Event")
_BOUND_PODS: t.Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
EVENT_REASONS: t.Final = ("FailedCreate", "FailedScheduling")


class NotFound(Exception):
    """The object named does not exist (exit 2)."""


def _resource(spec: KindSpec) -> Resource:
    return Resource(spec.group, spec.version, spec.plural, spec.kind)


class Reader:
    """Paginated, selected reads through :class:`webhook.kube.api.Api`; ``calls`` counts them."""

    def __init__(self, api: Api, page_size: int = 500) -> None:
        self.api, self.page_size, self.calls = api, page_size, 0

    def _call(self, path: str, query: list[tuple[str, t.Any]] | None = None) -> t.Any:
        self.calls += 1
        return self.api.call("GET", path, query=query)

    def pages(self, resource: Resource, namespace: str | None, *, labels: str = "",
              fields: str = "") -> t.Iterator[list[Json]]:  # fmt: skip
        token = ""
        while True:
            query: list[tuple[str, t.Any]] = [("limit", self.page_size)]
            query += [
                (k, v)
                for k, v in (("labelSelector", labels), ("fieldSelector", fields), ("continue", token))
                if v
            ]
            doc = self._call(resource.path(namespace), query)
            items = doc.get("items") if isinstance(doc, dict) else None
            yield items if isinstance(items, list) else []
            token = str(((doc or {}).get("metadata") or {}).get("continue") or "")
            if not token:
                return

    def get(self, resource: Resource, namespace: str, name: str) -> Json | None:
        try:
            return t.cast(Json, self._call(resource.path(namespace, name)))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def scheduling_versions(self) -> Chosen:
        """The scheduling API versions to read, from discovery (one call per version listed)."""
        served = self.api.group_versions(GROUP)
        self.calls += 1 + len(served)
        return choose(served, write=False)


def forbidden(exc: Exception) -> str | None:
    if isinstance(exc, ApiException) and exc.status in (401, 403):
        return f"{exc.status} {exc.reason}"
    return None


def _read(reader: Reader, spec: KindSpec, namespace: str, name: str, policies: PolicySet,
          options: Options) -> Snapshot:  # fmt: skip
    start = reader.get(_resource(spec), namespace, name)
    if start is None:
        raise NotFound(f"{spec.kind} {namespace}/{name} not found")

    def lookup(api_version: str, kind: str, wanted: str) -> Json | None:
        found = by_kind(api_version, kind, policies)
        return reader.get(_resource(found), namespace, wanted) if found is not None else None

    target, trail = resolve(start, policies, lookup)
    snap = Snapshot(target, trail)
    if target is None:
        return snap
    # The versions discovery lists that wasp has a schema for, as audit and doctor read them
    # (webhook/governed/apis.py); one it has none for is named in the notes, never guessed.
    chosen = reader.scheduling_versions()
    snap.was_served = {"Workload", "PodGroup"} <= chosen.versions.keys()
    snap.unread.update({kind: why for kind, why in chosen.missing.items() if "no schema" in why})
    if snap.was_served:
        for kind, plural in PLURALS.items():
            if kind not in chosen.versions:
                continue
            spec = KindSpec(GROUP, chosen.versions[kind], plural, kind)
            found = [o for page in reader.pages(_resource(spec), namespace) for o in page]
            if kind == "Workload":
                snap.workloads = found
            else:
                snap.groups += found
    selector = pod_selector(target, policies, override=options.pod_selector)
    for page in reader.pages(PODS, namespace, labels=selector.label_selector()):
        snap.pods += [p for p in page if belongs(p, selector)]
    try:
        for reason in EVENT_REASONS:
            for page in reader.pages(EVENTS, namespace, fields=f"reason={reason}"):
                snap.events += page
    except ApiException as exc:
        if (why := forbidden(exc)) is None:
            raise
        snap.unread["events"] = why
    return snap


def _capacity(reader: Reader, snap: Snapshot) -> None:
    """Nodes and the requests bound to them, for the capacity estimate."""
    try:
        snap.nodes = [n for page in reader.pages(NODES, None) for n in page]
    except ApiException as exc:
        if (why := forbidden(exc)) is None:
            raise
        snap.unread["nodes"] = f"list nodes: {why}"
        return
    usage: Usage = {}
    try:
        for page in reader.pages(PODS, None, fields=_BOUND_PODS):
            add_usage(usage, page)  # only the sums per node are kept
    except ApiException as exc:
        if (why := forbidden(exc)) is None:
            raise
        snap.nodes = None
        snap.unread["pods"] = f"list pods in all namespaces: {why}"
        return
    snap.usage = usage


def explain_in_cluster(reader: Reader, spec: KindSpec, namespace: str, name: str, policies: PolicySet,
                       options: Options) -> Explanation:  # fmt: skip
    """Read, explain; read nodes only when a gang waits for placement, then explain again."""
    snap = _read(reader, spec, namespace, name, policies, options)
    answer = explain(snap, policies, options)
    if (
        options.capacity
        and answer.tree is not None
        and any(g.verdict == "pending" for g in answer.tree.leaves())
    ):
        _capacity(reader, snap)
        answer = explain(snap, policies, options)
    return answer
