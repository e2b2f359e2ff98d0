"""``validate_object``: the one function behind the validating webhook and ``wasp validate``.

Two layers on every node of a governed object's tree, at the user's own field paths:

1. the structural layer (:mod:`webhook.declarative`; skipped when the policy turns declarative
   validation off), on the node's embedding as a whole, building blocks included;
2. the controller-policy layer: the compiler's ``Validate`` (tree check, closed allow-lists,
   basic+all), pod-count bounds, exclusive fields and the policy's update rules.

``Workload``/``PodGroup``/``CompositePodGroup`` manifests get the scheduling API's own
validation. Objects no policy governs are *skipped*, never valid or invalid.
"""

from __future__ import annotations

import typing as t

from webhook import scheduling_objects
from webhook.compiler.builder import Builder
from webhook.compiler.resolve import resolve_scheduling_config
from webhook.declarative import NO_OLD, BlockType, validate_block
from webhook.governed.layering import outer_owner
from webhook.governed.result import Result, Status
from webhook.governed.schedulability import JudgeJob, schedulability
from webhook.governed.tree import ObjectNode, build_tree, get_path
from webhook.governed.updates import update_errors
from webhook.governed.workloads import workload_refusal
from webhook.policy import Policy, PolicySet
from webhook.vocab.equality import semantic_equal
from webhook.vocab.field import FieldError, duplicate, forbidden, invalid, required
from webhook.vocab.formats import dns_label
from webhook.vocab.gates import FeatureGates

__all__ = ["validate_object", "validate_governed"]

Obj = t.Mapping[str, t.Any]


def validate_object(obj: object, old_obj: object = None, *, policies: PolicySet) -> Result:
    """Judge ``obj`` (and, on update, the change from ``old_obj``).

    ``old_obj`` is ``None`` on CREATE. The objects are never modified. Never raises on
    malformed input: a non-mapping gives an ``error`` status, bad fields give field errors.
    """
    if not isinstance(obj, dict):
        return Result(Status.ERROR, reason=f"not a Kubernetes object: a {type(obj).__name__}, not a mapping")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        return Result(
            Status.ERROR, reason="not a Kubernetes object: apiVersion and kind are required strings"
        )
    old = old_obj if isinstance(old_obj, dict) else None
    group, _, version = api_version.rpartition("/")
    builtin = scheduling_objects.VALIDATORS.get((group, kind))
    if builtin is not None:
        if version not in scheduling_objects.SERVED_VERSIONS[kind]:
            return Result.skipped(f"{api_version} {kind} is not served by Kubernetes 1.37", ungoverned=True)
        findings = builtin(obj, old, gates=policies.gates)
        return Result.judged(f"{group}/{kind}", list(findings.errors), list(findings.warnings))
    policy = policies.for_kind(api_version, kind)
    if policy is None:
        return Result.skipped(f"no policy governs {api_version} {kind}", ungoverned=True)
    outer = outer_owner(obj, policies)
    if outer is not None:
        # Layering (docs/decisions.md §27): the outer object's Workload covers this one, whose
        # blocks (copies of the outer's, or its own) have no effect and are not judged.
        ref = outer[1]
        return Result.skipped(
            f"deferred to its controller {ref.get('kind')} {ref.get('name')} (policy {outer[0].name}), "
            "whose Workload covers it"
        )
    errors, warnings = validate_governed(
        policy, obj, old, gates=policies.gates, judge_job=_job_judge(policies)
    )
    return Result.judged(policy.name, errors, warnings, policy.enforcement)


def _job_judge(policies: PolicySet) -> JudgeJob | None:
    """A child Job template is judged as the cluster will judge its Jobs: by the Job policy."""
    job_policy = policies.for_kind("batch/v1", "Job")
    if job_policy is None:
        return None
    return lambda job: validate_governed(job_policy, job, None, gates=policies.gates)[0]


