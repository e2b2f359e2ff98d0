"""What ``wasp reconcile`` does for one governed object: pure decisions, no I/O.

Given a governed object and the scheduling objects the reconciler's caches hold for it,
:func:`plan` returns the writes to make (create, patch a count in place) and the reports
to publish as Events. It mirrors the 1.37 Job controller (docs/design.md §7):

* discovery: a Workload counts as the object's only if its ``spec.controllerRef`` names the
  object **and** it has a controller ownerReference with the object's UID; a runtime group
  only if its ``workloadRef`` names that Workload and the object controls it. Anything else
  is someone else's and is never written (a name already taken is reported);
* several matches fall back to default scheduling and are reported, never "fixed";
* creation is create-if-absent with the deterministic names of
  :mod:`webhook.governed.workloads` (the names pods are stamped with); the Workload comes
  first, its groups once the Workload's UID exists (their second ownerReference needs it);
* after creation only ``minCount`` (templates and PodGroups) and a template's
  ``minGroupCount`` change (§7.3); nothing is ever deleted (the garbage collector does it);
* delegation (§7.5): a governed object with a controller owner and the
  ``group-template-name`` annotation gets only its PodGroup, in its parent's Workload.

wasp's own rule for "new" (docs/reconciler.md): objects are created unless pods of the
object already run without a ``schedulingGroup`` (they predate wasp's webhook; a gang made
now would hold back their replacements). Suspension changes nothing (docs/decisions.md §20).
"""

from __future__ import annotations

import typing as t
from dataclasses import replace

from webhook.compiler.annotations import GROUP_TEMPLATE_NAME, parent_composite_pod_group
from webhook.compiler.builder import Builder
from webhook.compiler.names import generate_pod_group_name
from webhook.compiler.types import BuildOptions
from webhook.governed.delegation import clashes, delegated_leaves, delegated_templates
from webhook.governed.grouping import native_reason, wasp_made, wasp_managed
from webhook.governed.layering import outer_owner
from webhook.governed.ownership import WAS_AWARE_KINDS, controller_of
from webhook.governed.reconcile_model import (
    Create,
    Kind,
    Mode,
    Observed,
    Patch,
    Plan,
    Report,
    controller_ref_names,
    controls,
    count_patch,
    counts,
    group_count,
    meta,
    only,
    string,
    taken,
    unstamped,
    warn,
    workload_owner,
    workload_ref,
)  # fmt: skip
from webhook.governed.result import Result
from webhook.governed.tree import build_tree
from webhook.governed.validation import validate_object
from webhook.governed.workloads import (
    MANAGED_BY_LABELS,
    Compiled,
    compile_object,
    controller_reference,
    gate_refusal,
)  # fmt: skip
from webhook.policy import Policy, PolicySet
from webhook.vocab.errors import BuildError

__all__ = [
    "Create", "Mode", "Observed", "Patch", "Plan", "Report", "management_mode", "native_reason", "plan",
    "reconciled_policies",
]  # fmt: skip

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]


def reconciled_policies(policies: PolicySet) -> tuple[Policy, ...]:
    """The policies whose objects wasp creates scheduling objects for."""
    return tuple(p for p in policies.policies if (p.group, p.kind) not in WAS_AWARE_KINDS)


def management_mode(obj: Obj, policies: PolicySet) -> Mode:
    """The Job controller's mode table (docs/design.md §7.1) for a governed object."""
    policy = policies.for_object(obj)
    if policy is None or (policy.group, policy.kind) in WAS_AWARE_KINDS:
        return Mode.NONE
    if "GenericWorkload" not in policies.gates:
        return Mode.NONE
    owner = controller_of(obj)
    annotations = meta(obj).get("annotations")
    if owner is not None and isinstance(annotations, dict) and GROUP_TEMPLATE_NAME in annotations:
        return Mode.DELEGATED  # the key alone counts, even with an empty value
    if outer_owner(obj, policies) is not None:
        return Mode.NONE  # a governed parent's Workload covers this object's pods (layering)
    # Any other controller (an operator, a pipeline) does not know WAS: the object is a root.
    # (The Job controller decides otherwise for its own kind, docs/decisions.md §4, which is why
    # Jobs and CronJobs are NONE above.)
    return Mode.BOTH


