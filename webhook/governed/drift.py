"""What ``wasp audit`` finds about one stored object: pure judgements, no I/O.

The audit asks the questions the webhook and the reconciler already answer, through their
own code, so a finding means exactly what admission or reconciliation would do:

* a governed object (or a stored Workload, PodGroup, CompositePodGroup) is judged by
  :func:`~webhook.governed.validation.validate_object` as a CREATE: the stored object is
  what would be admitted today; each field error is one finding (its error type, its path);
* a governed object's scheduling objects are checked with the reconciler's
  :func:`~webhook.governed.reconcile.plan`: each write the plan would make is drift (a
  ``Create`` is a missing object, a count ``Patch`` a ``minCount`` drift) and each report it
  would publish is a finding named by the report's reason (``NameTaken``, ``SeveralWorkloads``,
  ...); a group the object controls that the compiled tree does not name is ``Extra``;
* a Pod whose ``schedulingGroup`` names a PodGroup that does not exist is ``PodGroupNotFound``;
* a scheduling object wasp made whose controller is no governed object is ``Orphaned``.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.governed.ownership import controller_of
from webhook.governed.reconcile import Create, Observed, Patch, plan
from webhook.governed.reconcile_model import Kind, controls, meta, string
from webhook.governed.result import Result, Status
from webhook.governed.validation import validate_object
from webhook.governed.workloads import MANAGED_BY_LABELS, Compiled
from webhook.policy import PolicySet

__all__ = [
    "Finding",
    "Severity",
    "judge",
    "judge_orphan",
    "judge_pod",
    "judge_scheduling_object",
    "object_ref",
]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
Severity = t.Literal["error", "warning", "info"]

# Reports of the plan that are not a problem of the cluster but wasp choosing not to act.
_WARNINGS: t.Final = frozenset(
    {"StartedWithoutGroups", "ParentWorkloadMissing", "CompositePodGroupImmutable", "PodsOutsideGroup"}
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong (or worth knowing) about ``object`` (``{apiVersion, kind, namespace,
    name}``). ``type`` is an apimachinery error type for field errors, else a CamelCase
    reason; ``path`` is the field in ``object``'s API ("" for the object as a whole);
    ``owner`` is the governed object whose plan found it, when that is another object."""

    type: str
    severity: Severity
    object: Json
    path: str
    message: str
    owner: Json | None = None
    detail: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        return {"type": self.type, "severity": self.severity, "object": self.object, "path": self.path,
                "message": self.message, "owner": self.owner, "detail": self.detail}  # fmt: skip


def object_ref(obj: Obj, kind: str | None = None, name: str | None = None) -> Json:
    m = meta(obj)
    api_version = string(obj.get("apiVersion"))
    if kind is not None:
        api_version = (
            "scheduling.k8s.io/v1alpha3" if kind == "CompositePodGroup" else "scheduling.k8s.io/v1beta1"
        )
    return {"apiVersion": api_version, "kind": kind or string(obj.get("kind")),
            "namespace": string(m.get("namespace")), "name": name if name is not None else string(m.get("name"))}  # fmt: skip


def _validation(obj: Obj, verdict: Result) -> tuple[list[Finding], bool]:
    """Field-error findings (and warnings) of ``obj`` as a CREATE; whether it was judged."""
    if verdict.status in (Status.SKIPPED, Status.ERROR):
        return [], False
    ref = object_ref(obj)
    found = [
        Finding(
            e.type.value, "error", ref, e.path, e.error(), detail={"origin": e.origin} if e.origin else {}
        )
        for e in verdict.errors
    ]
    found += [Finding("Warning", "warning", ref, "", w) for w in verdict.warnings]
    return found, True


def _pointer_path(pointer: str) -> str:
    """``/spec/podGroupTemplates/0/schedulingPolicy`` -> ``spec.podGroupTemplates[0].schedulingPolicy``."""
    out = ""
    for step in pointer.strip("/").split("/"):
        out += f"[{step}]" if step.isdigit() else (f".{step}" if out else step)
    return out


def _resolve(obj: Obj | None, pointer: str) -> object:
    node: object = obj
    for step in pointer.strip("/").split("/"):
        if isinstance(node, dict):
            node = node.get(step)
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return None
    return node


def _drift(patch: Patch, observed: Observed, owner: Json) -> list[Finding]:
    live = observed.by_name(patch.kind, patch.name)
    ref = object_ref({"metadata": {"namespace": owner["namespace"]}}, patch.kind, patch.name)
    return [
        Finding(
            "MinCountDrift",
            "error",
            ref,
            _pointer_path(op["path"]),
            f"{_pointer_path(op['path'])} is {_resolve(live, op['path'])}, the owner compiles to {op['value']}",
            owner,
            {"have": _resolve(live, op["path"]), "want": op["value"]},
        )
        for op in patch.ops
        if op.get("op") == "replace"
    ]