def validate_governed(
    policy: Policy, obj: Obj, old: Obj | None, *, gates: FeatureGates, judge_job: JudgeJob | None = None
) -> tuple[list[FieldError], list[str]]:
    """Both layers for an object governed by ``policy``; returns (errors, warnings).

    The layers of the 1.37 Job path, for every node of the tree: the structural layer over
    the node's embedding as a whole (``validate_block`` on the embedding type, ratcheted
    against the stored node of the same template name), then the compiler's ``Validate`` with
    its own declarative layer off (the tree, allow-lists, basic+all), then the policy's rules.
    """
    warnings: list[str] = []
    tree, errors = build_tree(policy, obj)
    # A tree that could not be read whole (wrong types, too many elements) is judged on its
    # shape alone: whether its gang can form is asked once it reads, and lists past their
    # limit are never walked.
    readable = not errors
    present = tree.block is not None
    if policy.feature_gate and policy.feature_gate not in gates.enabled and present:
        root_path = policy.root.path
        if old is None or get_path(old, root_path) is None:
            warnings.append(
                f"{root_path} is dropped by the apiserver: feature gate {policy.feature_gate} is off"
            )
            return [], warnings
        # Kept because the stored object has it, so it reaches validation: the gate marker
        # (ifDisabled=forbidden) fires on any change; an unchanged value is ratcheted.
        if not semantic_equal(get_path(obj, root_path), get_path(old, root_path)):
            errors.insert(0, forbidden(root_path, "", origin="ifDisabled"))
            warnings.append(f"{root_path} cannot change: feature gate {policy.feature_gate} is off")
    nodes = tree.walk()
    errors.extend(_duplicate_template_names(nodes))
    old_root = build_tree(policy, old, stored=True)[0] if old is not None else None
    # Old and new nodes pair by template name (unique in a valid tree), for every rule below.
    stored = {n.template_name: n for n in old_root.walk()} if old_root is not None else {}
    if policy.declarative_validation:
        errors.extend(_structural(nodes, stored))
    # The compiler's tree check would report an unusable tree as an InternalError; those
    # trees (duplicate template names, composites left without children) were already
    # reported at the user's fields above.
    buildable = all(n.children for n in nodes if n.spec.composite)
    if buildable and not any(e.origin == "templateName" for e in errors):
        # With its declarative layer off the compiler reads of the stored tree only its names
        # (the rename check, and the pairing of children), which a stored tree has.
        errors.extend(Builder(tree, policy.build_options).validate(old_root))
    # Whether the gang can form (docs/schedulability.md); a node already refused for the
    # controller's count is not told about its plain pod-count bound as well.
    sched_errors, sched_warnings = (
        schedulability(policy, obj, old, nodes, judge_job=judge_job) if readable else ([], [])
    )
    warnings.extend(sched_warnings)
    refused = {str(e.field) for e in sched_errors}
    for node in nodes:
        _pod_count_bound(node, refused, errors, warnings)
        errors.extend(_unset_gang_count(node))
        errors.extend(_exclusive_fields(node, old))
    if old_root is not None:
        errors.extend(update_errors(policy, nodes, stored))
    errors.extend(_refused_fields(policy, obj, old))
    reported = {str(e.field) for e in errors}
    errors.extend(e for e in sched_errors if str(e.field) not in reported)
    # Template names matter only to a tree that compiles to a Workload (decision 8); asked only
    # of a name that is not a DNS label.
    _advice(
        tree,
        nodes,
        gates,
        warnings,
        any_block=present,
        compiles=lambda: workload_refusal(policy, obj, gates) is None,
    )
    if policy.notice is not None and any(node.block is not None for node in nodes):
        warnings.append(policy.notice)  # the policy author's own word to its users
    return _dedupe(errors), warnings


def _structural(nodes: list[ObjectNode], stored: t.Mapping[str, ObjectNode]) -> list[FieldError]:
    """The structural layer of every node's embedding, blocks included, at the user's paths."""
    errors = []
    for node in nodes:
        if node.block is None:
            continue
        block_type = BlockType.COMPOSITE_SCHEDULING if node.spec.composite else BlockType.SCHEDULING
        previous = stored.get(node.template_name)
        old = previous.block if previous is not None and previous.block is not None else NO_OLD
        errors.extend(validate_block(block_type, node.block, node.path, old=old))
    return errors


def _dedupe(errors: list[FieldError]) -> list[FieldError]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for err in errors:
        key = (err.type.value, str(err.field), err.detail)
        if key not in seen:
            seen.add(key)
            out.append(err)
    return out


def _duplicate_template_names(nodes: list[ObjectNode]) -> list[FieldError]:
    seen: set[str] = set()
    errors = []
    for node in nodes:
        if node.template_name in seen:
            # The Workload needs unique template names across its tree; report the user's element.
            where = node.context_path if node.spec.for_each is not None else node.path
            errors.append(duplicate(where, node.template_name, origin="templateName"))
        seen.add(node.template_name)
    return errors


def _explicit_count(node: ObjectNode, field: str) -> int | None:
    policy = node.block.get("schedulingPolicy") if isinstance(node.block, dict) else None
    gang = policy.get("gang") if isinstance(policy, dict) else None
    count = gang.get(field) if isinstance(gang, dict) else None
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    return None


