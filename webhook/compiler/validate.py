"""``Builder.validate`` (upstream ``validate.go``, generation G4).

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

from webhook.compiler.resolve import resolve
from webhook.compiler.tree import check_tree
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
    _validate_subtree(root, old_root, options, errors)
    return errors


def _root_problem(root: WorkloadItem, old_root: WorkloadItem | None) -> FieldError | None:
    """Steps 3 and 4 for a root that is not nil: a rename on update, then the tree check."""
    if old_root is not None and old_root.name != root.name:
        return internal_error(
            root.base_path, f"root workload item renamed from {old_root.name!r} to {root.name!r} on update"
        )
    problem = check_tree(root)
    return internal_error(root.base_path, problem) if problem else None


def _validate_subtree(
    item: WorkloadItem, old: WorkloadItem | None, options: BuildOptions, errors: list[FieldError]
) -> None:
    errors.extend(_validate_node(item, old, options))
    if not item.children:
        return
    old_children = {c.name: c for c in (old.children if old is not None else ()) if c is not None}
    for child in item.children:
        if child is not None:
            _validate_subtree(child, old_children.get(child.name), options, errors)


def _path(item: WorkloadItem, block: Block) -> FieldPath:
    return item.base_path.child(*block.path_elements)


def _declarative(item: WorkloadItem, old: WorkloadItem | None) -> list[FieldError]:
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
        errors.extend(_declarative_claims(item, old))
    return errors


def _declarative_claims(item: WorkloadItem, old: WorkloadItem | None) -> list[FieldError]:
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


def _validate_node(item: WorkloadItem, old: WorkloadItem | None, options: BuildOptions) -> list[FieldError]:
    """The errors of one node (not its children): declarative layer, allow-lists, cross-field rule."""
    errors: list[FieldError] = []
    if not options.disable_declarative_validation:
        errors.extend(_declarative(item, old))
    cfg = resolve(item)
    # An unset policy compiles to Basic, so it is checked as Basic.
    policy = cfg.policy.kind() if cfg.policy is not None else PolicyKind.BASIC
    disruption = cfg.disruption_mode.kind() if cfg.disruption_mode is not None else None
    errors.extend(_kind_errors(item, policy, disruption, options))
    return errors


def _kind_errors(
    item: WorkloadItem, policy: PolicyKind, disruption: DisruptionKind | None, options: BuildOptions
) -> list[FieldError]:
    """The allow-lists and the basic+all rule, on the kinds of ``item``'s resolved config."""
    errors: list[FieldError] = []
    # Paths are built only for an error: this runs on every node of every review.
    if policy not in options.allowed_policies:
        errors.append(
            forbidden_error(
                _path(item, item.input.policy),
                f"{policy.value} scheduling policy is not supported by this controller",
            )
        )
    if disruption is not None and disruption not in options.allowed_disruption_modes:
        errors.append(
            forbidden_error(
                _path(item, item.input.disruption_mode),
                f"the disruptionMode `{disruption.value}` is not supported by this controller",
            )
        )
    if policy is PolicyKind.BASIC and disruption is DisruptionKind.ALL:
        errors.append(
            invalid(
                _path(item, item.input.disruption_mode),
                "",
                "the disruptionMode `all` is not supported with the Basic scheduling policy",
                origin="basicWithAll",
            )
        )
    return errors
