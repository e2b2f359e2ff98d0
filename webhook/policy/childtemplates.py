"""Loading ``spec.stamping``: which pods and child pod templates wasp stamps, and how.

A child template names pod templates in a child object (``templatePath``: the one template,
its leaf chosen by labels; ``templates``: several, each mapped to a leaf, static or keyed by
a list element's key) and a ``mode``: ``stamp`` (wasp stamps them and creates every
PodGroup) or ``delegate`` (batch/v1 Jobs only: the 1.37 Job controller creates the child's
PodGroup in the parent's Workload, docs/decisions.md §27). Every check here is one a schema
cannot express; a failure names the file and the key.
"""

from __future__ import annotations

import typing as t

from webhook.policy.model import ChildTemplate, NodeSpec, PodCount, TemplateMapping
from webhook.vocab.field import FieldPath

__all__ = ["DELEGATE_KINDS", "load_child_templates"]

# The only controller that creates a PodGroup for a delegated child is the 1.37 Job controller.
DELEGATE_KINDS: t.Final = frozenset({("batch/v1", "Job")})


class _Loader(t.Protocol):
    def fail(self, location: str, message: str) -> t.NoReturn: ...

    def path(self, location: str, text: str) -> FieldPath: ...


def _chains(root: NodeSpec) -> dict[str, tuple[NodeSpec, ...]]:
    """Every node's chain from the root (itself last), by id."""
    out: dict[str, tuple[NodeSpec, ...]] = {}

    def visit(node: NodeSpec, above: tuple[NodeSpec, ...]) -> None:
        out[node.id] = (*above, node)
        for child in node.children:
            visit(child, out[node.id])

    visit(root, ())
    return out


def load_child_templates(
    loader: _Loader, root: NodeSpec, docs: t.Sequence[t.Mapping[str, t.Any]]
) -> tuple[ChildTemplate, ...]:
    """The schema-checked ``spec.stamping.childTemplates`` of a policy whose tree is ``root``."""
    chains = _chains(root)
    return tuple(_child(loader, chains, c, f"spec.stamping.childTemplates[{i}]") for i, c in enumerate(docs))


def _child(
    loader: _Loader, chains: t.Mapping[str, tuple[NodeSpec, ...]], doc: t.Mapping[str, t.Any], where: str
) -> ChildTemplate:
    mode = doc.get("mode", "stamp")
    if "templatePath" in doc:
        templates: tuple[TemplateMapping, ...] = (
            TemplateMapping(loader.path(f"{where}.templatePath", doc["templatePath"])),
        )
    else:
        templates = tuple(
            _mapping(loader, chains, m, f"{where}.templates[{i}]") for i, m in enumerate(doc["templates"])
        )
    count = None
    if mode == "delegate":
        if (doc["apiVersion"], doc["kind"]) not in DELEGATE_KINDS:
            loader.fail(
                f"{where}.mode",
                f"delegate is only for batch/v1 Job children (the 1.37 Job controller creates a delegated "
                f"child's PodGroup); {doc['apiVersion']} {doc['kind']} needs mode: stamp",
            )
        if len(templates) != 1:
            loader.fail(f"{where}.templates", "a delegated Job has one pod template: map exactly one")
        if "children" not in doc:
            loader.fail(
                f"{where}.children",
                "delegate needs children: how many Jobs one element of the leaf makes (JobSet: "
                "{path: replicas, default: 1}); siblings on one template would share one PodGroup name",
            )
        spec = doc["children"]
        count = PodCount(loader.path(f"{where}.children.path", spec["path"]), spec.get("default", 1))
        node_id = templates[0].node
        leaves = [c[-1] for c in chains.values() if not c[-1].composite and node_id in (None, c[-1].id)]
        repeated = [leaf.id for leaf in leaves if leaf.groups is not None]
        if repeated:
            # The Job controller names one PodGroup per delegated Job, without a group index.
            loader.fail(
                f"{where}.mode",
                f"leaf {', '.join(map(repr, repeated))} repeats as groups, which the Job controller cannot "
                "create: use mode: stamp",
            )
    elif "children" in doc:
        loader.fail(
            f"{where}.children", "children counts sibling Jobs of a delegated child: it needs mode: delegate"
        )
    return ChildTemplate(doc["apiVersion"], doc["kind"], templates, doc.get("resource"), mode, count)


def _mapping(
    loader: _Loader, chains: t.Mapping[str, tuple[NodeSpec, ...]], doc: t.Mapping[str, t.Any], where: str
) -> TemplateMapping:
    node_id = doc["node"]
    chain = chains.get(node_id)
    if chain is None:
        loader.fail(f"{where}.node", f"no node with id {node_id!r} (ids: {', '.join(sorted(chains))})")
    node = chain[-1]
    if node.composite:
        loader.fail(f"{where}.node", f"node {node_id!r} is a composite: pods join leaves")
    repeated = [n.id for n in chain if n.for_each is not None]
    for_each = loader.path(f"{where}.forEach", doc["forEach"]) if "forEach" in doc else None
    item_key = loader.path(f"{where}.itemKey", doc["itemKey"]) if "itemKey" in doc else None
    if (for_each is None) != (item_key is None):
        loader.fail(f"{where}.itemKey", "forEach and itemKey go together: the element's key finds its leaf")
    if "only" in doc and for_each is None:
        loader.fail(f"{where}.only", "only selects forEach elements by key: it needs forEach")
    if repeated and repeated != [node_id]:
        loader.fail(
            f"{where}.node",
            f"node {node_id!r} sits under forEach node(s) {', '.join(map(repr, repeated))}: a child's "
            "template can be mapped to a static leaf or to a forEach leaf of one level",
        )
    if repeated and for_each is None:
        loader.fail(
            f"{where}.forEach",
            f"node {node_id!r} repeats (forEach): map it from a list of the child (forEach, itemKey) whose "
            "element keys are the node's keys",
        )
    if repeated and not node.keyed:
        loader.fail(
            f"{where}.node", f"node {node_id!r} has no itemKey, so a child's element cannot be matched to it"
        )
    only = frozenset(doc["only"]) if "only" in doc else None
    return TemplateMapping(loader.path(f"{where}.path", doc["path"]), node_id, for_each, item_key, only)