def _sync_group(
    obj: Obj, kind: Kind, wanted: Json, live_workload: str, observed: Observed, creatable: bool,
    writes: list[Create | Patch], reports: list[Report], extra_owner: Json | None,
) -> None:  # fmt: skip
    """One runtime group: discover (by workloadRef and control), then create, patch or report."""
    template = workload_ref(wanted)[1]
    mine = [
        g for g in observed.groups
        if g.get("kind") == kind and workload_ref(g) == (live_workload, template) and controls(obj, g)
    ]  # fmt: skip
    name = string(wanted["metadata"]["name"])
    if len(mine) > 1:
        names = ", ".join(sorted(string(meta(g).get("name")) for g in mine))
        reports.append(
            warn(
                f"Several{kind}s",
                f"{len(mine)} {kind}s for template {template} ({names}): none is used, none is changed",
            )
        )
        return
    if not mine:
        holder = observed.by_name(kind, name)
        if holder is not None:
            reports.append(taken(kind, name, holder, obj))
        elif not creatable:
            reports.append(unstamped(observed))
        else:
            body = wanted
            if extra_owner is not None:  # copied, not changed: compiled objects may be memoised
                owners = [*wanted["metadata"].get("ownerReferences", []), extra_owner]
                body = {**wanted, "metadata": {**wanted["metadata"], "ownerReferences": owners}}
            writes.append(Create(kind, body))
        return
    count_field, want = group_count(wanted)
    _, have = group_count(mine[0])
    if want is None or want == have:
        return
    if kind == "CompositePodGroup":
        # Every CompositePodGroup spec field is immutable (§5.4): say so instead of failing a patch.
        reports.append(
            warn(
                "CompositePodGroupImmutable",
                f"{name}: minGroupCount is {have}, the object asks for {want}; a CompositePodGroup cannot change",
            )
        )
        return
    ops = ({"op": "replace", "path": f"/spec/schedulingPolicy/gang/{count_field}", "value": want},)
    writes.append(Patch(kind, string(meta(mine[0]).get("name")), ops, f"minCount {have} → {want}"))


Memo = t.MutableMapping[str, tuple[str, "Compiled | Report"]]


def plan(
    obj: Obj,
    policies: PolicySet,
    observed: Observed,
    *,
    memo: Memo | None = None,
    verdict: Result | None = None,
) -> Plan:
    """The writes and reports for ``obj`` given what exists (see the module docstring).

    ``memo`` (uid → (resourceVersion, outcome)) lets a caller that plans one object several
    times in a row (the Workload, then its groups) validate and compile it once per version;
    compiled objects in it are never modified. ``verdict``: ``validate_object(obj)`` as the
    caller already has it (``wasp audit`` reports it too), so the object is not judged twice.
    """
    mode = management_mode(obj, policies)
    if mode is Mode.NONE:
        return Plan()
    if mode is Mode.DELEGATED:
        return _plan_delegated(obj, observed)
    policy = policies.for_object(obj)
    assert policy is not None  # management_mode found it
    native = native_reason(obj, policy, policies)
    if native is not None and not wasp_managed(obj, observed.workloads):
        return Plan(reports=(Report("Normal", "ManagedNatively", native),))
    m = meta(obj)
    uid, version = string(m.get("uid")), string(m.get("resourceVersion"))
    known = memo.get(uid) if memo is not None and version else None
    if known is not None and known[0] == version:
        outcome = known[1]
    else:
        outcome = _compile(obj, policy, policies, verdict)
        if memo is not None and version:
            memo[uid] = (version, outcome)
    if isinstance(outcome, Report):
        return Plan(reports=(outcome,))
    return _plan_root(obj, outcome, observed, delegated_templates(policy, obj, policies.gates))


