"""The policy model: everything wasp knows about one integrated kind, as frozen data.

A policy (``policies/*.yaml``, loaded by :mod:`webhook.policy.loading`) says which objects it
governs, where each building block sits (the WorkloadItem tree of :class:`NodeSpec`), the
closed allow-lists, whether the structural layer runs, which update rules apply, and the
defaults the mutating webhook applies.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.compiler.types import BuildOptions, DisruptionKind, PolicyKind
from webhook.policy.native import Native
from webhook.policy.schedulability import Schedulability
from webhook.vocab.field import FieldPath

if t.TYPE_CHECKING:
    import cel

__all__ = [
    "BUILTIN_POLICY_DIR",
    "ChildMode",
    "ChildTemplate",
    "DefaultRule",
    "Enforcement",
    "GroupingLookup",
    "Identity",
    "IdentityLookup",
    "Membership",
    "NodeSpec",
    "PodCount",
    "Policy",
    "RefusedField",
    "TemplateMapping",
    "UpdateRules",
]

BUILTIN_POLICY_DIR: t.Final = Path(__file__).parent.parent / "policies"
UpdateRules = t.Literal["elastic", "immutable", "none"]
# What an object this policy finds invalid gets: denied, or admitted with the denial as warnings.
Enforcement = t.Literal["deny", "warn"]


@dataclass(frozen=True, slots=True)
class PodCount:
    """Where a leaf's pod count comes from: the field at ``path``, or the CEL ``expression``
    (compiled as ``program``) over the node's context bound as ``self``; exactly one is set.
    ``default`` applies when the field is unset, or when the expression reads a field that is
    unset (guard optional fields with ``has()`` to count them otherwise)."""

    path: FieldPath | None
    default: int = 1
    expression: str | None = None
    program: cel.Program | None = field(default=None, compare=False, repr=False)
    # How an expression counts, in words a user can check (messages quote it, never the CEL).
    description: str | None = None


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of a policy's WorkloadItem tree.

    ``path`` is relative to the node's *context*: the object for the root and for static
    children, the list element for ``for_each`` children (and their static descendants).
    """

    id: str
    composite: bool
    path: FieldPath
    template_name: str
    # True when ``path`` holds the blocks as a JSON string (an annotation) rather than an object.
    json_encoded: bool = False
    for_each: FieldPath | None = None
    # True when ``for_each`` names a map: its entries are the elements, keyed by the map key.
    for_each_map: bool = False
    item_key: FieldPath | None = None
    pod_count: PodCount | None = None
    min_count_default: bool = True
    min_group_count_default: bool = True
    priority_class_name_from: FieldPath | None = None
    exclusive_with: tuple[FieldPath, ...] = ()
    pod_label: str | None = None
    # With ``pod_label``: pods whose label has exactly this value belong here (a static node).
    pod_label_value: str | None = None
    # Repeated groups: a leaf instantiated ``groups`` times (one template, a PodGroup per
    # index); ``group_index_label`` holds a pod's index, ``group_count_label`` optionally N.
    groups: PodCount | None = None
    group_index_label: str | None = None
    group_count_label: str | None = None
    children: tuple[NodeSpec, ...] = ()

    @property
    def keyed(self) -> bool:
        """Whether each element of this node has a key (``{key}``): an ``itemKey``, or a map key."""
        return self.item_key is not None or self.for_each_map

    def template_for(self, name: str, key: str = "", index: int | None = None) -> str:
        """This node's template name for an object named ``name`` (and, under ``forEach``,
        the element's ``key`` and ``index``); placeholders are checked at policy load.

        A map key is lowercased: names are DNS labels, and map keys are often capitalised
        (MPIJob ``Launcher``/``Worker``, whose pods carry ``job-role: launcher``)."""
        if self.for_each_map:
            key = key.lower()
        return self.template_name.format(name=name, key=key, index="" if index is None else index)

    def walk(self) -> t.Iterator[NodeSpec]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class RefusedField:
    """A field the object must not set (``spec.refusedFields``): ``path`` of the object, or of
    every element of the list ``for_each``; ``message`` says where the policy reads instead."""

    path: FieldPath
    message: str
    for_each: FieldPath | None = None


@dataclass(frozen=True, slots=True)
class DefaultRule:
    """A defaulting rule: when ``condition`` holds (or always), fill unset blocks of ``node``."""

    name: str
    node: str
    values: t.Mapping[str, t.Any]
    condition: str | None = None
    program: cel.Program | None = field(default=None, compare=False, repr=False)
    materialize_min_count: bool = False


