"""``Builder.validate`` (upstream ``Validate`` in ``validate.go``, generation G4).

Function names follow upstream's in snake_case (``validateItem``, ``validateItemDeclarative``,
``validateResourceClaims``, ``validateAllowedSchedulingPolicies``, ...).

Steps, in order; the first four stop at their first problem:

1. a builder created from an existing Workload cannot be validated (InternalError);
2. a nil root is Invalid at the empty path;
3. on update, a renamed root is an InternalError at the root path;
4. the tree check (runs even with declarative validation disabled);
5. per node in pre-order: the declarative layer (structural JSON Schema, ratcheted on
   update), the policy and disruption-mode allow-lists on the *resolved* config, and the
   basic+all cross-field rule. Children pair with the old child of the same name at the
   same level only; a node that moved level is validated as new.
"""

from __future__ import annotations

from webhook.compiler.resolve import resolve_scheduling_config
from webhook.compiler.tree import validate_workload_item_tree
from webhook.compiler.types import Block, BuildOptions, DisruptionKind, PolicyKind, WorkloadItem
from webhook.declarative import NO_OLD, BlockType, validate_block
from webhook.vocab.field import FieldError, FieldPath, internal_error, invalid
from webhook.vocab.field import forbidden as forbidden_error

__all__ = ["validate_tree"]

_LEAF_BLOCKS = (
    ("policy", BlockType.POLICY),
    ("constraints", BlockType.CONSTRAINTS),
    ("disruption_mode", BlockType.DISRUPTION),
)
_COMPOSITE_BLOCKS = (
    ("policy", BlockType.COMPOSITE_POLICY),
    ("constraints", BlockType.COMPOSITE_CONSTRAINTS),
    ("disruption_mode", BlockType.COMPOSITE_DISRUPTION),
)


def validate_tree(
    root: WorkloadItem | None, options: BuildOptions, old_root: WorkloadItem | None = None
) -> list[FieldError]:
    """Steps 2-5 for the tree under ``root`` (step 1 is the Builder's)."""
    if root is None:
        return [invalid(FieldPath(), None, "root workload item must not be nil")]
    problem = _root_problem(root, old_root)
    if problem is not None:
        return [problem]
    errors: list[FieldError] = []
    validate_item(root, old_root, options, errors)
    return errors


def _root_problem(root: WorkloadItem, old_root: WorkloadItem | None) -> FieldError | None:
    """Steps 3 and 4 for a root that is not nil: a rename on update, then the tree check."""
    if old_root is not None and old_root.name != root.name:
        return internal_error(
            root.base_path, f"root workload item renamed from {old_root.name!r} to {root.name!r} on update"
        )
    problem = validate_workload_item_tree(root)
    return internal_error(root.base_path, problem) if problem else None


def validate_item(
    item: WorkloadItem, old: WorkloadItem | None, options: BuildOptions, errors: list[FieldError]
) -> None:
    """The errors of ``item`` (declarative layer, allow-lists, cross-field rule), then of its children."""
    if not options.disable_declarative_validation:
        errors.extend(validate_item_declarative(item, old))
    cfg = resolve_scheduling_config(item)
    # An unset policy compiles to Basic, so it is checked as Basic.
    policy = cfg.policy.kind() if cfg.policy is not None else PolicyKind.BASIC
    disruption = cfg.disruption_mode.kind() if cfg.disruption_mode is not None else None
    errors.extend(validate_allowed_scheduling_policies(item, policy, options))
    errors.extend(validate_allowed_disruption_modes(item, disruption, options))
    errors.extend(validate_disruption_mode_compatible_with_scheduling_policy(item, policy, disruption))
    if not item.children:
        return
    old_children = {c.name: c for c in (old.children if old is not None else ()) if c is not None}
    for child in item.children:
        if child is not None:
            validate_item(child, old_children.get(child.name), options, errors)


def _path(item: WorkloadItem, block: Block) -> FieldPath:
    return item.base_path.child(*block.path_elements)


def validate_item_declarative(item: WorkloadItem, old: WorkloadItem | None) -> list[FieldError]:
    """The structural layer on the node's blocks (leaf or composite set), ratcheted on update."""
    errors: list[FieldError] = []
    composite = item.is_composite
    for attr, block_type in _COMPOSITE_BLOCKS if composite else _LEAF_BLOCKS:
        block: Block = getattr(item.input, attr)
        new_value = block.composite if composite else block.leaf
        if new_value is None:
            # A cleared block is not validated; freezing it is the embedding API's job.
            continue
        old_value: object = NO_OLD
        if old is not None:
            old_block: Block = getattr(old.input, attr)
            previous = old_block.composite if composite else old_block.leaf
            if previous is not None:
                old_value = previous
        errors.extend(validate_block(block_type, new_value, _path(item, block), old=old_value))
    if not composite:
        errors.extend(validate_resource_claims(item, old))
    return errors


def validate_resource_claims(item: WorkloadItem, old: WorkloadItem | None) -> list[FieldError]:
    block = item.input.resource_claims
    new_claims = block.leaf if isinstance(block.leaf, list) else []
    old_claims = old.input.resource_claims.leaf if old is not None else None
    old_claims = old_claims if isinstance(old_claims, list) else []
    if not new_claims and not old_claims:
        return []
    # Claims pair with the old claim of the same name, not the same position.
    old_by_name: dict[str, object] = {}
    for claim in old_claims:
        if isinstance(claim, dict) and isinstance(claim.get("name"), str):
            old_by_name.setdefault(claim["name"], claim)
    base = _path(item, block)
    errors: list[FieldError] = []
    for i, claim in enumerate(new_claims):
        name = claim.get("name") if isinstance(claim, dict) else None
        previous = old_by_name.get(name, NO_OLD) if isinstance(name, str) else NO_OLD
        errors.extend(validate_block(BlockType.RESOURCE_CLAIM, claim, base.index(i), old=previous))
    return errors


def validate_allowed_scheduling_policies(
    item: WorkloadItem, policy: PolicyKind, options: BuildOptions
) -> list[FieldError]:
    """The resolved policy outside the controller's allow-list is Forbidden at the policy path."""
    if policy in options.allowed_policies:
        return []
    message = f"{policy.value} scheduling policy is not supported by this controller"
    return [forbidden_error(_path(item, item.input.policy), message)]


def validate_allowed_disruption_modes(
    item: WorkloadItem, disruption: DisruptionKind | None, options: BuildOptions
) -> list[FieldError]:
    """The resolved disruption mode outside the allow-list is Forbidden at the disruption path."""
    if disruption is None or disruption in options.allowed_disruption_modes:
        return []
    message = f"the disruptionMode `{disruption.value}` is not supported by this controller"
    return [forbidden_error(_path(item, item.input.disruption_mode), message)]


def validate_disruption_mode_compatible_with_scheduling_policy(
    item: WorkloadItem, policy: PolicyKind, disruption: DisruptionKind | None
) -> list[FieldError]:
    """Basic with all is Invalid: a Basic group is scheduled pod by pod, so all-or-nothing
    disruption means nothing for it."""
    if policy is not PolicyKind.BASIC or disruption is not DisruptionKind.ALL:
        return []
    return [
        invalid(
            _path(item, item.input.disruption_mode),
            "",
            "the disruptionMode `all` is not supported with the Basic scheduling policy",
            origin="basicWithAll",
        )
    ]
