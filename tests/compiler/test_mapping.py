"""Mapping user blocks to the IR (docs/design.md §6.3) and resolution (docs/design.md §6.4): row 54 and the mapper rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.builders import (
    basic,
    cgang,
    child,
    claim,
    composite,
    composite_input,
    config,
    gang,
    leaf,
    leaf_input,
    mode,
    topology,
)
from webhook.compiler import (
    DisruptionMode,
    GangPolicy,
    ResourceClaim,
    SchedulingConfig,
    SchedulingConstraints,
    SchedulingPolicy,
    TopologyConstraint,
    resolve_scheduling_config,
)
from webhook.compiler.mapconfig import (
    map_composite_group_input,
    map_composite_scheduling_policy,
    map_disruption_mode,
    map_resource_claims,
    map_scheduling_policy,
    map_topology_constraints,
    map_workload_input,
)


@dataclass(frozen=True)
class Case:
    id: str
    got: Callable[[], object]
    expected: object


def leaf_policy(value: object) -> SchedulingPolicy | None:
    return map_scheduling_policy(value)


def composite_policy(value: object) -> SchedulingPolicy | None:
    return map_composite_scheduling_policy(value)


CASES = [
    # ---------------------------------------------------------------- row 54: empty unions are unset
    Case("row-54: an empty policy maps to unset", lambda: leaf_policy({}), None),
    Case("row-54: an empty constraints block maps to unset", lambda: map_topology_constraints({}), None),
    Case(
        "row-54: constraints with an empty topology list map to unset",
        lambda: map_topology_constraints(topology()),
        None,
    ),
    Case("row-54: an empty disruption mode maps to unset", lambda: map_disruption_mode({}), None),
    Case(
        "row-54: an empty policy lets the default gang 4 survive",
        lambda: resolve_scheduling_config(leaf(policy={}, default=config("gang", 4))).policy,
        SchedulingPolicy(gang=GangPolicy(4)),
    ),
    Case(
        "row-54: empty constraints let the default topology survive",
        lambda: (
            resolve_scheduling_config(
                leaf(constraints=topology(), default=config(topology=["zone"]))
            ).constraints
        ),
        SchedulingConstraints([TopologyConstraint("zone")]),
    ),
    Case(
        "row-54: an empty disruption mode lets the default single survive",
        lambda: (
            resolve_scheduling_config(
                leaf(disruption={}, default=config(disruption="single"))
            ).disruption_mode
        ),
        DisruptionMode(single=True),
    ),
    Case(
        "row-54: an empty composite policy lets the default composite gang survive",
        lambda: (
            resolve_scheduling_config(
                composite("r", leaf("a", path=child(0)), policy={}, default=config("gang", 2))
            ).policy
        ),
        SchedulingPolicy(gang=GangPolicy(2)),
    ),
    # ---------------------------------------------------------------- policy
    Case("basic maps to basic", lambda: leaf_policy(basic()), SchedulingPolicy.of_basic()),
    Case(
        "gang with minCount 3 maps to gang 3",
        lambda: leaf_policy(gang(3)),
        SchedulingPolicy(gang=GangPolicy(3)),
    ),
    Case("gang{} keeps a nil minCount", lambda: leaf_policy(gang()), SchedulingPolicy(gang=GangPolicy(None))),
    Case(
        "a policy with basic and gang maps to basic (checked first)",
        lambda: leaf_policy({"basic": {}, "gang": {"minCount": 2}}),
        SchedulingPolicy.of_basic(),
    ),
    Case(
        "a composite gang carries minGroupCount in the gang count",
        lambda: composite_policy(cgang(5)),
        SchedulingPolicy(gang=GangPolicy(5)),
    ),
    Case(
        "a composite gang ignores a leaf minCount",
        lambda: composite_policy(gang(5)),
        SchedulingPolicy(gang=GangPolicy(None)),
    ),
    Case(
        "a null member is unset (Go decoder)",
        lambda: leaf_policy({"basic": None, "gang": {"minCount": 1}}),
        SchedulingPolicy(gang=GangPolicy(1)),
    ),
    Case("a policy of the wrong JSON type maps to unset", lambda: leaf_policy("gang"), None),
    Case(
        "a boolean minCount is not a number",
        lambda: leaf_policy({"gang": {"minCount": True}}),
        SchedulingPolicy(gang=GangPolicy(None)),
    ),
    # ---------------------------------------------------------------- constraints and disruption
    Case(
        "only key is copied from a topology entry",
        lambda: map_topology_constraints({"topology": [{"key": "zone", "extra": 1}]}),
        SchedulingConstraints([TopologyConstraint("zone")]),
    ),
    Case("single maps to single", lambda: map_disruption_mode(mode("single")), DisruptionMode(single=True)),
    Case("all maps to all", lambda: map_disruption_mode(mode("all")), DisruptionMode(all=True)),
    Case(
        "a disruption mode with single and all maps to single (checked first)",
        lambda: map_disruption_mode(mode("single", "all")),
        DisruptionMode(single=True),
    ),
    # ---------------------------------------------------------------- claims
    Case(
        "claims are copied entry by entry",
        lambda: map_resource_claims([claim("a", ref="ra"), claim("b", template="tb")]),
        [ResourceClaim("a", "ra"), ResourceClaim("b", resource_claim_template_name="tb")],
    ),
    Case("no claims map to an empty list", lambda: map_resource_claims(None), []),
    # ---------------------------------------------------------------- slots
    Case(
        "a leaf maps its leaf slots",
        lambda: map_workload_input(
            leaf_input(
                policy=gang(2),
                constraints=topology("z"),
                disruption=mode("all"),
                claims=[claim("c", ref="r")],
            )
        ),
        SchedulingConfig(
            policy=SchedulingPolicy(gang=GangPolicy(2)),
            constraints=SchedulingConstraints([TopologyConstraint("z")]),
            disruption_mode=DisruptionMode(all=True),
            resource_claims=[ResourceClaim("c", "r")],
        ),
    ),
    Case(
        "a leaf ignores composite slot data",
        lambda: map_workload_input(leaf_input(composite_policy=cgang(2), composite_disruption=mode("all"))),
        SchedulingConfig(),
    ),
    Case(
        "a composite maps only its composite slots and never claims",
        lambda: map_composite_group_input(
            composite_input(
                policy=cgang(3),
                constraints=topology("rack"),
                disruption=mode("single"),
                leaf_policy=basic(),
                leaf_claims=[claim("c", ref="r")],
            )
        ),
        SchedulingConfig(
            policy=SchedulingPolicy(gang=GangPolicy(3)),
            constraints=SchedulingConstraints([TopologyConstraint("rack")]),
            disruption_mode=DisruptionMode(single=True),
        ),
    ),
    Case(
        "priorityClassName never comes from the input",
        lambda: (
            map_workload_input(leaf_input(policy={"basic": {}, "priorityClassName": "x"})).priority_class_name
        ),
        "",
    ),
    # ---------------------------------------------------------------- resolution (docs/design.md §6.4)
    Case(
        "a user gang{} replaces a default gang 4 as a whole",
        lambda: resolve_scheduling_config(leaf(policy=gang(), default=config("gang", 4))).policy,
        SchedulingPolicy(gang=GangPolicy(None)),
    ),
    Case(
        "the merge is field by field",
        lambda: resolve_scheduling_config(
            leaf(constraints=topology("z"), default=config("gang", 4, disruption="all"))
        ),
        SchedulingConfig(
            policy=SchedulingPolicy(gang=GangPolicy(4)),
            constraints=SchedulingConstraints([TopologyConstraint("z")]),
            disruption_mode=DisruptionMode(all=True),
        ),
    ),
    Case(
        "no default and no input resolve to an empty config",
        lambda: resolve_scheduling_config(leaf()),
        SchedulingConfig(),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_mapping(case: Case) -> None:
    assert case.got() == case.expected


def test_callbacks_see_copies_never_the_callers_objects() -> None:
    """No aliasing (docs/design.md §6.3): a callback that mutates everything it sees changes no input."""
    claims = [claim("a", ref="ra")]
    default = config("gang", 4, disruption="single", topology=["zone"], claims=[ResourceClaim("d", "rd")])
    blocks = (gang(2), topology("rack"), claims)
    before = copy.deepcopy((blocks, default))

    def vandal(cfg: SchedulingConfig) -> None:
        assert cfg.policy is not None and cfg.policy.gang is not None and cfg.constraints is not None
        cfg.policy.gang.min_count = 99
        cfg.constraints.topology.append(TopologyConstraint("x"))
        cfg.resource_claims[0].name = "changed"
        cfg.resource_claims.append(ResourceClaim("new"))
        cfg.priority_class_name = "changed"

    item = leaf(
        policy=blocks[0], constraints=blocks[1], claims=blocks[2], default=default, callbacks=[vandal]
    )
    resolve_scheduling_config(item)
    resolve_scheduling_config(item)
    assert (blocks, default) == before
    assert resolve_scheduling_config(leaf(default=default)).policy == SchedulingPolicy(gang=GangPolicy(4))