def _extra(obj: Obj, compiled: Compiled, observed: Observed, owner: Json) -> list[Finding]:
    wanted = {(string(o.get("kind")), string(o["metadata"]["name"])) for o in compiled.objects()}
    found = []
    for group in observed.groups:
        kind, name = string(group.get("kind")), string(meta(group).get("name"))
        if controls(obj, group) and (kind, name) not in wanted:
            message = f"{kind} {name} is controlled by this object but is not in its compiled tree"
            found.append(Finding("Extra", "error", object_ref(group), "", message, owner))
    return found


def judge(obj: Obj, policies: PolicySet, observed: Observed, *, groups: bool = True) -> list[Finding]:
    """Every finding about governed object ``obj``, given the scheduling objects observed for it
    (the reconciler's :class:`Observed`: same discovery, same names). ``groups=False``: the
    cluster serves no WAS API, so only the object itself is judged."""
    verdict = validate_object(obj, policies=policies)
    found, judged = _validation(obj, verdict)
    if not judged or not groups:
        return found
    owner = object_ref(obj)
    # The plan's memo hands back the compiled tree (for ``Extra``); it keys by resourceVersion,
    # which every stored object has; one built in memory (tests, offline input) gets one here.
    m = meta(obj)
    if not m.get("resourceVersion"):
        obj = {**obj, "metadata": {**m, "resourceVersion": "0"}}
    memo: dict[str, tuple[str, t.Any]] = {}
    outcome = plan(obj, policies, observed, memo=memo, verdict=verdict)
    writes, reports = list(outcome.writes), list(outcome.reports)
    if outcome.again:
        # The Workload is missing: its groups would come in the reconciler's next round; plan
        # that round as if the Workload existed, so every missing object is listed.
        created = [w.body for w in outcome.writes if isinstance(w, Create) and w.kind == "Workload"]
        after = Observed(
            [*observed.workloads, *created], observed.groups, observed.by_name, observed.unstamped_pods
        )
        then = plan(obj, policies, after, memo=memo)
        writes += then.writes
        reports += then.reports
    invalid = any(f.severity == "error" for f in found)
    for write in writes:
        if isinstance(write, Create):
            message = f"{write.kind} {write.name} does not exist; wasp reconcile would create it"
            ref = object_ref({"metadata": {"namespace": owner["namespace"]}}, write.kind, write.name)
            found.append(Finding("Missing", "error", ref, "", message, owner))
        else:
            found += _drift(write, observed, owner)
    for report in dict.fromkeys(reports):
        if report.reason == "FailedWorkloadCompilation" and invalid:
            continue  # the field errors above say why, one finding each
        severity: Severity = (
            "info" if report.type == "Normal" else "warning" if report.reason in _WARNINGS else "error"
        )
        found.append(Finding(report.reason, severity, owner, "", report.message))
    known = next(iter(memo.values()), None)
    if known is not None and isinstance(known[1], Compiled):
        found += _extra(obj, known[1], observed, owner)
    return found


def judge_scheduling_object(obj: Obj, policies: PolicySet) -> list[Finding]:
    """A stored Workload, PodGroup or CompositePodGroup, validated as the apiserver would now."""
    return _validation(obj, validate_object(obj, policies=policies))[0]


def judge_pod(pod: Obj, pod_group_exists: t.Callable[[str, str], bool]) -> list[Finding]:
    """A Pod whose ``spec.schedulingGroup.podGroupName`` names no PodGroup of its namespace."""
    spec = pod.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    name = string(group.get("podGroupName")) if isinstance(group, dict) else ""
    namespace = string(meta(pod).get("namespace"))
    if not name or pod_group_exists(namespace, name):
        return []
    message = f"PodGroup {name} does not exist: the pod stays pending until it does"
    return [
        Finding("PodGroupNotFound", "error", object_ref(pod), "spec.schedulingGroup.podGroupName", message)
    ]


def judge_orphan(obj: Obj, governed_uids: t.Container[str]) -> list[Finding]:
    """A scheduling object wasp made (its managed-by label) whose controller is no governed
    object of its namespace: left over, until the garbage collector removes it."""
    labels = meta(obj).get("labels")
    if not isinstance(labels, dict) or any(labels.get(k) != v for k, v in MANAGED_BY_LABELS.items()):
        return []
    owner = controller_of(obj)
    if owner is not None and string(owner.get("uid")) in governed_uids:
        return []
    by = f"{owner.get('kind')} {owner.get('name')}" if owner is not None else "no controller"
    message = f"made by wasp, but its controller ({by}) is no governed object of this namespace"
    return [Finding("Orphaned", "warning", object_ref(obj), "", message)]


KINDS: t.Final[tuple[Kind, ...]] = ("Workload", "PodGroup", "CompositePodGroup")
