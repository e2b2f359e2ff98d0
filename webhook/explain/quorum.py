"""Why a gang that exists has not run: its pods are not there, or the scheduler cannot place them.

Pods short of ``minCount``: the workload is suspended, its controller was refused
(``FailedCreate`` events), it holds pods back on purpose (:mod:`webhook.explain.sequencing`),
or, none of those seen, it simply has not created them. Enough pods but not scheduled: the
scheduler's own words (``FailedScheduling`` events, else the pods' ``PodScheduled``
condition), and the capacity estimate (:mod:`webhook.explain.capacity`).
"""

from __future__ import annotations

import collections
import typing as t

from webhook.explain.capacity import Usage, fit, shape_of
from webhook.explain.findings import Finding
from webhook.explain.pods import names
from webhook.explain.sequencing import start_order
from webhook.explain.tree import GroupNode, scheduled
from webhook.governed.reconcile_model import meta, string
from webhook.policy import Policy

__all__ = ["capacity", "creation", "scheduling", "suspension"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
KUEUE_QUEUE: t.Final = "kueue.x-k8s.io/queue-name"
_MESSAGES: t.Final = 5  # distinct scheduler messages shown


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def suspension(obj: Obj, owner: Json) -> list[Finding]:
    """``spec.suspend`` (Job, JobSet, RayCluster, RayJob, TrainJob) or ``spec.runPolicy.suspend``
    (MPIJob); with Kueue's queue label, Kueue keeps it suspended until it admits it."""
    spec = _dict(obj.get("spec"))
    path = "spec.suspend" if spec.get("suspend") is True else (
        "spec.runPolicy.suspend" if _dict(spec.get("runPolicy")).get("suspend") is True else "")  # fmt: skip
    if not path:
        return []
    queue = _dict(meta(obj).get("labels")).get(KUEUE_QUEUE)
    evidence = [f"{path} is true: the controller creates no pods"]
    if queue:
        evidence.append(f"label {KUEUE_QUEUE}={queue}: Kueue unsuspends it when it admits the workload")
        fix = f"wait for Kueue to admit it, or look at LocalQueue {queue} and its ClusterQueue's quota (kubectl describe)"
    else:
        fix = f"set {path} to false"
    return [
        Finding(
            "suspended",
            owner,
            "the workload is suspended",
            tuple(evidence),
            fix,
            {"path": path, "queue": queue or ""},
        )
    ]


def _involved(event: Obj) -> t.Mapping[str, t.Any]:
    return _dict(event.get("involvedObject") or event.get("regarding"))


def _count(event: Obj) -> int:
    count = event.get("count") or _dict(event.get("series")).get("count")
    return count if isinstance(count, int) and count > 0 else 1


def _aggregate(events: t.Iterable[Obj]) -> list[tuple[str, int, list[str]]]:
    """(message, times, involved names) by message, most frequent first."""
    times: dict[str, int] = collections.Counter()
    who: dict[str, set[str]] = collections.defaultdict(set)
    for event in events:
        message = string(event.get("message") or event.get("note")).strip()
        times[message] += _count(event)
        who[message].add(string(_involved(event).get("name")))
    return [(m, n, sorted(who[m])) for m, n in sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))]


# Kinds that create a workload's pods for its controller, besides the policy's child templates:
# the Job controller (an MPIJob's launcher), StatefulSets (a LeaderWorkerSet's leaders and workers).
_POD_CREATORS: t.Final = frozenset({"Job", "StatefulSet"})


def _of_workload(event: Obj, obj: Obj, policy: Policy) -> bool:
    """An event of the object, or of a child that creates its pods, named after it as the
    controllers name them (a JobSet's Jobs ``<jobset>-<rjob>-<i>``, an LWS's StatefulSets
    ``<lws>`` and ``<lws>-<group>``)."""
    involved, m = _involved(event), meta(obj)
    if m.get("uid") and involved.get("uid") == m.get("uid"):
        return True
    name = string(m.get("name"))
    if (involved.get("kind"), involved.get("name")) == (obj.get("kind"), name):
        return True
    creators = _POD_CREATORS | {c.kind for c in policy.child_templates}
    other = string(involved.get("name"))
    return involved.get("kind") in creators and (other == name or other.startswith(f"{name}-"))


def _wanted(group: GroupNode) -> str:
    return f"minCount {group.min_count}" if group.min_count is not None else "at least 1 (basic)"


