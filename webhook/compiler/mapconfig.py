"""Map the user's building blocks (decoded JSON) into the IR (upstream ``mapconfig.go``:
``mapWorkloadInput``, ``mapCompositeGroupInput``, ``mapSchedulingPolicy``, ... in snake_case).

Upstream semantics, kept exactly:

* a union with no member set maps to *unset*, so a default survives;
* when both members are set the mapper takes the one it checks first (``basic`` for
  policies, ``single`` for disruption modes);
* constraints with an empty ``topology`` list map to unset; only ``key`` is copied;
* a composite node maps only its composite slots and never resource claims;
* every value is copied, so a callback can never change the caller's objects;
* a list longer than its declared ``maxItems`` (which never validates: ``TooMany``) is
  mapped only up to one entry past that limit, so it still compiles to a list over the
  limit, and a hostile list of any length costs no per-entry work.

The mapper is total: values of the wrong JSON type (which the structural layer reports)
are treated as unset instead of raising, because admission must never crash on input.
JSON ``null`` is unset, as Go's decoder makes it.
"""

from __future__ import annotations

import itertools
import typing as t

from webhook.compiler.types import (
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
)
from webhook.declarative import BlockType, block_schema

__all__ = [
    "disruption_kind",
    "map_composite_group_input",
    "map_composite_scheduling_policy",
    "map_disruption_mode",
    "map_resource_claims",
    "map_scheduling_policy",
    "map_topology_constraints",
    "map_workload_input",
    "policy_kind",
]


def _mapped_entries(block: BlockType, *members: str) -> int:
    """One past the declared ``maxItems`` of a list in ``block`` (the schema document decides)."""
    schema = block_schema(block)
    for member in members:
        schema = schema["properties"][member]
    return int(schema["maxItems"]) + 1


# Leaf and composite topology share this mapper: one past the larger limit is over both.
_TOPOLOGY_ENTRIES: t.Final = max(
    _mapped_entries(BlockType.CONSTRAINTS, "topology"),
    _mapped_entries(BlockType.COMPOSITE_CONSTRAINTS, "topology"),
)
_CLAIM_ENTRIES: t.Final = _mapped_entries(BlockType.RESOURCE_CLAIMS)


def _int32(value: object) -> int | None:
    # bool is an int subclass in Python but never a number in JSON.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def policy_kind(value: object) -> PolicyKind | None:
    """The kind :func:`map_scheduling_policy` maps ``value`` to, without building it (``None``: unset)."""
    if not isinstance(value, dict):
        return None
    if value.get("basic") is not None:
        return PolicyKind.BASIC
    if value.get("gang") is not None:
        return PolicyKind.GANG
    return None


def map_scheduling_policy(value: object) -> SchedulingPolicy | None:
    """``{basic: {}}`` / ``{gang: {minCount: n}}`` → IR; no member set → ``None``."""
    return _map_policy(value, "minCount")


def map_composite_scheduling_policy(value: object) -> SchedulingPolicy | None:
    """``{basic: {}}`` / ``{gang: {minGroupCount: n}}`` → IR (the count travels in ``Gang.min_count``)."""
    return _map_policy(value, "minGroupCount")


def _map_policy(value: object, count_field: str) -> SchedulingPolicy | None:
    kind = policy_kind(value)
    if kind is None:
        return None
    if kind is PolicyKind.BASIC:
        return SchedulingPolicy(True)
    gang = t.cast(dict[str, object], value)["gang"]
    count = _int32(gang.get(count_field)) if isinstance(gang, dict) else None
    return SchedulingPolicy(False, GangPolicy(count))


def map_topology_constraints(value: object) -> SchedulingConstraints | None:
    """Topology keys → IR; leaf and composite constraints (upstream's two mappers) share it."""
    if not isinstance(value, dict):
        return None
    topology = value.get("topology")
    if not isinstance(topology, list) or not topology:
        return None
    entries = []
    for entry in itertools.islice(topology, _TOPOLOGY_ENTRIES):
        key = entry.get("key") if isinstance(entry, dict) else None
        entries.append(TopologyConstraint(key if isinstance(key, str) else ""))
    return SchedulingConstraints(entries)


def disruption_kind(value: object) -> DisruptionKind | None:
    """The kind :func:`map_disruption_mode` maps ``value`` to, without building it."""
    if not isinstance(value, dict):
        return None
    if value.get("single") is not None:
        return DisruptionKind.SINGLE
    if value.get("all") is not None:
        return DisruptionKind.ALL
    return None


def map_disruption_mode(value: object) -> DisruptionMode | None:
    kind = disruption_kind(value)
    if kind is None:
        return None
    return DisruptionMode(single=True) if kind is DisruptionKind.SINGLE else DisruptionMode(all=True)


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def map_resource_claims(value: object) -> list[ResourceClaim]:
    if not isinstance(value, list):
        return []
    claims = []
    for item in itertools.islice(value, _CLAIM_ENTRIES):
        if not isinstance(item, dict):
            continue
        name = item.get("name")
        claims.append(
            ResourceClaim(
                name=name if isinstance(name, str) else "",
                resource_claim_name=_opt_str(item.get("resourceClaimName")),
                resource_claim_template_name=_opt_str(item.get("resourceClaimTemplateName")),
            )
        )
    return claims


def map_workload_input(inp: WorkloadInput) -> SchedulingConfig:
    """The leaf slots of ``inp`` as a partial config (unset fields are ``None``/empty)."""
    return SchedulingConfig(
        map_scheduling_policy(inp.policy.leaf),
        map_topology_constraints(inp.constraints.leaf),
        map_disruption_mode(inp.disruption_mode.leaf),
        map_resource_claims(inp.resource_claims.leaf),
    )


def map_composite_group_input(inp: WorkloadInput) -> SchedulingConfig:
    """The composite slots of ``inp``; ``minGroupCount`` travels in ``Gang.min_count``."""
    return SchedulingConfig(
        policy=map_composite_scheduling_policy(inp.policy.composite),
        constraints=map_topology_constraints(inp.constraints.composite),
        disruption_mode=map_disruption_mode(inp.disruption_mode.composite),
    )