def _compile(obj: Obj, policy: Policy, policies: PolicySet, verdict: Result | None) -> Compiled | Report:
    if verdict is None:
        verdict = validate_object(obj, policies=policies)
    if not verdict.allowed and not verdict.warned:
        # An invalid object is never compiled; the Event carries the field errors. One its
        # policy only warns about was admitted and its pods are stamped: it gets its groups, as
        # the Job controller gives a Job its objects whatever wasp's policy says of it.
        return warn("FailedWorkloadCompilation", "; ".join(e.error() for e in verdict.errors))
    refusal = gate_refusal(policy, policies.gates)
    if refusal is not None:
        return warn("FailedWorkloadCompilation", refusal)
    # Several Jobs delegating to one template would share one PodGroup (docs/decisions.md §27).
    clash = (
        clashes(policy, build_tree(policy, obj)[0], policies.gates)
        if delegated_leaves(policy, policies.gates)
        else []
    )
    if clash:
        return warn("DelegatedPodGroupNameClash", "; ".join(clash))
    try:
        return compile_object(policy, obj, uid=string(meta(obj).get("uid")))
    except BuildError as exc:
        return warn("FailedWorkloadCompilation", str(exc))


def _plan_root(
    obj: Obj, compiled: Compiled, observed: Observed, delegated: frozenset[str] = frozenset()
) -> Plan:
    name = string(meta(obj).get("name"))
    wanted = compiled.workload
    api_version, kind = string(obj.get("apiVersion")), string(obj.get("kind"))
    controlled = [
        w for w in observed.workloads if controller_ref_names(w, api_version, kind, name) and controls(obj, w)
    ]
    foreign = sorted(string(meta(w).get("name")) for w in controlled if not wasp_made(w))
    if foreign:
        # Its controller made it (it adopted WAS), or someone made it so: never raced, never
        # touched; the webhook's grouping cache sees it too and stamps nothing (§30).
        return Plan(
            reports=(
                Report(
                    "Normal",
                    "ManagedNatively",
                    f"Workload {', '.join(foreign)} names this object and is controlled by it but was not created "
                    "by wasp: its controller manages its scheduling objects; wasp creates nothing, changes "
                    "nothing and stamps no pod of it",
                ),
            )
        )
    mine = controlled
    creatable = observed.unstamped_pods == 0
    if len(mine) > 1:
        names = ", ".join(sorted(string(meta(w).get("name")) for w in mine))
        return only(
            "SeveralWorkloads",
            f"{len(mine)} Workloads are controlled by this object ({names}): nothing is changed and no new pod is "
            "stamped (docs/decisions.md §30): delete all but one",
        )
    wanted_name = string(wanted["metadata"]["name"])
    if not mine:
        holder = observed.by_name("Workload", wanted_name)
        if holder is not None:
            return Plan(reports=(taken("Workload", wanted_name, holder, obj),))
        if not creatable:
            return Plan(reports=(unstamped(observed),))
        return Plan(writes=(Create("Workload", wanted),), again=True)
    live = mine[0]
    live_name = string(meta(live).get("name"))
    patch = (
        count_patch(live, wanted)
        if live_name == wanted_name
        else f"it is named {live_name}, not {wanted_name}"
    )
    if isinstance(patch, str):
        # Pods are stamped with names derived from the compiled Workload; groups in another
        # structure would not match them (decision 21).
        return only(
            "UnsupportedWorkloadStructure",
            f"Workload {live_name}: {patch}; it is left alone, no group is created and no new pod is stamped for a "
            "template it lacks (docs/decisions.md §30): delete it and wasp creates its own",
        )
    writes: list[Create | Patch] = []
    reports: list[Report] = []
    ops, changed = patch
    if ops:
        writes.append(Patch("Workload", live_name, tuple(ops), "; ".join(changed)))
    owner = workload_owner(live)
    for group in compiled.composite_pod_groups:
        _sync_group(obj, "CompositePodGroup", group, live_name, observed, creatable, writes, reports, owner)
    for group in compiled.pod_groups:
        if workload_ref(group)[1] in delegated:
            continue  # the Job controller creates a delegated leaf's PodGroups
        seen = observed
        if workload_ref(group)[1] in compiled.repeated:
            # The groups of a repeated leaf share their template: each is found by its name.
            seen = replace(
                observed, groups=[g for g in observed.groups if meta(g).get("name") == meta(group)["name"]]
            )
        _sync_group(obj, "PodGroup", group, live_name, seen, creatable, writes, reports, owner)
    reports.extend(_extra_groups(obj, compiled, live_name, observed))
    if observed.unstamped_pods:
        # Made while the webhook was down under Ignore (or before the gate was on) after the
        # Workload: the webhook stamps no new pod of it (§30); what was stamped before waits.
        reports.append(
            warn(
                "PodsOutsideGroup",
                f"{observed.unstamped_pods} pod(s) of this object run outside its group (made while wasp's "
                "webhook was down under failurePolicy Ignore, or before the GenericWorkload gate was on): no new "
                "pod is stamped; pods stamped earlier wait for a gang that may not form: recreate the object",
            )
        )
    return Plan(tuple(writes), tuple(dict.fromkeys(reports)))


