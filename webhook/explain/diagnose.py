"""``wasp explain``'s answer for one governed object: pure, from a :class:`Snapshot`.

One path with the webhook, the reconciler and ``wasp audit``: the object is judged by
:func:`~webhook.governed.validation.validate_object`, compiled by
:func:`~webhook.governed.workloads.compile_object` (the names the reconciler creates and the
webhook stamps), its Workload found by the reconciler's discovery rules
(:func:`~webhook.governed.reconcile_model.controller_ref_names` and ``controls``), and what the
reconciler would do about it comes from :func:`webhook.governed.drift.judge` (the reconciler's
own :func:`~webhook.governed.reconcile.plan`). Pods are then matched to the compiled groups.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.explain import pods as pod_rules
from webhook.explain import quorum
from webhook.explain.findings import Finding
from webhook.explain.selection import belongs, pod_selector
from webhook.explain.snapshot import Snapshot, ref
from webhook.explain.tree import WorkloadNode, active, build, group_of
from webhook.governed.drift import Finding as AuditFinding
from webhook.governed.drift import judge
from webhook.governed.ownership import WAS_AWARE_KINDS, controller_of
from webhook.governed.reconcile import Observed
from webhook.governed.reconcile_model import controller_ref_names, controls, meta, string
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object
from webhook.policy import Policy, PolicySet
from webhook.policy.schedulability import RULES as SCHEDULABILITY_RULES
from webhook.vocab.errors import BuildError

__all__ = ["Explanation", "Options", "explain", "summary_line"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
Verdict = t.Literal["runs", "can-run", "blocked"]
SCHEMA_VERSION: t.Final = "wasp.dev/v1alpha1"
ESTIMATE: t.Final = "capacity is an estimate from a snapshot of nodes and pods; the scheduler decides"


@dataclass(frozen=True)
class Options:
    """``schedulers``: the scheduler names that implement WAS; ``pod_selector``: a label
    selector (``k=v,...``) for the object's pods, over the built-in table; ``capacity``:
    estimate capacity (``wasp audit``'s summary does not read nodes)."""

    schedulers: frozenset[str] = frozenset({"default-scheduler"})
    pod_selector: str = ""
    capacity: bool = True


@dataclass
class Explanation:
    target: Json | None
    trail: list[str]
    tree: WorkloadNode | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if self.tree is not None and self.tree.runs:
            return "runs"
        return "blocked" if any(f.level == "error" for f in self.findings) else "can-run"

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == "blocked" else 0

    def to_json(self) -> Json:
        return {"apiVersion": SCHEMA_VERSION, "kind": "Explanation", "target": self.target, "trail": self.trail,
                "verdict": self.verdict, "exitCode": self.exit_code,
                "tree": self.tree.to_json() if self.tree is not None else None,
                "findings": [f.to_json() for f in self.findings], "notes": self.notes, "error": None}  # fmt: skip


def _invalid(obj: Obj, policies: PolicySet, owner: Json) -> tuple[list[Finding], bool]:
    """The findings of wasp's verdict on the object, and whether they end the explanation.

    An object that breaks only schedulability rules (admitted before them, or in warn mode)
    still compiles and runs its controller: the explanation goes on, so the runtime evidence
    stands beside the rule. A sequenced start is the runtime's ``held-back-sequenced``, which
    shows how many pods exist; the other rules are ``never-forms``."""
    verdict = validate_object(obj, policies=policies)
    if verdict.allowed or verdict.warned:
        return [], False
    if any(e.origin not in SCHEDULABILITY_RULES for e in verdict.errors):
        return [Finding(
            "invalid", owner, "wasp does not admit the object as it is: no Workload is compiled for it",
            tuple(e.error() for e in verdict.errors), "fix the fields listed (wasp validate shows the same errors)",
            {"errors": [{"type": e.type.value, "field": e.path} for e in verdict.errors]},
        )], True  # fmt: skip
    rules = [e for e in verdict.errors if e.origin != "sequenced-start"]
    if not rules:
        return [], False
    return [Finding(
        "never-forms", owner, "the gang can never form as the object is written",
        tuple(f"{e.error()} (rule {e.origin})" for e in rules), "change the fields listed as each message says",
        {"errors": [{"type": e.type.value, "field": e.path, "rule": e.origin} for e in rules]},
    )], False  # fmt: skip


def _live_workload(obj: Obj, workloads: t.Sequence[Obj]) -> Obj | None:
    """The object's Workload by the reconciler's (and the Job controller's) discovery rule."""
    name, api_version, kind = (
        string(meta(obj).get("name")),
        string(obj.get("apiVersion")),
        string(obj.get("kind")),
    )
    mine = [w for w in workloads if controller_ref_names(w, api_version, kind, name) and controls(obj, w)]
    return mine[0] if len(mine) == 1 else None


def _creator(policy: Policy) -> tuple[str, str]:
    """Who creates the objects of ``policy``'s kind, and the fix when they do not exist."""
    if (policy.group, policy.kind) in WAS_AWARE_KINDS:
        return ("the 1.37 Job controller creates it",
                "turn on GenericWorkload and WorkloadWithJob on kube-apiserver and kube-controller-manager; the Job "
                "controller creates objects only for a new Job, so recreate the Job")  # fmt: skip
    return ("wasp reconcile creates it",
            "run wasp reconcile (docs/reconciler.md) with the same policies and feature gates, and read its Events "
            "on the object")  # fmt: skip


def _structure(obj: Obj, policy: Policy, policies: PolicySet, snapshot: Snapshot, pods: t.Sequence[Obj],
               tree: WorkloadNode, owner: Json, judged: t.Sequence[AuditFinding] | None,
               ) -> tuple[list[Finding], list[str]]:  # fmt: skip
    """Missing objects and what the reconciler's plan reports; the plan's words about pods
    outside the groups are returned apart, for ``half-grouped``."""
    found: list[Finding] = []
    about_pods: list[str] = []
    creator, fix = _creator(policy)
    missing = {g.name for top in tree.groups for g in top.walk() if not g.exists}
    waiting = [p for p in pods if active(p) and group_of(p) in missing]
    if (policy.group, policy.kind) not in WAS_AWARE_KINDS:
        uid = string(meta(obj).get("uid"))
        unstamped = sum(1 for p in pods if not group_of(p) and (controller_of(p) or {}).get("uid") == uid)
        observed = Observed(snapshot.workloads, snapshot.groups, snapshot.by_name, unstamped)
        for f in judged if judged is not None else judge(obj, policies, observed):
            if f.type == "StartedWithoutGroups":
                about_pods.append(f.message)
            elif f.type in _PLAN_REPORTS:
                blocking = _PLAN_REPORTS[f.type]
                found.append(Finding("reconcile-blocked", f.object, f.message, (f"{f.type}: {f.message}",),
                                     "see docs/reconciler.md for this reason", {"reason": f.type},
                                     None if blocking else "warning"))  # fmt: skip
    blocked = any(f.level == "error" for f in found)
    if not tree.exists and not blocked:
        evidence = [
            f"Workload {tree.name} (controllerRef {obj.get('kind')} {meta(obj).get('name')}) was not found: {creator}"
        ]
        if waiting:
            evidence.append(f"{len(waiting)} pod(s) name its groups and wait: {pod_rules.names(waiting)}")
        found.append(Finding("no-workload", {**owner, "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                                             "name": tree.name}, f"Workload {tree.name} does not exist",
                             tuple(evidence), fix, {"workload": tree.name}))  # fmt: skip
    elif tree.exists and missing and not blocked:
        evidence = [f"{', '.join(sorted(missing))} not found: {creator}"]
        if waiting:
            evidence.append(f"{len(waiting)} pod(s) name them and wait: {pod_rules.names(waiting)}")
        found.append(Finding("no-podgroup", owner, f"{len(missing)} group(s) of Workload {tree.name} do not exist",
                             tuple(evidence), fix, {"missing": sorted(missing)}))  # fmt: skip
    return found, about_pods


# What the reconciler's plan (and the audit's comparison with it) reports about the object, and
# whether it keeps the groups from being created (True) or is worth knowing (False).
_PLAN_REPORTS: t.Final = {
    "NameTaken": True, "SeveralWorkloads": True, "SeveralPodGroups": True, "SeveralCompositePodGroups": True,
    "UnsupportedWorkloadStructure": True, "DelegatedPodGroupNameClash": True, "FailedWorkloadCompilation": True,
    "PodGroupNameClash": True, "TemplateNotFound": True, "ParentWorkloadMissing": False,
    "CompositePodGroupImmutable": False, "ExtraPodGroups": False, "MinCountDrift": False, "Extra": False,
}  # fmt: skip


def _dropped(pods: t.Sequence[Obj], owner: Json) -> list[Finding]:
    ungrouped = [p for p in pods if not group_of(p)]
    evidence = ["scheduling.k8s.io workloads and podgroups are not served in a version wasp reads (v1beta1): "
                "feature gate GenericWorkload is off on kube-apiserver, which then drops spec.schedulingGroup "
                "from every pod it creates, or the cluster serves another version (the notes name it)"]  # fmt: skip
    if ungrouped:
        evidence.append(
            f"{len(ungrouped)} pod(s) of the workload have no spec.schedulingGroup: {pod_rules.names(ungrouped)}"
        )
    return [Finding("schedulinggroup-dropped", owner, "the cluster does not serve workload-aware scheduling",
                    tuple(evidence), "turn on GenericWorkload on kube-apiserver (and kube-scheduler), then recreate "
                    "the workload", {"ungrouped": len(ungrouped)})]  # fmt: skip


def explain(snapshot: Snapshot, policies: PolicySet, options: Options = Options(),
            judged: t.Sequence[AuditFinding] | None = None) -> Explanation:  # fmt: skip
    """The tree, the findings and the verdict for the snapshot's governed object. ``judged``:
    what :func:`webhook.governed.drift.judge` found for it already (``wasp audit`` has it), so
    the reconciler's plan is not asked twice."""
    obj = snapshot.target
    policy = policies.for_object(obj) if obj is not None else None
    if obj is None or policy is None:
        nothing = Finding("not-governed", None, "no governed object was found from what was named",
                        tuple(snapshot.trail), "name an object of a governed kind (batch Job, or a kind whose policy is "
                        "loaded with --policies or --integrations)")  # fmt: skip
        return Explanation(None, snapshot.trail, findings=[nothing])
    owner = ref(obj)
    out = Explanation(owner, snapshot.trail)
    if (policy.group, policy.kind) == ("batch", "CronJob"):
        # Each Job a CronJob creates is a root with its own Workload (docs/decisions.md §4).
        out.findings = [Finding("not-governed", owner, "a CronJob has no gang of its own: each of its Jobs has one",
                                (f"{obj.get('kind')} {meta(obj).get('name')} creates Jobs, each compiled on its own",),
                                "explain one of its Jobs: wasp explain job/NAME")]  # fmt: skip
        return out
    invalid, fatal = _invalid(obj, policies, owner)
    if fatal:
        out.findings = invalid
        return out
    try:
        compiled = compile_object(policy, obj, uid=string(meta(obj).get("uid")))
    except BuildError as exc:
        out.findings = [Finding("invalid", owner, "the object does not compile to a Workload", (str(exc),),
                                "fix the object's blocks (wasp compile shows the same error)")]  # fmt: skip
        return out
    names = frozenset(string(meta(g).get("name")) for g in compiled.pod_groups)
    selector = pod_selector(obj, policies, names, options.pod_selector)
    pods = [p for p in snapshot.pods if belongs(p, selector)]
    live = _live_workload(obj, snapshot.workloads)
    if live is not None and string(meta(live).get("name")) != string(meta(compiled.workload).get("name")):
        live = None  # another structure: the plan reports it (UnsupportedWorkloadStructure)
    out.tree = tree = build(compiled, live is not None, snapshot.by_name, pods)
    namespace = owner["namespace"]

    def exists(ns: str, name: str) -> bool:
        return ns == namespace and snapshot.by_name("PodGroup", name) is not None

    if not snapshot.was_served:
        out.findings = _dropped([p for p in pods if active(p)], owner)
        out.notes += _unread(snapshot)
        return out
    structure, about_pods = _structure(obj, policy, policies, snapshot, pods, tree, owner, judged)
    found = [*invalid, *structure]
    found += pod_rules.missing_groups(pods, exists, names, namespace)
    found += pod_rules.grouping(pods, names, exists, owner, about_pods)
    found += pod_rules.foreign_schedulers(pods, options.schedulers, owner)
    found += pod_rules.second_gangs(pods, owner)
    if tree.runs:
        # Running: nothing keeps it from running; what is left is worth knowing, not blocking.
        out.findings = [f if f.level != "error" else _warning(f) for f in found]
        return out
    suspended = quorum.suspension(obj, owner)
    found.extend(suspended)
    short = [g for g in tree.leaves() if g.exists and g.verdict == "waiting-for-pods"]
    # Pods that exist but are not in the group say why it is short; do not blame the controller.
    if short and not any(f.code in ("podgroup-missing", "half-grouped") for f in found):
        found += quorum.creation(obj, policy, short, snapshot.events, owner, bool(suspended))
    for group in tree.leaves():
        if group.verdict != "pending":
            continue
        found += quorum.scheduling(group, snapshot.events)
        if options.capacity:
            found += quorum.capacity(group, snapshot.nodes, snapshot.usage, snapshot.unread)
    out.findings = found
    if any(f.code in ("insufficient-capacity",) for f in found) or (options.capacity and any(
            g.verdict == "pending" for g in tree.leaves())):  # fmt: skip
        out.notes.append(ESTIMATE)
    out.notes += _unread(snapshot)
    return out


def _unread(snapshot: Snapshot) -> list[str]:
    # Nodes and pods not read are the capacity check's to report (capacity-unknown).
    return [f"not read: {what}: {why}" for what, why in sorted(snapshot.unread.items())
            if what not in ("nodes", "pods")]  # fmt: skip


def _warning(finding: Finding) -> Finding:
    return Finding(finding.code, finding.object, finding.message, finding.evidence, finding.fix, finding.detail,
                   "warning")  # fmt: skip


def summary_line(answer: Explanation) -> str:
    """One line for ``wasp audit``: the verdict and the finding codes."""
    codes = ", ".join(dict.fromkeys(f.code for f in answer.findings))
    return answer.verdict + (f" ({codes})" if codes else "")
