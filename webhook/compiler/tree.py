"""The structural check of a WorkloadItem tree (``Validate`` step 4, and the first step of
``BuildWorkload``). It runs even when declarative validation is disabled.
"""

from __future__ import annotations

from webhook.compiler.types import Block, WorkloadItem

__all__ = ["check_tree", "walk"]


def _filled(value: object) -> bool:
    # An empty claims list fills nothing; every other slot is filled when non-None.
    return value is not None and value != []


def _slot_problem(item: WorkloadItem) -> str | None:
    inp = item.input
    if item.is_composite:
        leaf_slots: tuple[Block, ...] = inp.leaf_slots()
        if any(_filled(slot.leaf) for slot in leaf_slots):
            return f"composite workload item {item.name!r} must not set leaf (PodGroup) building blocks"
    else:
        composite_slots = inp.composite_slots() + (inp.resource_claims,)
        if any(_filled(slot.composite) for slot in composite_slots):
            return (
                f"leaf workload item {item.name!r} must not set composite (CompositePodGroup) building blocks"
            )
    return None


def check_tree(root: WorkloadItem) -> str | None:
    """The first structural problem of the tree, in pre-order, or ``None`` when it is sound.

    Problems: a nil node, an empty name, a name used twice anywhere in the tree, a node
    that fills slots of the other kind (leaf vs composite).
    """
    seen: set[str] = set()
    stack: list[tuple[WorkloadItem | None, str]] = [(root, "root")]
    while stack:
        item, where = stack.pop()
        if item is None:
            return f"workload item at {where} is nil"
        if not item.name:
            return f"workload item at {where} has an empty name"
        if item.name in seen:
            return f"workload item name {item.name!r} is used more than once in the tree"
        seen.add(item.name)
        problem = _slot_problem(item)
        if problem:
            return problem
        # Reverse so the first child is examined first (pre-order).
        for i in reversed(range(len(item.children))):
            stack.append((item.children[i], f"{item.name!r}.children[{i}]"))
    return None


def walk(root: WorkloadItem) -> list[WorkloadItem]:
    """Every node in pre-order (the tree must have passed :func:`check_tree`)."""
    out: list[WorkloadItem] = []
    stack = [root]
    while stack:
        item = stack.pop()
        out.append(item)
        stack.extend(child for child in reversed(item.children) if child is not None)
    return out