def _extra_groups(obj: Obj, compiled: Compiled, live_name: str, observed: Observed) -> list[Report]:
    """Groups of a repeated leaf beyond the count the object now asks for: never deleted
    (their pods may still run), reported."""
    wanted = {meta(g)["name"] for g in compiled.pod_groups}
    extra = sorted(
        string(meta(g).get("name")) for g in observed.groups
        if g.get("kind") == "PodGroup" and workload_ref(g)[0] == live_name
        and workload_ref(g)[1] in compiled.repeated and controls(obj, g) and meta(g).get("name") not in wanted
    )  # fmt: skip
    if not extra:
        return []
    return [warn("ExtraPodGroups", f"{', '.join(extra)}: beyond the groups the object asks for; not deleted")]


def _first_leaf(workload: Obj) -> str:
    return next((n for n, tpl in counts(workload).items() if tpl.count_field == "minCount"), "")


def _plan_delegated(obj: Obj, observed: Observed) -> Plan:
    """A delegated child (docs/design.md §7.5): its PodGroup in the parent's Workload."""
    owner = controller_of(obj)
    assert owner is not None  # management_mode checked it
    m = meta(obj)
    parents = [
        w for w in observed.workloads
        if controller_ref_names(w, string(owner.get("apiVersion")), string(owner.get("kind")), string(owner.get("name")))
    ]  # fmt: skip
    if not parents:
        # The parent may not have its Workload yet: retry with backoff (decision 22).
        return only(
            "ParentWorkloadMissing",
            f"no Workload of {owner.get('kind')} {owner.get('name')} exists yet",
            retry=True,
        )
    if len(parents) > 1:
        return only(
            "SeveralWorkloads",
            f"{len(parents)} Workloads name {owner.get('kind')} {owner.get('name')} as controller: default scheduling",
        )
    parent = parents[0]
    annotations = m.get("annotations") or {}
    template = string(annotations.get(GROUP_TEMPLATE_NAME)) or _first_leaf(parent)
    parent_name = string(meta(parent).get("name"))
    name = generate_pod_group_name(parent_name, template)
    options = BuildOptions(owner=controller_reference(obj, string(m.get("uid"))))
    try:
        wanted = Builder.from_existing_workload(parent, options).new_pod_group(name, template)
    except BuildError as exc:
        return Plan(reports=(warn("TemplateNotFound", str(exc)),))
    wanted["metadata"]["labels"] = dict(MANAGED_BY_LABELS)
    composite = parent_composite_pod_group(annotations)
    if composite:
        wanted["spec"]["parentCompositePodGroupName"] = composite
    mine = [
        g
        for g in observed.groups
        if g.get("kind") == "PodGroup" and workload_ref(g)[0] == parent_name and controls(obj, g)
    ]
    if not mine:
        holder = observed.by_name("PodGroup", name)
        if holder is not None:
            sibling = controller_of(holder)
            if sibling is not None and sibling.get("kind") == obj.get("kind"):
                # docs/decisions.md §18: siblings on one template compute the same name.
                return only(
                    "PodGroupNameClash",
                    f"PodGroup {name} already belongs to {sibling.get('kind')} {sibling.get('name')}: siblings delegating to template {template} share one name",
                )
            return Plan(reports=(taken("PodGroup", name, holder, obj),))
        if observed.unstamped_pods:
            return Plan(reports=(unstamped(observed),))
        return Plan(writes=(Create("PodGroup", wanted),))
    writes: list[Create | Patch] = []
    reports: list[Report] = []
    _sync_group(obj, "PodGroup", wanted, parent_name, Observed(groups=mine), False, writes, reports, None)
    return Plan(tuple(writes), tuple(reports))