@dataclass(frozen=True, slots=True)
class TemplateMapping:
    """One pod template in a child object and the leaf of the parent's tree its pods join.

    ``path`` is relative to the child, or to each element of ``for_each`` (a list in the
    child, each element keyed by ``item_key``). ``node`` is the leaf's id; ``None`` (the
    ``templatePath`` form) chooses the leaf by the child's and the template's labels
    (``podLabel``). A keyed leaf takes the element's key; ``only`` limits the elements
    mapped, the others being deliberately left out of the parent's groups."""

    path: FieldPath
    node: str | None = None
    for_each: FieldPath | None = None
    item_key: FieldPath | None = None
    only: frozenset[str] | None = None


ChildMode = t.Literal["stamp", "delegate"]


@dataclass(frozen=True, slots=True)
class Identity:
    """A governed object's UID, and the PodGroup names the reconciler creates for it as it is
    now (``None``: not known), so that a member pod never names one nobody creates."""

    uid: str
    groups: frozenset[str] | None = None


class IdentityLookup(t.Protocol):
    """Where a membership policy's pods learn the governed object's identity (the webhook's
    watch-backed cache, :class:`webhook.governed.membership.IdentityCache`). ``identity_of``
    gives ``None`` for an object that does not exist, and raises when it cannot tell now."""

    def identity_of(self, namespace: str, name: str) -> Identity | None: ...


class GroupingLookup(t.Protocol):
    """What the cluster holds about a workload, for stamping (the webhook's watch-backed
    :class:`webhook.governed.grouping.GroupingCache`): ``held`` says why the pods of the object
    a root key ``(namespace, group, kind, name)`` and its UID name must not be stamped now, and raises
    when it cannot tell yet; ``native`` why a kind is managed natively."""

    def held(self, root: tuple[str, str, str, str], uid: str) -> str | None: ...

    def native(self, group: str, kind: str) -> str | None: ...

    def templates(self, root: tuple[str, str, str, str], uid: str) -> tuple[str, frozenset[str]] | None: ...


@dataclass(frozen=True, slots=True)
class Membership:
    """``stamping.membership``: a pod in the object's namespace whose ``label`` holds the
    object's name belongs to it, whatever its owner chain (LeaderWorkerSet pods sit under two
    StatefulSets). The PodGroup name hashes the object's UID, which no such pod carries:
    ``identities`` (set by the webhook server, ``None`` elsewhere) supplies it."""

    label: str
    identities: IdentityLookup | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ChildTemplate:
    """A child object kind (e.g. batch/v1 Job) whose pod templates wasp stamps, or (``mode:
    delegate``, batch/v1 Jobs only) annotates so that the 1.37 Job controller creates the
    child's PodGroup in the parent's Workload and stamps its pods."""

    api_version: str
    kind: str
    templates: tuple[TemplateMapping, ...]
    # The plural resource name (e.g. "jobs"); only the chart's webhook rules need it, so
    # ``None`` (not given) is fine for the server and the CLI.
    resource: str | None = None
    mode: ChildMode = "stamp"
    # delegate: how many child Jobs the controller makes from one element of the mapped
    # leaf's context (JobSet: replicas); more than one would share one PodGroup name.
    children: PodCount | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    source: str
    group: str
    versions: tuple[str, ...]
    kind: str
    resource: str
    root: NodeSpec
    allowed_policies: frozenset[PolicyKind]
    allowed_disruption_modes: frozenset[DisruptionKind]
    declarative_validation: bool = True
    update_rules: UpdateRules = "immutable"
    feature_gate: str | None = None
    defaults: tuple[DefaultRule, ...] = ()
    stamp_pods: bool = False
    child_templates: tuple[ChildTemplate, ...] = ()
    membership: Membership | None = None
    # spec.native: how to recognise a controller that manages WAS itself (webhook.policy.native)
    native: Native | None = None
    warnings: tuple[str, ...] = ()
    enforcement: Enforcement = "deny"
    # A warning for every object of this kind that carries blocks (``spec.notice``).
    notice: str | None = None
    refused_fields: tuple[RefusedField, ...] = ()
    # Whether its gangs can form: the rules' settings and the controller's start order.
    schedulability: Schedulability = field(default_factory=Schedulability)
    # Derived once: the compiler options every review of this kind uses. The compiler's own
    # declarative layer is off, because the structural layer has judged the whole embedding
    # already (the 1.37 Job path does the same).
    build_options: BuildOptions = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        options = BuildOptions(
            allowed_policies=self.allowed_policies,
            allowed_disruption_modes=self.allowed_disruption_modes,
            disable_declarative_validation=True,
        )
        object.__setattr__(self, "build_options", options)

    def enforced(self, enforcement: Enforcement | None) -> Policy:
        """This policy with ``enforcement`` in place of its own (``None``: unchanged), for
        the ``--enforcement`` flag that overrides every policy's value."""
        if enforcement is None or enforcement == self.enforcement:
            return self
        return replace(self, enforcement=enforcement)

    def node(self, node_id: str) -> NodeSpec | None:
        return next((n for n in self.root.walk() if n.id == node_id), None)
