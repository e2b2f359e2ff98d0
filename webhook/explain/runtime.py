"""``wasp audit``'s runtime line: ``wasp explain``'s verdict and codes for every governed object.

The same :func:`~webhook.explain.diagnose.explain`, on what the audit holds for the object (the
Workloads and groups its index observed) and on the object's pods and the namespace's events,
read here: events once per namespace (``FailedCreate`` and ``FailedScheduling``, by field
selector), pods once per page of governed objects, with a set-based label selector per pod label
key (``jobset.sigs.k8s.io/jobset-name in (a,b,...)``) and, when a kind of the page has no known
pod label, the namespace's pods page by page. Only the page's objects' pods are kept, so memory
follows the audit's page, not the namespace. No capacity estimate: the audit reads no nodes.
"""

from __future__ import annotations

import collections
import typing as t

from webhook.explain.cluster import EVENT_REASONS, EVENTS, PODS, Reader, forbidden
from webhook.explain.diagnose import Explanation, Options, explain
from webhook.explain.selection import pod_selector
from webhook.explain.snapshot import Snapshot
from webhook.governed.drift import Finding as AuditFinding
from webhook.governed.ownership import controller_of
from webhook.kube.api import ApiException
from webhook.policy import PolicySet

__all__ = ["Runtime"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
_VALUES_PER_LIST: t.Final = 100  # label values in one `in (...)` selector: keeps the URL short


def _uid(obj: Obj) -> str:
    meta = obj.get("metadata")
    return str(meta.get("uid", "")) if isinstance(meta, dict) else ""


class Runtime:
    def __init__(self, reader: Reader, policies: PolicySet) -> None:
        self.reader, self.policies = reader, policies
        self.namespace = ""
        self.events: list[Json] = []
        self.pods: dict[str, list[Json]] = {}  # governed object's uid -> its pods (this page)

    def _enter(self, namespace: str) -> None:
        if namespace == self.namespace:
            return
        self.namespace, self.events = namespace, []
        try:
            for reason in EVENT_REASONS:
                for page in self.reader.pages(EVENTS, namespace, fields=f"reason={reason}"):
                    self.events += page
        except ApiException as exc:
            if forbidden(exc) is None:
                raise

    def page(self, namespace: str, objects: t.Sequence[Obj]) -> None:
        """Read the pods of one page of governed objects."""
        self._enter(namespace)
        by_label: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
        by_owner: dict[str, list[str]] = collections.defaultdict(list)
        values: dict[str, set[str]] = collections.defaultdict(set)
        for obj in objects:
            selector = pod_selector(obj, self.policies)
            if len(selector.labels) == 1:
                ((key, value),) = selector.labels.items()
                by_label[(key, value)].append(_uid(obj))
                values[key].add(value)
            else:
                by_owner[selector.controller_uid].append(_uid(obj))
        queries = [f"{key} in ({','.join(chunk[i : i + _VALUES_PER_LIST])})"
                   for key, chunk in ((k, sorted(v)) for k, v in sorted(values.items()))
                   for i in range(0, len(chunk), _VALUES_PER_LIST)]  # fmt: skip
        if by_owner:
            queries.append("")  # kinds without a known pod label: the namespace's pods
        self.pods = {_uid(obj): [] for obj in objects}
        for query in queries:
            for items in self.reader.pages(PODS, namespace, labels=query):
                for pod in items:
                    for uid in self._owners(pod, by_label, values, by_owner, labelled=bool(query)):
                        self.pods[uid].append(pod)

    @staticmethod
    def _owners(pod: Json, by_label: t.Mapping[tuple[str, str], list[str]], values: t.Mapping[str, set[str]],
                by_owner: t.Mapping[str, list[str]], *, labelled: bool) -> set[str]:  # fmt: skip
        """The page's objects ``pod`` belongs to: by label from a labelled list, by controller
        from the namespace's."""
        if labelled:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            return {u for key in values for u in by_label.get((key, str(labels.get(key, ""))), ())}
        owner = controller_of(pod)
        return set(by_owner.get(str(owner.get("uid", "")), ())) if owner is not None else set()

    def summary(self, obj: Json, workloads: t.Sequence[Obj], groups: t.Sequence[Obj], served: bool,
                judged: t.Sequence[AuditFinding]) -> Explanation:  # fmt: skip
        """Explain ``obj`` (of the last :meth:`page`) from what the audit observed and judged for it."""
        snap = Snapshot(obj, [], [dict(w) for w in workloads], [dict(g) for g in groups],
                        self.pods.get(_uid(obj), []), self.events, was_served=served)  # fmt: skip
        return explain(snap, self.policies, Options(capacity=False), judged)
