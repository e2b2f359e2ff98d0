"""Functional-option builders for compiler inputs.

Every test that needs a WorkloadItem tree, a default config or builder options makes it
here, so a table row reads like the behaviour it checks:

    leaf("pgt", policy=gang(2), disruption=mode("all"))
    composite("root", leaf("a", path=child(0)), policy=cgang(2))
    options(policies=("gang",), dv=False)

Blocks are plain decoded JSON (what a manifest or an AdmissionReview carries); the
``default`` configs are IR. ``None`` always means "not written". Block makers return fresh
dicts on every call, so no two cases share (and could mask a mutation of) one input object.
"""

from __future__ import annotations

import typing as t

from webhook.compiler.types import (
    Block,
    BuildOptions,
    Callback,
    DisruptionKind,
    DisruptionMode,
    GangPolicy,
    PolicyKind,
    ResourceClaim,
    SchedulingConfig,
    SchedulingConstraints,
    SchedulingPolicy,
    TopologyConstraint,
    WorkloadInput,
    WorkloadItem,
)
from webhook.vocab.field import FieldPath

Json = dict[str, t.Any]

S = FieldPath.of("spec", "scheduling")
"""The root ``Path`` the behaviour table assumes (``spec.scheduling``)."""

JOB_OWNER: t.Final[Json] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "name": "my-job",
    "uid": "job-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}

FULL_POLICIES = ("basic", "gang")
FULL_MODES = ("single", "all")


# --------------------------------------------------------------------------- user blocks (JSON)


def basic() -> Json:
    return {"basic": {}}


def mode(*members: str) -> Json:
    """A disruption-mode block with the given members: ``mode("all")``, ``mode("single", "all")``."""
    return {m: {} for m in members}


def gang(min_count: int | None = None) -> Json:
    """A leaf gang policy block; ``None`` leaves ``minCount`` out."""
    return {"gang": {} if min_count is None else {"minCount": min_count}}


def cgang(min_group_count: int | None = None) -> Json:
    """A composite gang policy block; ``None`` leaves ``minGroupCount`` out."""
    return {"gang": {} if min_group_count is None else {"minGroupCount": min_group_count}}


def topology(*keys: str) -> Json:
    return {"topology": [{"key": k} for k in keys]}


def claim(name: str, *, ref: str | None = None, template: str | None = None) -> Json:
    out: Json = {"name": name}
    if ref is not None:
        out["resourceClaimName"] = ref
    if template is not None:
        out["resourceClaimTemplateName"] = template
    return out


def at(dotted: str) -> FieldPath:
    """A path from its rendered form: ``at("spec.groups[0].scheduling")``."""
    return FieldPath.parse(dotted)


def child(*indices: int, base: FieldPath = S) -> FieldPath:
    """The path of a nested node: ``child(0, 1)`` is ``spec.scheduling.children[0].children[1]``."""
    path = base
    for i in indices:
        path = path.child("children", i)
    return path


# --------------------------------------------------------------------------- tree nodes


def leaf_input(
    *,
    policy: object = None,
    constraints: object = None,
    disruption: object = None,
    claims: object = None,
    composite_policy: object = None,
    composite_disruption: object = None,
) -> WorkloadInput:
    """Leaf slots; the ``composite_*`` options fill the wrong kind of slot (tree-check tests)."""
    return WorkloadInput(
        policy=Block(("schedulingPolicy",), leaf=policy, composite=composite_policy),
        constraints=Block(("schedulingConstraints",), leaf=constraints),
        disruption_mode=Block(("disruptionMode",), leaf=disruption, composite=composite_disruption),
        resource_claims=Block(("resourceClaims",), leaf=claims),
    )


def composite_input(
    *,
    policy: object = None,
    constraints: object = None,
    disruption: object = None,
    leaf_policy: object = None,
    leaf_disruption: object = None,
    leaf_claims: object = None,
) -> WorkloadInput:
    """Composite slots; the ``leaf_*`` options fill the wrong kind of slot (tree-check tests)."""
    return WorkloadInput(
        policy=Block(("schedulingPolicy",), leaf=leaf_policy, composite=policy),
        constraints=Block(("schedulingConstraints",), composite=constraints),
        disruption_mode=Block(("disruptionMode",), leaf=leaf_disruption, composite=disruption),
        resource_claims=Block(("resourceClaims",), leaf=leaf_claims),
    )


