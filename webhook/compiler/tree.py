"""The structural check of a WorkloadItem tree (upstream ``validateWorkloadItemTree`` and
``validateItemInputUnion`` in ``validate.go``): ``Validate`` step 4 and the first step of
``BuildWorkload``. It runs even when declarative validation is disabled.
"""

from __future__ import annotations

from webhook.compiler.types import WorkloadItem

__all__ = ["validate_item_input_union", "validate_workload_item_tree"]


def validate_item_input_union(item: WorkloadItem) -> str | None:
    """A leaf that fills composite slots, or a composite that fills leaf slots (``None``: neither)."""
    # WorkloadInput is a tuple of its four slots; each slot holds leaf and composite data.
    # A slot is filled when non-None, except that an empty claims list fills nothing.
    if item.children:
        for slot in item.input:
            if slot.leaf is not None and slot.leaf != []:
                return f"composite workload item {item.name!r} must not set leaf (PodGroup) building blocks"
        return None
    for slot in item.input:
        if slot.composite is not None and slot.composite != []:
            return (
                f"leaf workload item {item.name!r} must not set composite (CompositePodGroup) building blocks"
            )
    return None


def validate_workload_item_tree(root: WorkloadItem) -> str | None:
    """The first structural problem of the tree, in pre-order, or ``None`` when it is sound.

    Problems: a nil node, an empty name, a name used twice anywhere in the tree, a node
    that fills slots of the other kind (leaf vs composite).
    """
    seen: set[str] = set()
    # (item, parent, index): where a node sits is spelled out only for a problem.
    stack: list[tuple[WorkloadItem | None, WorkloadItem | None, int]] = [(root, None, 0)]
    while stack:
        item, parent, index = stack.pop()
        if problem := _node_problem(item, parent, index):
            return problem
        assert item is not None  # _node_problem reports a nil item
        if item.name in seen:
            return f"workload item name {item.name!r} is used more than once in the tree"
        seen.add(item.name)
        problem = validate_item_input_union(item)
        if problem:
            return problem
        # Reverse so the first child is examined first (pre-order).
        children = item.children
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], item, i))
    return None


def _node_problem(item: WorkloadItem | None, parent: WorkloadItem | None, index: int) -> str | None:
    if item is None:
        return f"workload item at {_where(parent, index)} is nil"
    if not item.name:
        return f"workload item at {_where(parent, index)} has an empty name"
    return None


def _where(parent: WorkloadItem | None, index: int) -> str:
    return "root" if parent is None else f"{parent.name!r}.children[{index}]"
