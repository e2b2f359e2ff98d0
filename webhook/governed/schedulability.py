"""Schedulability: a gang wasp admits is one that can form (docs/schedulability.md).

The structural and policy layers judge what the blocks say; this layer judges whether the
cluster can ever satisfy them, from what the policy knows of its controller
(``spec.schedulability``, :mod:`webhook.policy.schedulability`): which pods exist before
anything waits, how many exist at once, which scheduler places them, which pod templates the
blocks could have been written on by mistake, and which child Jobs the cluster will judge.

Every finding is ``(rule id, field error)``; :func:`schedulability` applies the policy's action
for each rule (deny: an error, warn: a warning, off: nothing). On update, a finding the stored
object had already is a warning, never a denial: an object admitted before must stay editable.
"""

from __future__ import annotations

import typing as t
from dataclasses import replace

from webhook.compiler.resolve import resolve_scheduling_config
from webhook.governed.counts import evaluate
from webhook.governed.tree import ObjectNode, build_tree, get_path
from webhook.policy import Policy
from webhook.policy.schedulability import JobTemplate, PodLimit, PodTemplate
from webhook.vocab.field import OMIT, FieldError, FieldPath, forbidden, invalid

__all__ = ["BLOCKS_ANNOTATION", "Finding", "HeldBack", "JudgeJob", "findings", "held_back", "schedulability"]

BLOCKS_ANNOTATION: t.Final = "scheduling.wasp.dev/blocks"
Obj = t.Mapping[str, t.Any]
Finding = tuple[str, FieldError]
# The scheduler a template's pods get, and the field that sets it.
Scheduler = tuple[str, FieldPath]
_SCHEDULER_NAME: t.Final = FieldPath.of("spec", "schedulerName")
_PRIORITY_CLASS_NAME: t.Final = FieldPath.of("spec", "priorityClassName")
# Judges a batch/v1 Job as the cluster will (the batch-job policy's validation); ``None`` when
# no Job policy is loaded.
JudgeJob = t.Callable[[Obj], list[FieldError]]


def schedulability(
    policy: Policy, obj: Obj, old: Obj | None, nodes: list[ObjectNode], *, judge_job: JudgeJob | None = None
) -> tuple[list[FieldError], list[str]]:
    """The errors and warnings of the schedulability rules, by the policy's settings."""
    rules = policy.schedulability
    found = [f for f in findings(policy, obj, nodes, judge_job=judge_job) if rules.action(f[0]) != "off"]
    if not found:
        return [], []
    before: set[tuple[str, str]] = set()
    if old is not None and any(rules.action(rule) == "deny" for rule, _ in found):
        old_nodes = build_tree(policy, old)[0].walk()
        before = {(rule, str(e.field)) for rule, e in findings(policy, old, old_nodes, judge_job=judge_job)}
    errors, warnings = [], []
    said: set[str] = set()
    # Denials first, so a field both denied and warned about is denied.
    for rule, err in sorted(found, key=lambda f: rules.action(f[0]) != "deny"):
        if str(err.field) in said:
            continue  # one finding per field (a child Job judged as a Job may repeat the parent's)
        said.add(str(err.field))
        if rules.action(rule) == "deny" and (rule, str(err.field)) not in before:
            errors.append(err)
        else:
            warnings.append(f"{err.error()} (schedulability rule {rule})")
    # Templates that inherit one field (Volcano tasks, the Job's spec.schedulerName) say it once.
    return errors, list(dict.fromkeys(warnings))


class HeldBack(t.NamedTuple):
    """A group whose controller creates only ``first`` of its pods before others are ready."""

    group: FieldPath
    first: int
    why: str
    fix: str


def held_back(policy: Policy, obj: Obj) -> list[HeldBack]:
    """The policy's ``startOrder`` entries that hold for ``obj``, whatever its gang asks: what
    ``wasp explain`` reads to tell a sequenced start from a controller that is merely slow."""
    out: list[HeldBack] = []
    for node in build_tree(policy, obj)[0].walk():
        for limit in policy.schedulability.limits:
            if limit.rule != "sequenced-start" or limit.node != node.spec.id:
                continue
            count = _limit_count(limit, node.context)
            if count is not None:
                words = (
                    limit.explain.replace("{count}", str(count)),
                    limit.fix.replace("{count}", str(count)),
                )
                out.append(HeldBack(node.path, count, *words))
    return out


