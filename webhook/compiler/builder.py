"""Compilation into templates and the :class:`Builder` (upstream ``builder.go``).

Function names follow upstream's (``compileWorkloadItemTree``, ``compilePodGroupTemplate``,
``buildLeafTemplate``, ``compileSchedulingPolicy``, ``compileCompositePodGroupTemplate``, ...) in
snake_case. Each node's effective configuration comes from
:func:`~webhook.compiler.resolve.resolve_scheduling_config`; the Workload's identity and owner
are set by :meth:`Builder.build_workload` (upstream ``build``).
"""

from __future__ import annotations

import copy
import typing as t

from webhook.compiler import podgroup
from webhook.compiler.resolve import resolve_scheduling_config
from webhook.compiler.tree import validate_workload_item_tree
from webhook.compiler.types import (
    BuildOptions,
    DisruptionMode,
    PolicyKind,
    ResourceClaim,
    SchedulingConfig,
    SchedulingPolicy,
    WorkloadItem,
)
from webhook.compiler.validate import validate_tree
from webhook.vocab.errors import BuildError
from webhook.vocab.field import FieldPath, internal_error

if t.TYPE_CHECKING:
    from webhook.vocab.field import FieldError

__all__ = [
    "API_VERSION",
    "Builder",
    "compile_composite_pod_group_template",
    "compile_pod_group_template",
    "compile_workload_item_tree",
    "parse_group",
]

API_VERSION: t.Final = "scheduling.k8s.io/v1beta1"
# Deny-by-default allow-lists, no owner: what upstream gets from a zero BuildOptions.
DEFAULT_OPTIONS: t.Final = BuildOptions()

Json = dict[str, t.Any]


def compile_workload_item_tree(root: WorkloadItem) -> Json:
    """The WorkloadSpec templates ``root`` compiles to: one CompositePodGroupTemplate for a
    composite root, one PodGroupTemplate for a leaf. Raises :class:`BuildError` on the first
    problem (a tree problem, an unset gang count); the identity is :meth:`Builder.build_workload`'s."""
    problem = validate_workload_item_tree(root)
    if problem:
        raise BuildError(problem)
    if root.is_composite:
        return {"compositePodGroupTemplates": [compile_composite_pod_group_template(root)]}
    return {"podGroupTemplates": [compile_pod_group_template(root)]}


def compile_pod_group_template(item: WorkloadItem) -> Json:
    """A leaf ``item`` resolved (callbacks included) and compiled into one PodGroupTemplate dict."""
    return build_leaf_template(item.name, resolve_scheduling_config(item))


def _topology(cfg: SchedulingConfig) -> Json | None:
    if cfg.constraints is None or not cfg.constraints.topology:
        return None
    return {"topology": [{"key": c.key} for c in cfg.constraints.topology]}


def build_leaf_template(name: str, cfg: SchedulingConfig) -> Json:
    """A resolved config as one PodGroupTemplate dict, in the Kubernetes field order."""
    out: Json = {"name": name, "schedulingPolicy": compile_scheduling_policy(cfg.policy)}
    if (topology := _topology(cfg)) is not None:
        out["schedulingConstraints"] = topology
    if cfg.resource_claims:
        out["resourceClaims"] = compile_resource_claims(cfg.resource_claims)
    if cfg.disruption_mode is not None and (mode := compile_disruption_mode(cfg.disruption_mode)):
        out["disruptionMode"] = mode
    if cfg.priority_class_name:
        out["priorityClassName"] = cfg.priority_class_name
    return out


def compile_scheduling_policy(policy: SchedulingPolicy | None) -> Json:
    """A nil or empty policy, or basic, compiles to basic; gang needs its minCount by now."""
    if policy is None or policy.kind() is PolicyKind.BASIC:
        return {"basic": {}}
    assert policy.gang is not None
    if policy.gang.min_count is None:
        raise BuildError("gang scheduling requires minCount to be set after resolution")
    return {"gang": {"minCount": policy.gang.min_count}}


def compile_composite_pod_group_template(item: WorkloadItem) -> Json:
    """A composite ``item`` resolved and compiled, its children recursively: composite children
    become nested CompositePodGroupTemplates, leaf children PodGroupTemplates."""
    cfg = resolve_scheduling_config(item)
    out: Json = {"name": item.name, "schedulingPolicy": compile_composite_scheduling_policy(cfg.policy)}
    if (topology := _topology(cfg)) is not None:
        out["schedulingConstraints"] = topology
    if cfg.disruption_mode is not None and (mode := compile_disruption_mode(cfg.disruption_mode)):
        out["disruptionMode"] = mode
    if cfg.priority_class_name:
        out["priorityClassName"] = cfg.priority_class_name
    children = [c for c in item.children if c is not None]
    leaves = [compile_pod_group_template(c) for c in children if not c.is_composite]
    composites = [compile_composite_pod_group_template(c) for c in children if c.is_composite]
    if leaves:
        out["podGroupTemplates"] = leaves
    if composites:
        out["compositePodGroupTemplates"] = composites
    return out


def compile_composite_scheduling_policy(policy: SchedulingPolicy | None) -> Json:
    """As :func:`compile_scheduling_policy`; the IR's gang count is the composite's minGroupCount."""
    if policy is None or policy.kind() is PolicyKind.BASIC:
        return {"basic": {}}
    assert policy.gang is not None
    if policy.gang.min_count is None:
        raise BuildError("composite gang scheduling requires minGroupCount to be set after resolution")
    return {"gang": {"minGroupCount": policy.gang.min_count}}


