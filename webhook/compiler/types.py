"""The compiler's inputs (the WorkloadItem tree) and its intermediate representation.

The IR (:class:`SchedulingConfig`) is version independent, as upstream's is. It is
mutable on purpose: callbacks adjust a *private deep copy* of it after the merge, exactly
like upstream's ``func(*SchedulingConfig)`` callbacks; the caller's inputs are never
touched because resolution always starts from copies.

User building blocks stay plain decoded JSON (what an AdmissionReview or a manifest
carries); :mod:`webhook.compiler.mapconfig` turns them into IR.
"""

from __future__ import annotations

import enum
import typing as t
from dataclasses import dataclass, field

from webhook.vocab.field import FieldPath, Segment

__all__ = [
    "Block",
    "BuildOptions",
    "Callback",
    "EMPTY_INPUT",
    "DisruptionKind",
    "DisruptionMode",
    "GangPolicy",
    "PolicyKind",
    "ResourceClaim",
    "SchedulingConfig",
    "SchedulingConstraints",
    "SchedulingPolicy",
    "TopologyConstraint",
    "WorkloadInput",
    "WorkloadItem",
]


class PolicyKind(enum.Enum):
    BASIC = "basic"
    GANG = "gang"


class DisruptionKind(enum.Enum):
    SINGLE = "single"
    ALL = "all"


@dataclass(slots=True)
class GangPolicy:
    """Gang policy; for a composite node ``min_count`` carries ``minGroupCount``.

    ``min_count=None`` means "not set yet": a callback (or the caller's default) must fill
    it before compilation, otherwise building fails.
    """

    min_count: int | None = None


@dataclass(slots=True)
class SchedulingPolicy:
    """Union of basic and gang. Both may be set only through defaults or callbacks."""

    basic: bool = False
    gang: GangPolicy | None = None

    @classmethod
    def of_basic(cls) -> SchedulingPolicy:
        return cls(basic=True)

    def copy(self) -> SchedulingPolicy:
        return SchedulingPolicy(self.basic, None if self.gang is None else GangPolicy(self.gang.min_count))

    def kind(self) -> PolicyKind:
        """The effective kind: an empty policy, or one with basic set, is basic (compiler rule)."""
        return PolicyKind.GANG if self.gang is not None and not self.basic else PolicyKind.BASIC


@dataclass(slots=True)
class TopologyConstraint:
    key: str


@dataclass(slots=True)
class SchedulingConstraints:
    topology: list[TopologyConstraint] = field(default_factory=list)

    def copy(self) -> SchedulingConstraints:
        return SchedulingConstraints([TopologyConstraint(c.key) for c in self.topology])


@dataclass(slots=True)
class DisruptionMode:
    """Union of single and all. When both are set (defaults/callbacks only) ``all`` wins."""

    single: bool = False
    all: bool = False

    def copy(self) -> DisruptionMode:
        return DisruptionMode(self.single, self.all)

    def kind(self) -> DisruptionKind | None:
        if self.all:
            return DisruptionKind.ALL
        if self.single:
            return DisruptionKind.SINGLE
        return None


@dataclass(slots=True)
class ResourceClaim:
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


@dataclass(slots=True)
class SchedulingConfig:
    """The resolved scheduling configuration of one node. ``None`` fields are unset."""

    policy: SchedulingPolicy | None = None
    constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    priority_class_name: str = ""

    def copy(self) -> SchedulingConfig:
        """A deep copy, field by field: the types are known, so ``copy.deepcopy``'s generic
        walk (memo, reduce protocol) buys nothing here."""
        return SchedulingConfig(
            None if self.policy is None else self.policy.copy(),
            None if self.constraints is None else self.constraints.copy(),
            None if self.disruption_mode is None else self.disruption_mode.copy(),
            [
                ResourceClaim(c.name, c.resource_claim_name, c.resource_claim_template_name)
                for c in self.resource_claims
            ],
            self.priority_class_name,
        )


Callback = t.Callable[[SchedulingConfig], None]
"""Adjusts the merged config of one node in place (it only ever sees a private copy)."""


