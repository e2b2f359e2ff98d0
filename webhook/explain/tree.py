"""The picture of one workload: its Workload, groups and pods, counted, with each group's verdict.

The groups are those :func:`webhook.governed.workloads.compile_object` compiles the object
to (the names the reconciler creates and the webhook stamps); each is matched with the live
object of that name and with the pods stamped with it.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.reconcile_model import group_count, meta, string
from webhook.governed.workloads import Compiled

__all__ = ["GroupNode", "PodCounts", "WorkloadNode", "active", "build", "counted", "group_of"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
Verdict = t.Literal["runs", "waiting-for-pods", "pending", "missing"]
_FINISHED: t.Final = frozenset({"Succeeded", "Failed"})


def group_of(pod: Obj) -> str:
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    return string(group.get("podGroupName")) if isinstance(group, dict) else ""


def _phase(pod: Obj) -> object:
    status = pod.get("status")
    return status.get("phase") if isinstance(status, dict) else None


def active(pod: Obj) -> bool:
    """Not finished and not being deleted: a pod that is part of the workload now."""
    return _phase(pod) not in _FINISHED and not meta(pod).get("deletionTimestamp")


def counted(pod: Obj) -> bool:
    """A pod the gang's quorum counts: active, or succeeded (the gang ran; a finished Job's pods)."""
    return (active(pod) or _phase(pod) == "Succeeded") and not meta(pod).get("deletionTimestamp")


def scheduled(pod: Obj) -> bool:
    spec = pod.get("spec")
    return isinstance(spec, dict) and bool(spec.get("nodeName"))


def running(pod: Obj) -> bool:
    status = pod.get("status")
    return isinstance(status, dict) and status.get("phase") == "Running"


@dataclass
class PodCounts:
    exist: int = 0
    scheduled: int = 0
    running: int = 0

    def add(self, pod: Obj) -> None:
        self.exist += 1
        self.scheduled += scheduled(pod)
        self.running += running(pod)

    def to_json(self) -> Json:
        return {"exist": self.exist, "scheduled": self.scheduled, "running": self.running}


@dataclass
class GroupNode:
    kind: str  # PodGroup or CompositePodGroup
    name: str
    template: str
    exists: bool
    min_count: int | None  # None: a basic group (no gang)
    topology_key: str = ""
    live: Json | None = None
    pods: PodCounts = field(default_factory=PodCounts)
    members: list[Json] = field(default_factory=list)  # the counted pods stamped with it
    children: list[GroupNode] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if not self.exists:
            return "missing"
        if self.kind == "CompositePodGroup":
            # minGroupCount of its children must run (all of them without a gang).
            ready = sum(c.verdict == "runs" for c in self.children)
            return "runs" if ready >= (self.min_count or len(self.children)) else "pending"
        need = self.needed
        if self.pods.scheduled >= need:
            return "runs"
        return "waiting-for-pods" if self.pods.exist < need else "pending"

    @property
    def needed(self) -> int:
        """Pods the group needs placed: ``minCount``, or every pod of a basic group."""
        return self.min_count if self.min_count is not None else max(self.pods.exist, 1)

    def walk(self) -> t.Iterator[GroupNode]:
        yield self
        for child in self.children:
            yield from child.walk()

    def to_json(self) -> Json:
        out: Json = {"kind": self.kind, "name": self.name, "template": self.template, "exists": self.exists,
                     "minCount": self.min_count, "verdict": self.verdict}  # fmt: skip
        if self.kind == "PodGroup":
            out["pods"] = self.pods.to_json()
        if self.topology_key:
            out["topologyKey"] = self.topology_key
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass
class WorkloadNode:
    name: str
    exists: bool
    groups: list[GroupNode]
    pods: PodCounts = field(default_factory=PodCounts)  # every counted pod of the workload
    ungrouped: int = 0  # counted pods of the workload without a schedulingGroup

    def leaves(self) -> list[GroupNode]:
        return [g for top in self.groups for g in top.walk() if g.kind == "PodGroup"]

    @property
    def runs(self) -> bool:
        return self.exists and bool(self.groups) and all(g.verdict == "runs" for g in self.groups)

    def to_json(self) -> Json:
        return {"kind": "Workload", "name": self.name, "exists": self.exists, "pods": self.pods.to_json(),
                "ungroupedPods": self.ungrouped, "children": [g.to_json() for g in self.groups]}  # fmt: skip


def _topology(group: Obj) -> str:
    spec = group.get("spec")
    constraints = spec.get("schedulingConstraints") if isinstance(spec, dict) else None
    topology = constraints.get("topology") if isinstance(constraints, dict) else None
    first = topology[0] if isinstance(topology, list) and topology else None
    return string(first.get("key")) if isinstance(first, dict) else ""


def _node(compiled: Json, live: Json | None) -> GroupNode:
    spec = compiled.get("spec") or {}
    template = string((spec.get("workloadRef") or {}).get("templateName"))
    source = live if live is not None else compiled
    return GroupNode(
        str(compiled.get("kind")), string(meta(compiled).get("name")), template, live is not None,
        group_count(source)[1], _topology(source), live,
    )  # fmt: skip


def build(compiled: Compiled, workload_exists: bool, live: t.Callable[[str, str], Json | None],
          pods: t.Sequence[Obj]) -> WorkloadNode:  # fmt: skip
    """The tree of ``compiled``, matched by name with ``live`` objects and the workload's ``pods``."""
    nodes: dict[str, GroupNode] = {}
    top: list[GroupNode] = []
    for group in [*compiled.composite_pod_groups, *compiled.pod_groups]:
        node = _node(group, live(str(group.get("kind")), string(meta(group).get("name"))))
        nodes[node.name] = node
        parent = string((group.get("spec") or {}).get("parentCompositePodGroupName"))
        (nodes[parent].children if parent in nodes else top).append(node)
    tree = WorkloadNode(string(meta(compiled.workload).get("name")), workload_exists, top)
    for pod in pods:
        if not counted(pod):
            continue
        tree.pods.add(pod)
        name = group_of(pod)
        if not name:
            tree.ungrouped += 1
        elif name in nodes and nodes[name].kind == "PodGroup":
            nodes[name].pods.add(pod)
            nodes[name].members.append(t.cast(Json, pod))
    return tree
