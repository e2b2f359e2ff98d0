"""Runtime groups materialised from a Workload's templates (upstream ``podgroup.go``:
``newPodGroup``, ``newCompositePodGroup``; :class:`TemplateIndex` is ``indexPodGroupTemplates``
and ``indexCompositePodGroupTemplates`` in one walk).

The PodGroup carries an inline copy of its template's policy, constraints, disruption
mode, claims, priority class and priority; changing the PodGroup never touches the
template. ``parentCompositePodGroupName`` and extra owner references are the caller's job.
"""

from __future__ import annotations

import copy
import typing as t

from webhook.vocab.errors import BuildError

__all__ = [
    "COMPOSITE_API_VERSION",
    "POD_GROUP_API_VERSION",
    "TemplateIndex",
    "new_composite_pod_group",
    "new_pod_group",
]

POD_GROUP_API_VERSION: t.Final = "scheduling.k8s.io/v1beta1"
# CompositePodGroup is served only in v1alpha3 (docs/decisions.md §17).
COMPOSITE_API_VERSION: t.Final = "scheduling.k8s.io/v1alpha3"

Json = dict[str, t.Any]

_LEAF_COPIED = (
    "schedulingPolicy",
    "schedulingConstraints",
    "disruptionMode",
    "resourceClaims",
    "priorityClassName",
    "priority",
)
_COMPOSITE_COPIED = (
    "schedulingPolicy",
    "schedulingConstraints",
    "disruptionMode",
    "priorityClassName",
    "priority",
)


def _templates(node: t.Mapping[str, t.Any], key: str) -> list[Json]:
    value = node.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class TemplateIndex:
    """Name lookup tables over one Workload, built once and reused."""

    def __init__(self, workload: t.Mapping[str, t.Any]) -> None:
        self.workload = workload
        metadata = workload.get("metadata") or {}
        self.workload_name: str = metadata.get("name", "") if isinstance(metadata, dict) else ""
        self.namespace: str = metadata.get("namespace", "") if isinstance(metadata, dict) else ""
        spec = workload.get("spec") or {}
        spec = spec if isinstance(spec, dict) else {}
        self.top_level_leaves: dict[str, Json] = {}
        for tpl in _templates(spec, "podGroupTemplates"):
            self.top_level_leaves.setdefault(str(tpl.get("name", "")), tpl)
        self.all_leaves: dict[str, Json] = {}
        self.composites: dict[str, Json] = {}
        # Pre-order over the whole tree: leaves of a node, then its composites, recursively.
        for tpl in _templates(spec, "podGroupTemplates"):
            self.all_leaves.setdefault(str(tpl.get("name", "")), tpl)
        for tpl in _templates(spec, "compositePodGroupTemplates"):
            self._visit_composite(tpl)

    def _visit_composite(self, tpl: Json) -> None:
        self.composites.setdefault(str(tpl.get("name", "")), tpl)
        for leaf in _templates(tpl, "podGroupTemplates"):
            self.all_leaves.setdefault(str(leaf.get("name", "")), leaf)
        for child in _templates(tpl, "compositePodGroupTemplates"):
            self._visit_composite(child)


def _metadata(index: TemplateIndex, name: str, owner: t.Mapping[str, t.Any] | None) -> Json:
    metadata: Json = {"name": name}
    if index.namespace:
        metadata["namespace"] = index.namespace
    if owner is not None:
        metadata["ownerReferences"] = [copy.deepcopy(dict(owner))]
    return metadata


def _lookup(table: t.Mapping[str, Json], template_name: str, what: str) -> Json:
    template = table.get(template_name)
    if template is None:
        available = ", ".join(sorted(table)) or "none"
        raise BuildError(f"{what} {template_name!r} not found in the Workload (available: {available})")
    return template


def new_pod_group(
    index: TemplateIndex,
    pod_group_name: str,
    template_name: str,
    owner: t.Mapping[str, t.Any] | None,
    *,
    upstream_lookup: bool = False,
) -> Json:
    """A ``scheduling.k8s.io/v1beta1`` PodGroup named ``pod_group_name`` (taken as given)."""
    table = index.top_level_leaves if upstream_lookup else index.all_leaves
    template = _lookup(table, template_name, "PodGroupTemplate")
    spec: Json = {"workloadRef": {"workloadName": index.workload_name, "templateName": template_name}}
    for key in _LEAF_COPIED:
        if key in template and template[key] not in (None, "", []):
            spec[key] = copy.deepcopy(template[key])
    return {
        "apiVersion": POD_GROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": _metadata(index, pod_group_name, owner),
        "spec": spec,
    }


def new_composite_pod_group(
    index: TemplateIndex, name: str, template_name: str, owner: t.Mapping[str, t.Any] | None
) -> Json:
    """A ``scheduling.k8s.io/v1alpha3`` CompositePodGroup for a composite template (pre-order lookup)."""
    template = _lookup(index.composites, template_name, "CompositePodGroupTemplate")
    spec: Json = {"workloadRef": {"workloadName": index.workload_name, "templateName": template_name}}
    for key in _COMPOSITE_COPIED:
        if key in template and template[key] not in (None, "", []):
            spec[key] = copy.deepcopy(template[key])
    return {
        "apiVersion": COMPOSITE_API_VERSION,
        "kind": "CompositePodGroup",
        "metadata": _metadata(index, name, owner),
        "spec": spec,
    }