def creation(obj: Obj, policy: Policy, short: list[GroupNode], events: t.Sequence[Obj], owner: Json,
             suspended: bool) -> list[Finding]:  # fmt: skip
    """Why the groups in ``short`` have fewer pods than their ``minCount``."""
    have = ", ".join(f"PodGroup {g.name}: {g.pods.exist} of {_wanted(g)} pods exist" for g in short)
    found: list[Finding] = []
    refused = [e for e in events if e.get("reason") == "FailedCreate" and _of_workload(e, obj, policy)]
    if refused:
        lines = [f"{n}× on {', '.join(who)}: {m}" for m, n, who in _aggregate(refused)[:_MESSAGES]]
        found.append(Finding(
            "failed-create", owner, "the controller was refused when it created pods or children",
            (have, *lines),
            "fix what the messages say: raise the ResourceQuota or lower the requests, or make the "
            "admission webhook or policy that refuses them accept the pods",
            {"events": sum(n for _, n, _ in _aggregate(refused))},
        ))  # fmt: skip
    order = start_order(policy, obj)
    if order is not None and not suspended:
        found.append(Finding(
            "held-back-sequenced", owner,
            "the controller creates some pods only after others are ready, but the gang waits for all of them: "
            "a deadlock", (have, order.why), order.fix, {"startOrder": order.why},
        ))  # fmt: skip
    if not found and not suspended:
        found.append(Finding(
            "pods-not-created", owner, "the controller has not created enough pods for the gang", (have,),
            f"look at the controller of {obj.get('kind')} {meta(obj).get('name')} (its status and events: "
            "kubectl describe), or lower minCount to the pods it runs at once",
            {"groups": {g.name: {"exist": g.pods.exist, "minCount": g.min_count} for g in short}},
        ))  # fmt: skip
    return found


def _unschedulable(pod: Obj) -> str:
    for condition in _dict(pod.get("status")).get("conditions") or []:
        c = _dict(condition)
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message"):
            return string(c.get("message"))
    return ""


def scheduling(group: GroupNode, events: t.Sequence[Obj]) -> list[Finding]:
    """The scheduler's messages for the group's pods, aggregated by message."""
    waiting = {string(meta(p).get("name")) for p in group.members if not scheduled(p)}
    mine = [e for e in events if e.get("reason") == "FailedScheduling" and _involved(e).get("kind") == "Pod"
            and _involved(e).get("name") in waiting]  # fmt: skip
    source = "FailedScheduling events"
    if not mine:
        mine = [{"message": m, "involvedObject": {"name": meta(p).get("name")}}
                for p in group.members if (m := _unschedulable(p))]  # fmt: skip
        source = "PodScheduled conditions"
    if not mine:
        return []
    messages = _aggregate(mine)
    lines = [f"{n}× ({len(who)} pod(s)): {m}" for m, n, who in messages[:_MESSAGES]]
    return [Finding(
        "failed-scheduling", _group_ref(group), f"the scheduler cannot place the pods of PodGroup {group.name} "
        f"({source})", tuple(lines),
        "act on the scheduler's message: free or add nodes matching the pods' requests, nodeSelector and "
        "tolerations, or lower minCount",
        {"messages": [{"message": m, "count": n, "pods": len(who)} for m, n, who in messages]},
    )]  # fmt: skip


def _group_ref(group: GroupNode) -> Json:
    live = group.live or {}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": group.kind,
            "namespace": string(meta(live).get("namespace")), "name": group.name}  # fmt: skip


def capacity(group: GroupNode, nodes: t.Sequence[Obj] | None, usage: Usage | None,
             unread: t.Mapping[str, str]) -> list[Finding]:  # fmt: skip
    """Whether the pods still to place fit, in all and in one topology domain (an estimate)."""
    pending = [p for p in group.members if not scheduled(p)]
    needed = group.needed - group.pods.scheduled
    if not pending or needed <= 0:
        return []
    shape = shape_of(pending[0])
    where = f"in one {group.topology_key}" if group.topology_key else "on the cluster's nodes"
    if nodes is None or usage is None:
        why = "; ".join(f"{what}: {reason}" for what, reason in sorted(unread.items())) or "not read"
        return [Finding(
            "capacity-unknown", _group_ref(group),
            f"whether {needed} × {shape.describe()} fit {where} was not checked",
            (f"could not read {why}",),
            "run with a user that may list nodes and pods in all namespaces (docs/explain.md), or explain a dump "
            "that includes them (--from)", {"needed": needed},
        )]  # fmt: skip
    estimate = fit(nodes, usage, shape, needed, group.topology_key)
    if estimate.enough:
        return []
    evidence = [
        f"needs {needed} × {shape.describe()} {where}",
        f"{estimate.eligible} of {estimate.nodes} nodes can take such a pod; together they fit {estimate.total}",
    ]
    for why, count in sorted(estimate.excluded.items()):
        evidence.append(f"{count} node(s) excluded: {why}")
    if group.topology_key:
        best = f"the best {group.topology_key}, {estimate.best_domain}, fits {estimate.best_fit}" \
            if estimate.domains else f"no eligible node has label {group.topology_key}"  # fmt: skip
        evidence.append(f"{estimate.domains} domain(s); {best}")
    evidence.append("an estimate from a snapshot: requests, nodeSelector, taints and cordons only")
    return [Finding(
        "insufficient-capacity", _group_ref(group),
        f"{needed} more pods of the gang do not fit {where} (estimate)", tuple(evidence),
        "free or add capacity of that shape (in one domain, with a topology constraint), or lower the requests "
        "or minCount",
        {"needed": needed, "shape": {k: str(v) for k, v in shape.requests.items()}, "fitTotal": estimate.total,
         "topologyKey": group.topology_key, "bestDomain": estimate.best_domain, "bestDomainFit": estimate.best_fit,
         "pods": names(pending)},
    )]  # fmt: skip