def leaf(
    name: str = "pgt",
    *,
    path: FieldPath | None = S,
    policy: object = None,
    constraints: object = None,
    disruption: object = None,
    claims: object = None,
    default: SchedulingConfig | None = None,
    callbacks: t.Sequence[Callback | None] = (),
    input: WorkloadInput | None = None,
) -> WorkloadItem:
    """A leaf node (one PodGroupTemplate)."""
    return WorkloadItem(
        name=name,
        path=path,
        default_config=default,
        input=input
        if input is not None
        else leaf_input(policy=policy, constraints=constraints, disruption=disruption, claims=claims),
        callbacks=tuple(callbacks),
    )


def composite(
    name: str,
    *children: WorkloadItem | None,
    path: FieldPath | None = S,
    policy: object = None,
    constraints: object = None,
    disruption: object = None,
    default: SchedulingConfig | None = None,
    callbacks: t.Sequence[Callback | None] = (),
    input: WorkloadInput | None = None,
) -> WorkloadItem:
    """A composite node (one CompositePodGroupTemplate) over ``children``."""
    return WorkloadItem(
        name=name,
        path=path,
        default_config=default,
        input=input
        if input is not None
        else composite_input(policy=policy, constraints=constraints, disruption=disruption),
        callbacks=tuple(callbacks),
        children=tuple(children),
    )


# --------------------------------------------------------------------------- IR defaults


def config(
    policy: str | None = None,
    min_count: int | None = None,
    *,
    disruption: str | None = None,
    topology: t.Sequence[str] = (),
    claims: t.Sequence[ResourceClaim] = (),
    priority_class_name: str = "",
) -> SchedulingConfig:
    """A ``DefaultConfig``: ``config("gang", 4, disruption="all", topology=["zone"])``."""
    pol = None
    if policy == "basic":
        pol = SchedulingPolicy.of_basic()
    elif policy == "gang":
        pol = SchedulingPolicy(gang=GangPolicy(min_count))
    elif policy is not None:
        raise ValueError(f"unknown policy {policy!r}")
    return SchedulingConfig(
        policy=pol,
        constraints=SchedulingConstraints([TopologyConstraint(k) for k in topology]) if topology else None,
        disruption_mode=DisruptionMode(single=disruption == "single", all=disruption == "all")
        if disruption
        else None,
        resource_claims=list(claims),
        priority_class_name=priority_class_name,
    )


# --------------------------------------------------------------------------- callbacks


def default_min_count(n: int) -> Callback:
    """The Job controller's callback shape: a gang without ``minCount`` gets ``n``."""

    def callback(cfg: SchedulingConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = n

    return callback


def scale_min_count(factor: int) -> Callback:
    """Multiplies a resolved gang ``minCount``."""

    def callback(cfg: SchedulingConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is not None:
            cfg.policy.gang.min_count *= factor

    return callback


class Recorder:
    """A callback that records every call, for "the callback never ran" rows."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, cfg: SchedulingConfig) -> None:
        self.calls += 1


# --------------------------------------------------------------------------- options

_POLICY_KINDS = {"basic": PolicyKind.BASIC, "gang": PolicyKind.GANG}
_MODE_KINDS = {"single": DisruptionKind.SINGLE, "all": DisruptionKind.ALL}


def options(
    *,
    policies: t.Iterable[str] = FULL_POLICIES,
    modes: t.Iterable[str] = FULL_MODES,
    dv: bool = True,
    owner: t.Mapping[str, object] | None = JOB_OWNER,
    name: str = "wl",
    namespace: str = "ns",
) -> BuildOptions:
    """Builder options; by default both allow-lists are full (as the behaviour table assumes).

    ``dv=False`` disables declarative validation, as in-tree controllers do.
    """
    return BuildOptions(
        name=name,
        namespace=namespace,
        owner=owner,
        allowed_policies=frozenset(_POLICY_KINDS[p] for p in policies),
        allowed_disruption_modes=frozenset(_MODE_KINDS[m] for m in modes),
        disable_declarative_validation=not dv,
    )