def _pod_count_bound(
    node: ObjectNode, refused: set[str], errors: list[FieldError], warnings: list[str]
) -> None:
    """``minCount <= pod count`` on the final object (docs/decisions.md §1, §10). A count the
    schedulability rules refused already (``refused``: their fields) is not told about it as well."""
    if node.spec.composite or node.pod_count is None or node.spec.pod_count is None:
        return
    min_count = _explicit_count(node, "minCount")
    if min_count is None or min_count < 1:
        return  # unset follows the pod count; < 1 is the structural layer's error
    paused = node.pod_count == 0 and node.pod_count_explicit
    if not paused and min_count <= node.pod_count:
        return
    path = node.path.child("schedulingPolicy", "gang", "minCount")
    if str(path) in refused:
        return
    if paused:
        warnings.append(
            f"{node.pod_count_source} is 0: the workload is paused, so {path} ({min_count}) is not checked against it"
        )
    else:
        errors.append(
            invalid(
                path, min_count, f"must be less than or equal to {node.pod_count_shown}", origin="podCount"
            )
        )


def _unset_gang_count(node: ObjectNode) -> list[FieldError]:
    """A gang whose count nobody fills cannot compile: report it where the user can fix it."""
    defaulted = node.spec.min_group_count_default if node.spec.composite else node.spec.min_count_default
    if defaulted:
        return []
    cfg = resolve_scheduling_config(node)
    if cfg.policy is None or cfg.policy.gang is None or cfg.policy.gang.min_count is not None:
        return []
    field = "minGroupCount" if node.spec.composite else "minCount"
    return [
        required(
            node.path.child("schedulingPolicy", "gang", field),
            "this controller does not default it, so it must be set",
            origin="controllerDefault",
        )
    ]


def _exclusive_fields(node: ObjectNode, old: Obj | None) -> list[FieldError]:
    """docs/decisions.md §3: a block together with a user-managed group (e.g. schedulingGroup) is rejected."""
    if node.block is None:
        return []
    errors = []
    for other in node.spec.exclusive_with:
        if get_path(node.context, other) is None:
            continue
        old_had_both = (
            old is not None
            and get_path(old, node.path) is not None
            and get_path(old, node.context_path / other) is not None
        )
        if not old_had_both:
            errors.append(
                forbidden(
                    node.path, f"may not be set together with {node.context_path / other}", origin="exclusive"
                )
            )
    return errors


def _refused_fields(policy: Policy, obj: Obj, old: Obj | None) -> list[FieldError]:
    """``spec.refusedFields``: each set one is Forbidden at its own path (blocks written where
    the policy does not read them would otherwise be ignored in silence). On update a value
    the stored object holds at the same place is let through, as ratcheting does."""
    errors = []
    for refused in policy.refused_fields:
        if refused.for_each is None:
            places = [refused.path]
        else:
            items = get_path(obj, refused.for_each)
            count = len(items) if isinstance(items, list) else 0
            places = [refused.for_each.index(i) / refused.path for i in range(count)]
        for place in places:
            value = get_path(obj, place)
            if value is None or (old is not None and semantic_equal(value, get_path(old, place))):
                continue
            errors.append(forbidden(place, refused.message, origin="refusedField"))
    return errors


def _advice(
    tree: ObjectNode, nodes: list[ObjectNode], gates: FeatureGates, out: list[str], *, any_block: bool,
    compiles: t.Callable[[], bool],
) -> None:  # fmt: skip
    """Warnings: template names the Workload cannot carry (docs/decisions.md §8), gates that drop blocks (§14)."""
    # An object that has only generateName has no name yet, so its template names are unknown.
    metadata = tree.context.get("metadata")
    named = isinstance(metadata, dict) and bool(metadata.get("name"))
    enabled = gates.enabled  # a frozenset: no method call per check
    for node in nodes:
        if named and dns_label(node.template_name) and compiles():
            out.append(
                f"template name {node.template_name!r} is not a valid DNS label (max 63 characters): "
                "the Workload for this object cannot be created"
            )
        block = node.block
        if not isinstance(block, dict):
            continue
        # The gate covers PodGroup(Template) constraints only; composite ones are not gated.
        if (
            not node.spec.composite
            and block.get("schedulingConstraints") is not None
            and "TopologyAwareWorkloadScheduling" not in enabled
        ):
            out.append(
                f"{node.path}.schedulingConstraints is dropped: feature gate TopologyAwareWorkloadScheduling is off"
            )
        if block.get("resourceClaims") and "DRAWorkloadResourceClaims" not in enabled:
            out.append(
                f"{node.path}.resourceClaims is dropped: feature gate DRAWorkloadResourceClaims is off"
            )
    # Only an object that asks for gangs hears about the gate: a composite tree without any
    # block compiles to nothing the gate would change.
    if tree.spec.composite and "CompositePodGroup" not in enabled and any(n.block is not None for n in nodes):
        out.append(f"{tree.path}: composite groups need feature gate CompositePodGroup, which is off")
    if any_block and "GenericWorkload" not in enabled:
        out.append("feature gate GenericWorkload is off: no Workload or PodGroup is created for this object")