class Block(t.NamedTuple):
    """One input slot: where the block sits below the node's path, and what the user wrote.

    Immutable; a NamedTuple, the lightest immutable record (four per tree node, per review).

    ``leaf`` holds a ``WorkloadPodGroup*`` value, ``composite`` a ``WorkloadCompositePodGroup*``
    value, both as decoded JSON; ``None`` means the user did not write that block. A leaf
    node may only fill ``leaf`` data and a composite node only ``composite`` data.
    """

    path_elements: tuple[Segment, ...] = ()
    leaf: object = None
    composite: object = None


class WorkloadInput(t.NamedTuple):
    """The user's four building blocks for one node (resource claims exist on leaves only)."""

    policy: Block = Block(("schedulingPolicy",))
    constraints: Block = Block(("schedulingConstraints",))
    disruption_mode: Block = Block(("disruptionMode",))
    resource_claims: Block = Block(("resourceClaims",))

    @classmethod
    def from_leaf(cls, scheduling: t.Mapping[str, object] | None) -> WorkloadInput:
        """Slots from a leaf embedding (``{schedulingPolicy, schedulingConstraints, ...}``)."""
        if not isinstance(scheduling, dict):
            return EMPTY_INPUT
        # Blocks are immutable, so an absent one is the shared empty slot.
        policy, constraints = scheduling.get("schedulingPolicy"), scheduling.get("schedulingConstraints")
        disruption, claims = scheduling.get("disruptionMode"), scheduling.get("resourceClaims")
        return cls(
            EMPTY_INPUT.policy if policy is None else Block(_POLICY, policy),
            EMPTY_INPUT.constraints if constraints is None else Block(_CONSTRAINTS, constraints),
            EMPTY_INPUT.disruption_mode if disruption is None else Block(_DISRUPTION, disruption),
            EMPTY_INPUT.resource_claims if claims is None else Block(_CLAIMS, claims),
        )

    @classmethod
    def from_composite(cls, scheduling: t.Mapping[str, object] | None) -> WorkloadInput:
        """Slots from a composite embedding (``{schedulingPolicy, schedulingConstraints, disruptionMode}``)."""
        s = scheduling if isinstance(scheduling, dict) else {}
        return cls(
            policy=Block(("schedulingPolicy",), composite=s.get("schedulingPolicy")),
            constraints=Block(("schedulingConstraints",), composite=s.get("schedulingConstraints")),
            disruption_mode=Block(("disruptionMode",), composite=s.get("disruptionMode")),
        )


_POLICY: t.Final = ("schedulingPolicy",)
_CONSTRAINTS: t.Final = ("schedulingConstraints",)
_DISRUPTION: t.Final = ("disruptionMode",)
_CLAIMS: t.Final = ("resourceClaims",)
EMPTY_INPUT: t.Final = WorkloadInput()


@dataclass(eq=False, slots=True)
class WorkloadItem:
    """One node of a controller's logical workload.

    ``name`` becomes the (Composite)PodGroupTemplate name and must be unique in the whole
    tree. ``path`` is the absolute path of the node's scheduling block in the controller's
    API; ``None`` makes errors relative (``schedulingPolicy.gang.minCount``).
    ``default_config`` (may be ``None``) supplies every field the user left unset.
    ``callbacks`` run in order on the merged config; ``None`` entries are skipped.
    Non-empty ``children`` make the node a composite. ``None`` entries in ``children`` are
    reported by the tree check, as upstream reports nil children.
    """

    name: str
    path: FieldPath | None = None
    default_config: SchedulingConfig | None = None
    input: WorkloadInput = EMPTY_INPUT  # immutable, so shared
    callbacks: t.Sequence[Callback | None] = ()
    children: t.Sequence[WorkloadItem | None] = ()

    @property
    def is_composite(self) -> bool:
        return bool(self.children)

    @property
    def base_path(self) -> FieldPath:
        return self.path if self.path is not None else FieldPath()


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """Builder options (upstream ``BuildOptions``).

    ``owner`` is an ownerReference dict (``apiVersion``, ``kind``, ``name``, ``uid``, ...);
    documented upstream as optional, but ``build_workload`` requires it. The allow-lists
    deny by default: an empty set allows nothing.
    """

    name: str = ""
    namespace: str = ""
    owner: t.Mapping[str, object] | None = None
    allowed_policies: frozenset[PolicyKind] = frozenset()
    allowed_disruption_modes: frozenset[DisruptionKind] = frozenset()
    disable_declarative_validation: bool = False