def findings(
    policy: Policy, obj: Obj, nodes: list[ObjectNode], *, judge_job: JudgeJob | None
) -> list[Finding]:
    """Every schedulability finding of ``obj``, each with its rule id."""
    out: list[Finding] = []
    blocks = any(n.block is not None for n in nodes)
    # Each leaf's gang is resolved once, for every rule below.
    needs = [(node, _min_count(node)) for node in nodes]
    gang = any(need is not None for _, need in needs)
    for node, need in needs:
        if need is not None:
            out.extend(_limits(policy, node, need))
    members: list[tuple[FieldPath, Obj, Scheduler]] = []
    for entry in policy.schedulability.pod_templates:
        for place, template in _places(obj, entry.path, entry.for_each):
            out.extend(_unread_blocks(policy, place, template, nodes))
            if entry.member and blocks:
                out.extend(_names_pod_group(place, template, nodes, policy.root.path))
            if entry.member and gang:
                scheduler = _scheduler(obj, entry, place, template)
                members.append((place, template, scheduler))
                out.extend(_foreign_scheduler(policy, scheduler))
    if not policy.root.composite:  # one leaf: every member template's pods are one group
        out.extend(_mixed(members))
    for job in policy.schedulability.job_templates:
        out.extend(_job_templates(policy, obj, job, nodes, blocks=blocks, judge_job=judge_job))
    return out


def _places(obj: Obj, path: FieldPath, for_each: FieldPath | None) -> list[tuple[FieldPath, Obj]]:
    """``(absolute path, template)`` of each template a ``podTemplates``/``jobTemplates`` entry names."""
    if for_each is None:
        places = [path]
    else:
        items = get_path(obj, for_each)
        places = [for_each.index(i) / path for i in range(len(items))] if isinstance(items, list) else []
    out: list[tuple[FieldPath, Obj]] = []
    for place in places:
        value = get_path(obj, place)
        if isinstance(value, dict):
            out.append((place, value))
    return out


def _min_count(node: ObjectNode) -> int | None:
    """The gang's effective minCount (explicit, or the controller's default), or ``None``."""
    if node.spec.composite or node.block is None:
        return None
    try:
        cfg = resolve_scheduling_config(node)
    except Exception:  # noqa: BLE001 - a malformed block is the structural layer's error
        return None
    gang = cfg.policy.gang if cfg.policy is not None else None
    return _integer(gang.min_count) if gang is not None else None


def _explicit(node: ObjectNode) -> int | None:
    policy = node.block.get("schedulingPolicy") if isinstance(node.block, dict) else None
    gang = policy.get("gang") if isinstance(policy, dict) else None
    return _integer(gang.get("minCount")) if isinstance(gang, dict) else None


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _limits(policy: Policy, node: ObjectNode, need: int) -> list[Finding]:
    """``startOrder``/``podsAtOnce``: the gang of ``need`` pods needs more than ever exist together."""
    # No more pods exist at once than the pod count: a gang above it is the plain bound's to
    # report (minCount <= parallelism, in upstream's words for a Job), or not to (a paused
    # workload, decision 10), so job-concurrency judges only what the pod count allows.
    above = node.pod_count is not None and need > node.pod_count
    out: list[Finding] = []
    for limit in policy.schedulability.limits:
        if limit.node != node.spec.id or (above and limit.rule == "job-concurrency"):
            continue
        count = _limit_count(limit, node.context)
        if count is None or need <= count:
            continue
        out.append((limit.rule, _limit_error(node, limit, need, count)))
    return out


def _limit_count(limit: PodLimit, context: Obj) -> int | None:
    if limit.when_program is not None:
        holds, failure = evaluate(limit.when_program, context)
        if failure is not None or holds is not True:
            return None
    if limit.count_path is not None:
        return _integer(get_path(context, limit.count_path))
    assert limit.count_program is not None  # compiled at load
    value, failure = evaluate(limit.count_program, context)
    return _integer(value) if failure is None else None


def _limit_error(node: ObjectNode, limit: PodLimit, need: int, count: int) -> FieldError:
    explain = limit.explain.replace("{count}", str(count))
    fix = limit.fix.replace("{count}", str(count))
    gang = node.path.child("schedulingPolicy", "gang")
    explicit = _explicit(node)
    if explicit is not None:
        return invalid(
            gang.child("minCount"), explicit, f"the gang can never form: {explain}; {fix}", origin=limit.rule
        )
    detail = (
        f"the gang can never form: minCount is unset, so it waits for every pod, {node.pod_count_shown}, "
        f"but {explain}; {fix}"
    )
    policy = node.block.get("schedulingPolicy") if isinstance(node.block, dict) else None
    value = policy.get("gang") if isinstance(policy, dict) else None
    return invalid(gang, value if value is not None else OMIT, detail, origin=limit.rule)


def _read_at(path: FieldPath, nodes: list[ObjectNode]) -> bool:
    """Whether the tree reads ``path``: a node's blocks, or a field exclusive with them (asked
    only of a template that carries blocks or names a group, so few objects pay for it)."""
    shown = str(path)
    return any(
        str(n.path) == shown or any(str(n.context_path / p) == shown for p in n.spec.exclusive_with)
        for n in nodes
    )


