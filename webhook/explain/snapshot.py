"""What ``wasp explain`` reads, as plain data: the same model from a cluster or from a dump.

The I/O shells (:mod:`webhook.explain.cluster`, :mod:`webhook.explain.dump`) fill a
:class:`Snapshot`; everything after that (:mod:`webhook.explain.diagnose`) is pure.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.explain.capacity import Usage

__all__ = ["Snapshot", "ref"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def ref(obj: Obj) -> Json:
    """``{apiVersion, kind, namespace, name}`` of ``obj``."""
    meta = _dict(obj.get("metadata"))
    return {"apiVersion": str(obj.get("apiVersion", "")), "kind": str(obj.get("kind", "")),
            "namespace": str(meta.get("namespace", "")), "name": str(meta.get("name", ""))}  # fmt: skip


@dataclass
class Snapshot:
    """The governed object and what it needs, in its namespace.

    ``target``: the governed object (``None`` when it could not be found, ``trail`` says what
    was followed); ``workloads``/``groups``: the namespace's Workloads and (Composite)PodGroups
    (the reconciler's discovery picks from them); ``pods``: at least the object's pods (a
    superset is fine, :mod:`webhook.explain.selection` picks); ``events``: ``FailedCreate`` and
    ``FailedScheduling`` events of the namespace (a superset is fine); ``nodes`` and ``usage``
    (requests of the pods bound to each node): ``None`` when not read; ``was_served``: the
    cluster serves Workloads and PodGroups; ``unread``: what could not be read, and why.
    """

    target: Json | None
    trail: list[str] = field(default_factory=list)
    workloads: list[Json] = field(default_factory=list)
    groups: list[Json] = field(default_factory=list)
    pods: list[Json] = field(default_factory=list)
    events: list[Json] = field(default_factory=list)
    nodes: list[Json] | None = None
    usage: Usage | None = None
    was_served: bool = True
    unread: dict[str, str] = field(default_factory=dict)

    def by_name(self, kind: str, name: str) -> Json | None:
        """The Workload, PodGroup or CompositePodGroup of that name, or ``None``."""
        for obj in self.workloads if kind == "Workload" else self.groups:
            if obj.get("kind", kind) == kind and _dict(obj.get("metadata")).get("name") == name:
                return obj
        return None