def compile_disruption_mode(mode: DisruptionMode) -> Json | None:
    """The mode's member (``all`` first, as upstream checks it); none set compiles to nothing.
    Leaf and composite modes have the same JSON shape."""
    kind = mode.kind()
    return None if kind is None else {kind.value: {}}


def compile_resource_claims(claims: list[ResourceClaim]) -> list[Json]:
    out = []
    for claim in claims:
        entry: Json = {"name": claim.name}
        if claim.resource_claim_name is not None:
            entry["resourceClaimName"] = claim.resource_claim_name
        if claim.resource_claim_template_name is not None:
            entry["resourceClaimTemplateName"] = claim.resource_claim_template_name
        out.append(entry)
    return out


def parse_group(api_version: object) -> str:
    """The group of an ``apiVersion`` (``batch/v1`` → ``batch``, ``v1`` → ``""``).

    Mirrors ``schema.ParseGroupVersion``: more than one ``/`` is an error.
    """
    if not isinstance(api_version, str):
        raise BuildError(f"owner apiVersion must be a string, got {api_version!r}")
    if api_version == "" or "/" not in api_version:
        return ""
    parts = api_version.split("/")
    if len(parts) != 2:
        raise BuildError(f"unexpected GroupVersion string: {api_version}")
    return parts[0]


class Builder:
    """Validates a WorkloadItem tree and compiles it into Workload and PodGroup objects.

    A builder made by :meth:`from_existing_workload` only materialises runtime groups of
    a Workload someone else compiled: ``validate`` returns an InternalError and
    ``build_workload`` is refused.
    """

    __slots__ = ("_existing", "_index", "_workload", "options", "root")

    def __init__(self, root: WorkloadItem | None, options: BuildOptions = DEFAULT_OPTIONS) -> None:
        self.root = root
        self.options = options
        self._workload: Json | None = None
        self._existing: Json | None = None
        self._index: podgroup.TemplateIndex | None = None

    @classmethod
    def from_existing_workload(
        cls, workload: t.Mapping[str, t.Any], options: BuildOptions = DEFAULT_OPTIONS
    ) -> Builder:
        builder = cls(None, options)
        builder._existing = copy.deepcopy(dict(workload))
        return builder

    def validate(self, old_root: WorkloadItem | None = None) -> list[FieldError]:
        """Every error in the tree (upstream ``Validate``); ``old_root`` set means UPDATE.

        A builder made by :meth:`from_existing_workload` has no tree: that is an InternalError.
        """
        if self._existing is not None:
            return [
                internal_error(FieldPath(), "a builder created from an existing Workload cannot be validated")
            ]
        return validate_tree(self.root, self.options, old_root)

    def build_workload(self) -> Json:
        """The compiled ``scheduling.k8s.io/v1beta1`` Workload; cached after the first success.

        Does not run :meth:`validate`. Raises :class:`BuildError` on the first problem:
        existing-workload builder, nil root, tree problem, unset gang count, missing owner,
        unparsable owner apiVersion. A failure caches nothing.
        """
        if self._existing is not None:
            raise BuildError("build_workload is not supported on a builder created from an existing Workload")
        if self._workload is not None:
            return self._workload
        if self.root is None:
            raise BuildError("root workload item is nil")
        templates = compile_workload_item_tree(self.root)
        owner = self.options.owner
        if owner is None:
            raise BuildError("a Workload must be owned by its controller: BuildOptions.owner is required")
        group = parse_group(owner.get("apiVersion", ""))
        metadata: Json = {}
        if self.options.name:
            metadata["name"] = self.options.name
        if self.options.namespace:
            metadata["namespace"] = self.options.namespace
        metadata["ownerReferences"] = [copy.deepcopy(dict(owner))]
        controller_ref: Json = {}
        if group:
            controller_ref["apiGroup"] = group
        controller_ref["kind"] = owner.get("kind", "")
        controller_ref["name"] = owner.get("name", "")
        spec: Json = {"controllerRef": controller_ref, **templates}
        self._workload = {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}
        return self._workload

    def _template_index(self) -> podgroup.TemplateIndex:
        workload = self._workload if self._workload is not None else self._existing
        if workload is None:
            raise BuildError("build_workload or from_existing_workload must come before creating pod groups")
        if self._index is None:
            self._index = podgroup.TemplateIndex(workload)
        return self._index

    def new_pod_group(
        self, pod_group_name: str, template_name: str, *, upstream_lookup: bool = False
    ) -> Json:
        """A PodGroup for the leaf template ``template_name`` (see :func:`podgroup.new_pod_group`).

        wasp finds leaf templates anywhere in the tree (docs/decisions.md §19); ``upstream_lookup=True``
        restricts the lookup to top-level ``podGroupTemplates`` exactly like upstream.
        """
        return podgroup.new_pod_group(
            self._template_index(),
            pod_group_name,
            template_name,
            self.options.owner,
            upstream_lookup=upstream_lookup,
        )

    def new_composite_pod_group(self, name: str, template_name: str) -> Json:
        """A ``scheduling.k8s.io/v1alpha3`` CompositePodGroup for a composite template."""
        return podgroup.new_composite_pod_group(
            self._template_index(), name, template_name, self.options.owner
        )