def _unread_blocks(policy: Policy, place: FieldPath, template: Obj, nodes: list[ObjectNode]) -> list[Finding]:
    """Blocks written on a pod or Job template, where no reader looks."""
    annotations = (
        template.get("metadata", {}).get("annotations")
        if isinstance(template.get("metadata"), dict)
        else None
    )
    if not isinstance(annotations, dict) or BLOCKS_ANNOTATION not in annotations:
        return []
    path = place.child("metadata", "annotations").key(BLOCKS_ANNOTATION)
    if _read_at(path, nodes):
        return []
    where = policy.root.path
    detail = (
        f"the {policy.name} policy reads the blocks only at {where}, so blocks on this template would be "
        f"ignored and its pods not grouped as written: move them to {where}"
    )
    return [("blocks-unread", forbidden(path, detail, origin="blocks-unread"))]


def _names_pod_group(
    place: FieldPath, template: Obj, nodes: list[ObjectNode], root: FieldPath
) -> list[Finding]:
    """A pod template that names its own group beside wasp's blocks (docs/decisions.md §3)."""
    spec = template.get("spec")
    if not isinstance(spec, dict) or spec.get("schedulingGroup") is None:
        return []
    path = place.child("spec", "schedulingGroup")
    if _read_at(path, nodes):
        return []
    detail = (
        f"may not be set together with the blocks at {root}: these pods would join the PodGroup named "
        "here, and the one wasp creates would wait for pods that never join it; remove one of the two"
    )
    return [("template-names-podgroup", forbidden(path, detail, origin="template-names-podgroup"))]


def _scheduler(obj: Obj, entry: PodTemplate, place: FieldPath, template: Obj) -> Scheduler:
    """The scheduler a template's pods get, and the field the user sets it with."""
    own = get_path(template, _SCHEDULER_NAME)
    if isinstance(own, str) and own:
        return own, place.child("spec", "schedulerName")
    if entry.scheduler_from is not None:
        inherited = get_path(obj, entry.scheduler_from)
        if isinstance(inherited, str) and inherited:
            return inherited, entry.scheduler_from
    return entry.scheduler_default, place.child("spec", "schedulerName")


def _foreign_scheduler(policy: Policy, scheduler: Scheduler) -> list[Finding]:
    name, path = scheduler
    schedulers = policy.schedulability.schedulers
    if name in schedulers:
        return []
    detail = (
        f"pods of this template are placed by scheduler {name!r}, which is not one that implements "
        f"Workload-Aware Scheduling here ({', '.join(sorted(schedulers))}): nothing enforces their gang; "
        "use a scheduler that does, or list it in the schedulers setting"
    )
    return [("foreign-scheduler", invalid(path, name, detail, origin="foreign-scheduler"))]


def _mixed(members: list[tuple[FieldPath, Obj, Scheduler]]) -> list[Finding]:
    """One gang, one scheduler and one priority class (kubernetes#139293 marks a PodGroup
    whose pods name different schedulers as failed)."""
    out: list[Finding] = []
    first_scheduler: Scheduler | None = None
    first_priority: tuple[str, FieldPath] | None = None
    for place, template, (name, path) in members:
        if first_scheduler is None:
            first_scheduler = (name, path)
        elif name != first_scheduler[0]:
            detail = (
                f"the pods of one gang must name one scheduler: {first_scheduler[1]} is "
                f"{first_scheduler[0]!r}, and a PodGroup whose pods name different schedulers fails; "
                "give every template of the gang one schedulerName"
            )
            out.append(("mixed-group", invalid(path, name, detail, origin="mixed-group")))
        priority = get_path(template, _PRIORITY_CLASS_NAME)
        if isinstance(priority, str) and priority:
            path = place.child("spec", "priorityClassName")
            if first_priority is None:
                first_priority = (priority, path)
            elif priority != first_priority[0]:
                detail = (
                    f"the pods of one gang must share one priority class: {first_priority[1]} is "
                    f"{first_priority[0]!r}; give every template of the gang one priorityClassName"
                )
                out.append(("mixed-group", invalid(path, priority, detail, origin="mixed-group")))
    return out


def _job_templates(
    policy: Policy,
    obj: Obj,
    entry: JobTemplate,
    nodes: list[ObjectNode],
    *,
    blocks: bool,
    judge_job: JudgeJob | None,
) -> list[Finding]:
    """A child Job template judged as the cluster will judge each Job made from it."""
    out: list[Finding] = []
    for place, template in _places(obj, entry.path, entry.for_each):
        out.extend(_unread_blocks(policy, place, template, nodes))
        spec = template.get("spec")
        if not isinstance(spec, dict) or spec.get("scheduling") is None:
            continue
        path = place.child("spec", "scheduling")
        if blocks:
            detail = (
                f"the blocks at {policy.root.path} already group this Job's pods; a Job's own gang beside "
                "them is a second group for the same pods, and the Job is denied once wasp stamps its pod "
                "template: remove one of the two"
            )
            out.append(("child-scheduling", forbidden(path, detail, origin="child-scheduling")))
        if judge_job is None:
            continue
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": f"{name or 'job'}-0"},
            "spec": spec,
        }
        for err in judge_job(job):
            out.append(("child-scheduling", replace(err, field=place / err.field)))
    return out
