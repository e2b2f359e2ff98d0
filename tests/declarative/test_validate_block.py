"""Structural layer of the compiler: the building-block schema and its error translation.

Assertions compare ``FieldError.key()`` tuples (cause type, dotted path) and, where the
contract names them, origins and bad values; never message wording.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from webhook import declarative as S
from webhook.declarative import (
    NO_OLD,
    BlockType,
    block_schema,
    reference_engine_only,
    schema_document,
    validate_block,
)
from webhook.vocab.field import FieldPath

BASE = FieldPath.parse("spec.scheduling")

REQ = "FieldValueRequired"
INV = "FieldValueInvalid"
TOO_MANY = "FieldValueTooMany"
DUP = "FieldValueDuplicate"
FORB = "FieldValueForbidden"
TYPE = "FieldValueTypeInvalid"

# docs/design.md §7.7, the Job's spec.scheduling.
EXAMPLE_JOB_SCHEDULING: dict[str, Any] = {
    "schedulingPolicy": {"gang": {"minCount": 8}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
    "disruptionMode": {"all": {}},
    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "llm-gpu-template"}],
}


def keys(block: BlockType, value: object, path: FieldPath = BASE, **kw: Any) -> list[tuple[str, str]]:
    return [e.key() for e in validate_block(block, value, path, **kw)]


def claim(name: object = "gpus", **refs: object) -> dict[str, object]:
    out: dict[str, object] = {"name": name}
    out.update(refs or {"resourceClaimTemplateName": "tmpl"})
    return out


def sched(**members: object) -> dict[str, object]:
    return dict(members)


P = "spec.scheduling"

# --------------------------------------------------------------------------- SchedulingConfiguration

SCHEDULING_CASES: list[tuple[str, object, list[tuple[str, str]]]] = [
    ("example-job-6.1", EXAMPLE_JOB_SCHEDULING, []),
    ("empty", {}, []),
    ("gang-without-mincount", sched(schedulingPolicy={"gang": {}}), []),
    ("basic", sched(schedulingPolicy={"basic": {}}), []),
    ("policy-no-member", sched(schedulingPolicy={}), [(INV, f"{P}.schedulingPolicy")]),
    (
        "policy-both-members",
        sched(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}),
        [(INV, f"{P}.schedulingPolicy")],
    ),
    (
        "mincount-0",
        sched(schedulingPolicy={"gang": {"minCount": 0}}),
        [(INV, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "mincount-negative",
        sched(schedulingPolicy={"gang": {"minCount": -1}}),
        [(INV, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "mincount-int32-overflow",
        sched(schedulingPolicy={"gang": {"minCount": 2**31}}),
        [(INV, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    ("mincount-int32-max", sched(schedulingPolicy={"gang": {"minCount": 2**31 - 1}}), []),
    (
        "mincount-string",
        sched(schedulingPolicy={"gang": {"minCount": "3"}}),
        [(TYPE, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "mincount-bool",
        sched(schedulingPolicy={"gang": {"minCount": True}}),
        [(TYPE, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "mincount-float-5.0",
        sched(schedulingPolicy={"gang": {"minCount": 5.0}}),
        [(TYPE, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "mincount-float-0.0-type-only",
        sched(schedulingPolicy={"gang": {"minCount": 0.0}}),
        [(TYPE, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "topology-two-entries",
        sched(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
        [(TOO_MANY, f"{P}.schedulingConstraints.topology")],
    ),
    (
        "topology-too-many-short-circuits-items",
        sched(schedulingConstraints={"topology": [{"key": ""}, {"key": "-bad-"}]}),
        [(TOO_MANY, f"{P}.schedulingConstraints.topology")],
    ),
    ("topology-empty-list", sched(schedulingConstraints={"topology": []}), []),
    (
        "topology-empty-key",
        sched(schedulingConstraints={"topology": [{"key": ""}]}),
        [(REQ, f"{P}.schedulingConstraints.topology[0].key")],
    ),
    (
        "topology-missing-key",
        sched(schedulingConstraints={"topology": [{}]}),
        [(REQ, f"{P}.schedulingConstraints.topology[0].key")],
    ),
    (
        "topology-254-char-key",
        sched(schedulingConstraints={"topology": [{"key": "a" * 254}]}),
        [(INV, f"{P}.schedulingConstraints.topology[0].key")],
    ),
    (
        "topology-prefixed-key",
        sched(schedulingConstraints={"topology": [{"key": "example.com/Rack_1"}]}),
        [],
    ),
    (
        "topology-not-a-list",
        sched(schedulingConstraints={"topology": {"key": "a"}}),
        [(TYPE, f"{P}.schedulingConstraints.topology")],
    ),
    (
        "topology-item-not-object",
        sched(schedulingConstraints={"topology": ["zone"]}),
        [(TYPE, f"{P}.schedulingConstraints.topology[0]")],
    ),
    ("disruption-empty", sched(disruptionMode={}), [(INV, f"{P}.disruptionMode")]),
    ("disruption-both", sched(disruptionMode={"single": {}, "all": {}}), [(INV, f"{P}.disruptionMode")]),
    ("disruption-single", sched(disruptionMode={"single": {}}), []),
    (
        "disruption-member-not-empty",
        sched(disruptionMode={"all": {"now": True}}),
        [(FORB, f"{P}.disruptionMode.all.now")],
    ),
    (
        "five-claims",
        sched(resourceClaims=[claim(f"c{i}") for i in range(5)]),
        [(TOO_MANY, f"{P}.resourceClaims")],
    ),
    (
        "five-claims-short-circuits-duplicates-and-items",
        sched(resourceClaims=[claim("same"), claim("same"), claim(""), {}, {"name": "x"}]),
        [(TOO_MANY, f"{P}.resourceClaims")],
    ),
    ("four-claims", sched(resourceClaims=[claim(f"c{i}") for i in range(4)]), []),
    (
        "duplicate-claim-names",
        sched(resourceClaims=[claim("a"), claim("a")]),
        [(DUP, f"{P}.resourceClaims[1]")],
    ),
    (
        "triplicate-claim-names",
        sched(resourceClaims=[claim("a"), claim("b"), claim("a"), claim("a")]),
        [(DUP, f"{P}.resourceClaims[2]"), (DUP, f"{P}.resourceClaims[3]")],
    ),
    (
        "claim-both-refs",
        sched(resourceClaims=[claim("a", resourceClaimName="x", resourceClaimTemplateName="y")]),
        [(INV, f"{P}.resourceClaims[0]")],
    ),
    ("claim-no-ref", sched(resourceClaims=[{"name": "a"}]), [(INV, f"{P}.resourceClaims[0]")]),
    ("claim-name-path", sched(resourceClaims=[claim("../claim")]), [(INV, f"{P}.resourceClaims[0].name")]),
    ("claim-name-upper", sched(resourceClaims=[claim("GPU")]), [(INV, f"{P}.resourceClaims[0].name")]),
    ("claim-name-64", sched(resourceClaims=[claim("a" * 64)]), [(INV, f"{P}.resourceClaims[0].name")]),
    ("claim-name-empty", sched(resourceClaims=[claim("")]), [(REQ, f"{P}.resourceClaims[0].name")]),
    (
        "claim-name-missing",
        sched(resourceClaims=[{"resourceClaimName": "x"}]),
        [(REQ, f"{P}.resourceClaims[0].name")],
    ),
    (
        "claim-bad-claim-name",
        sched(resourceClaims=[claim("a", resourceClaimName="Bad_Name")]),
        [(INV, f"{P}.resourceClaims[0].resourceClaimName")],
    ),
    (
        "claim-bad-template-name",
        sched(resourceClaims=[claim("a", resourceClaimTemplateName="x" * 254)]),
        [(INV, f"{P}.resourceClaims[0].resourceClaimTemplateName")],
    ),
    (
        "claim-empty-ref-is-set-and-invalid",
        sched(resourceClaims=[claim("a", resourceClaimName="")]),
        [(INV, f"{P}.resourceClaims[0].resourceClaimName")],
    ),
    (
        "claim-union-and-duplicate-same-item",
        sched(resourceClaims=[claim("a"), {"name": "a"}]),
        [(INV, f"{P}.resourceClaims[1]"), (DUP, f"{P}.resourceClaims[1]")],
    ),
    ("unknown-top-level-key", sched(policy={"gang": {}}), [(FORB, f"{P}.policy")]),
    (
        "unknown-keys-everywhere",
        sched(
            schedulingPolicy={"gang": {"minCount": 2, "maxCount": 3}, "Basic": {}},
            resourceClaims=[claim("a", resourceClaimName="r", source="x")],
        ),
        [
            (FORB, f"{P}.schedulingPolicy.gang.maxCount"),
            (FORB, f"{P}.schedulingPolicy.Basic"),
            (FORB, f"{P}.resourceClaims[0].source"),
        ],
    ),
    ("null-members-are-unset", sched(schedulingPolicy=None, disruptionMode=None, resourceClaims=None), []),
    ("null-union-member", sched(schedulingPolicy={"gang": None}), [(INV, f"{P}.schedulingPolicy")]),
    ("null-mincount", sched(schedulingPolicy={"gang": {"minCount": None}}), []),
    ("null-union-sibling", sched(schedulingPolicy={"gang": {}, "basic": None}), []),
    (
        "null-topology-item-is-zero-struct",
        sched(schedulingConstraints={"topology": [None]}),
        [(REQ, f"{P}.schedulingConstraints.topology[0].key")],
    ),
    ("null-required-name", sched(resourceClaims=[claim(None)]), [(REQ, f"{P}.resourceClaims[0].name")]),
    ("policy-wrong-type", sched(schedulingPolicy="gang"), [(TYPE, f"{P}.schedulingPolicy")]),
    ("claims-wrong-type", sched(resourceClaims={"name": "a"}), [(TYPE, f"{P}.resourceClaims")]),
    ("gang-wrong-type", sched(schedulingPolicy={"gang": 3}), [(TYPE, f"{P}.schedulingPolicy.gang")]),
    ("whole-value-wrong-type", ["schedulingPolicy"], [(TYPE, P)]),
    (
        # Members in the order the type declares them, whatever order the client wrote.
        "many-errors-in-declaration-order",
        {
            "resourceClaims": [claim("A"), {"name": "a"}],
            "disruptionMode": {},
            "schedulingPolicy": {"gang": {"minCount": 0}, "basic": {}},
        },
        [
            (INV, f"{P}.schedulingPolicy"),
            (INV, f"{P}.schedulingPolicy.gang.minCount"),
            (INV, f"{P}.disruptionMode"),
            (INV, f"{P}.resourceClaims[0].name"),
            (INV, f"{P}.resourceClaims[1]"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("value", "expected"), [c[1:] for c in SCHEDULING_CASES], ids=[c[0] for c in SCHEDULING_CASES]
)
def test_scheduling_configuration(value: object, expected: list[tuple[str, str]]) -> None:
    assert keys(BlockType.SCHEDULING, value) == expected


# --------------------------------------------------------------------------- individual blocks

CLAIM_PATH = FieldPath.parse("spec.scheduling.resourceClaims[0]")
COMPOSITE_PATH = FieldPath.parse("spec.compositePodGroupTemplates[0]")
C = "spec.compositePodGroupTemplates[0]"
R = "spec.scheduling.resourceClaims[0]"

BLOCK_CASES: list[tuple[str, BlockType, FieldPath, object, list[tuple[str, str]]]] = [
    ("policy-valid", BlockType.POLICY, BASE.child("schedulingPolicy"), {"gang": {"minCount": 1}}, []),
    (
        "policy-root-union",
        BlockType.POLICY,
        BASE.child("schedulingPolicy"),
        {},
        [(INV, f"{P}.schedulingPolicy")],
    ),
    (
        "constraints-valid",
        BlockType.CONSTRAINTS,
        BASE.child("schedulingConstraints"),
        {"topology": [{"key": "k"}]},
        [],
    ),
    (
        "disruption-root-union",
        BlockType.DISRUPTION,
        BASE.child("disruptionMode"),
        {},
        [(INV, f"{P}.disruptionMode")],
    ),
    ("claim-valid", BlockType.RESOURCE_CLAIM, CLAIM_PATH, claim("gpus"), []),
    (
        "claim-both-refs",
        BlockType.RESOURCE_CLAIM,
        CLAIM_PATH,
        claim("a", resourceClaimName="x", resourceClaimTemplateName="y"),
        [(INV, R)],
    ),
    (
        "claim-everything-wrong",
        BlockType.RESOURCE_CLAIM,
        CLAIM_PATH,
        {"name": "../claim", "resourceClaimName": "-x-", "extra": 1},
        [(INV, f"{R}.name"), (INV, f"{R}.resourceClaimName"), (FORB, f"{R}.extra")],
    ),
    (
        "claims-list-duplicate",
        BlockType.RESOURCE_CLAIMS,
        BASE.child("resourceClaims"),
        [claim("a"), claim("a")],
        [(DUP, f"{P}.resourceClaims[1]")],
    ),
    (
        "claims-nameless-items-are-duplicates",
        BlockType.RESOURCE_CLAIMS,
        BASE.child("resourceClaims"),
        [{"resourceClaimName": "x"}, {"resourceClaimName": "y"}],
        # Pre-order: the item's own error before its members'.
        [
            (REQ, f"{P}.resourceClaims[0].name"),
            (DUP, f"{P}.resourceClaims[1]"),
            (REQ, f"{P}.resourceClaims[1].name"),
        ],
    ),
    (
        "composite-policy-basic",
        BlockType.COMPOSITE_POLICY,
        COMPOSITE_PATH.child("schedulingPolicy"),
        {"basic": {}},
        [],
    ),
    (
        "composite-min-group-count-0",
        BlockType.COMPOSITE_POLICY,
        COMPOSITE_PATH.child("schedulingPolicy"),
        {"gang": {"minGroupCount": 0}},
        [(INV, f"{C}.schedulingPolicy.gang.minGroupCount")],
    ),
    (
        "composite-basic-and-gang",
        BlockType.COMPOSITE_POLICY,
        COMPOSITE_PATH.child("schedulingPolicy"),
        {"basic": {}, "gang": {"minGroupCount": 2}},
        [(INV, f"{C}.schedulingPolicy")],
    ),
    (
        "composite-gang-has-no-mincount",
        BlockType.COMPOSITE_POLICY,
        COMPOSITE_PATH.child("schedulingPolicy"),
        {"gang": {"minCount": 2}},
        [(FORB, f"{C}.schedulingPolicy.gang.minCount")],
    ),
    (
        "composite-constraints-too-many",
        BlockType.COMPOSITE_CONSTRAINTS,
        COMPOSITE_PATH.child("schedulingConstraints"),
        {"topology": [{"key": "a"}, {"key": "b"}]},
        [(TOO_MANY, f"{C}.schedulingConstraints.topology")],
    ),
    (
        "composite-disruption-none",
        BlockType.COMPOSITE_DISRUPTION,
        COMPOSITE_PATH.child("disruptionMode"),
        {},
        [(INV, f"{C}.disruptionMode")],
    ),
    (
        "composite-scheduling-no-claims",
        BlockType.COMPOSITE_SCHEDULING,
        COMPOSITE_PATH,
        {"schedulingPolicy": {"gang": {}}, "resourceClaims": []},
        [(FORB, f"{C}.resourceClaims")],
    ),
    (
        "composite-scheduling-deep",
        BlockType.COMPOSITE_SCHEDULING,
        COMPOSITE_PATH,
        {"schedulingPolicy": {"gang": {"minGroupCount": -1}}, "disruptionMode": {"all": {}, "single": {}}},
        [(INV, f"{C}.schedulingPolicy.gang.minGroupCount"), (INV, f"{C}.disruptionMode")],
    ),
    ("empty-path", BlockType.DISRUPTION, FieldPath(), {"single": {}, "all": {}}, [(INV, "")]),
]


@pytest.mark.parametrize(
    ("block", "path", "value", "expected"), [c[1:] for c in BLOCK_CASES], ids=[c[0] for c in BLOCK_CASES]
)
def test_blocks(block: BlockType, path: FieldPath, value: object, expected: list[tuple[str, str]]) -> None:
    assert keys(block, value, path) == expected


@pytest.mark.parametrize("block", list(BlockType), ids=[b.name for b in BlockType])
def test_none_is_unset(block: BlockType) -> None:
    assert validate_block(block, None, BASE) == []
    assert validate_block(block, None, BASE, old={"x": 1}) == []


# --------------------------------------------------------------------------- origins and bad values


def only(block: BlockType, value: object, **kw: Any) -> Any:
    errors = validate_block(block, value, BASE, **kw)
    assert len(errors) == 1, errors
    return errors[0]


def test_union_no_member_origin_and_value() -> None:
    err = only(BlockType.POLICY, {})
    assert (err.origin, err.bad_value) == ("union", "")
    assert "`basic`, `gang`" in err.detail  # member list in declaration order


def test_union_several_members_bad_value_in_declaration_order() -> None:
    err = only(BlockType.POLICY, {"gang": {}, "basic": {}})
    assert (err.origin, err.bad_value) == ("union", "{basic, gang}")


def test_minimum_and_maximum_origins() -> None:
    assert only(BlockType.POLICY, {"gang": {"minCount": 0}}).origin == "minimum"
    assert only(BlockType.POLICY, {"gang": {"minCount": 2**31}}).origin == "maximum"


def test_too_many_reports_count() -> None:
    err = only(BlockType.RESOURCE_CLAIMS, [claim(f"c{i}") for i in range(5)])
    assert (err.origin, err.bad_value) == ("maxItems", 5)


def test_format_origin_and_value() -> None:
    err = only(BlockType.CONSTRAINTS, {"topology": [{"key": "a" * 254}]})
    assert (err.origin, err.bad_value) == ("format=k8s-label-key", "a" * 254)
    err = only(BlockType.RESOURCE_CLAIM, claim("a", resourceClaimName="X"))
    assert err.origin == "format=k8s-long-name"
    err = only(BlockType.RESOURCE_CLAIM, claim("A"))
    assert err.origin == "format=k8s-short-name"


def test_duplicate_bad_value_is_the_item() -> None:
    # Choice: like apimachinery's validate.Unique, the whole (null-stripped) later item.
    item = {"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": None}
    err = only(BlockType.RESOURCE_CLAIMS, [claim("a"), item])
    assert err.bad_value == {"name": "a", "resourceClaimName": "x"}


def test_unknown_field_origin() -> None:
    err = only(BlockType.DISRUPTION, {"single": {}, "sIngle": {}})
    assert (err.key(), err.origin) == ((FORB, "spec.scheduling.sIngle"), "additionalProperties")


def test_type_invalid_carries_value() -> None:
    err = only(BlockType.POLICY, {"gang": {"minCount": "3"}})
    assert (err.bad_value, err.origin) == ("3", "type")


def test_errors_render() -> None:
    errors = validate_block(BlockType.SCHEDULING, {"disruptionMode": {}}, BASE)
    assert errors[0].error().startswith('spec.scheduling.disruptionMode: Invalid value: "": ')


# --------------------------------------------------------------------------- ratcheting

RATCHET_CASES: list[tuple[str, BlockType, object, object, list[tuple[str, str]]]] = [
    (
        "unchanged-invalid-mincount",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"gang": {"minCount": 0}}),
        sched(schedulingPolicy={"gang": {"minCount": 0}}),
        [],
    ),
    (
        "changed-to-invalid-mincount",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"gang": {"minCount": 3}}),
        sched(schedulingPolicy={"gang": {"minCount": 0}}),
        [(INV, f"{P}.schedulingPolicy.gang.minCount")],
    ),
    (
        "invalid-unchanged-while-sibling-changes",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"gang": {"minCount": 0}}, disruptionMode={"single": {}}),
        sched(schedulingPolicy={"gang": {"minCount": 0}}, disruptionMode={"all": {}}),
        [],
    ),
    (
        "union-unchanged-membership",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"basic": {}, "gang": {"minCount": 2}}),
        sched(schedulingPolicy={"basic": {}, "gang": {"minCount": 4}}),
        [],
    ),
    (
        "union-membership-changed",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"gang": {}}),
        sched(schedulingPolicy={"basic": {}, "gang": {}}),
        [(INV, f"{P}.schedulingPolicy")],
    ),
    (
        "union-old-absent",
        BlockType.SCHEDULING,
        {},
        sched(disruptionMode={}),
        [(INV, f"{P}.disruptionMode")],
    ),
    (
        "union-unchanged-empty",
        BlockType.DISRUPTION,
        {},
        {},
        [],
    ),
    (
        "old-none-is-create",
        BlockType.DISRUPTION,
        None,
        {},
        [(INV, P)],
    ),
    (
        "null-stripping-before-comparison",
        BlockType.SCHEDULING,
        sched(schedulingPolicy={"gang": {"minCount": 0}, "basic": None}),
        sched(schedulingPolicy={"gang": {"minCount": 0}}, disruptionMode=None),
        [],
    ),
    (
        "too-many-unchanged-list",
        BlockType.SCHEDULING,
        sched(resourceClaims=[claim(f"c{i}") for i in range(5)]),
        sched(resourceClaims=[claim(f"c{i}") for i in range(5)], disruptionMode={"single": {}}),
        [],
    ),
    (
        "too-many-changed-list",
        BlockType.SCHEDULING,
        sched(resourceClaims=[claim(f"c{i}") for i in range(5)]),
        sched(resourceClaims=[claim(f"c{i}") for i in range(6)]),
        [(TOO_MANY, f"{P}.resourceClaims")],
    ),
    (
        "duplicate-unchanged-list",
        BlockType.RESOURCE_CLAIMS,
        [claim("a"), claim("a")],
        [claim("a"), claim("a")],
        [],
    ),
    (
        "duplicate-list-grew",
        BlockType.RESOURCE_CLAIMS,
        [claim("a"), claim("a")],
        [claim("a"), claim("a"), claim("b")],
        [(DUP, "spec.scheduling[1]")],
    ),
    (
        "claims-correlate-by-name-not-position",
        BlockType.RESOURCE_CLAIMS,
        [claim("a", resourceClaimName="BAD"), claim("b")],
        [claim("b"), claim("a", resourceClaimName="BAD")],
        [],
    ),
    (
        "claim-ref-changed-revalidated",
        BlockType.RESOURCE_CLAIMS,
        [claim("a", resourceClaimName="BAD")],
        [claim("a", resourceClaimName="WORSE")],
        [(INV, "spec.scheduling[0].resourceClaimName")],
    ),
    (
        "topology-atomic-list-changed",
        BlockType.CONSTRAINTS,
        {"topology": [{"key": "-bad-"}]},
        {"topology": [{"key": "-worse-"}]},
        [(INV, "spec.scheduling.topology[0].key")],
    ),
    (
        "topology-atomic-list-unchanged",
        BlockType.CONSTRAINTS,
        {"topology": [{"key": "-bad-"}]},
        {"topology": [{"key": "-bad-"}]},
        [],
    ),
    (
        "required-still-missing-in-correlated-parent",
        BlockType.RESOURCE_CLAIM,
        {"resourceClaimName": "x"},
        {"resourceClaimName": "y"},
        [],
    ),
    (
        "required-removed",
        BlockType.RESOURCE_CLAIM,
        {"name": "a", "resourceClaimName": "x"},
        {"resourceClaimName": "x"},
        [(REQ, "spec.scheduling.name")],
    ),
    (
        "required-empty-string-equals-missing",
        BlockType.RESOURCE_CLAIM,
        {"name": "", "resourceClaimName": "x"},
        {"resourceClaimName": "y"},
        [],
    ),
]


@pytest.mark.parametrize(
    ("block", "old", "new", "expected"), [c[1:] for c in RATCHET_CASES], ids=[c[0] for c in RATCHET_CASES]
)
def test_ratcheting(block: BlockType, old: object, new: object, expected: list[tuple[str, str]]) -> None:
    assert keys(block, new, old=old) == expected


def test_no_old_is_create() -> None:
    bad = sched(schedulingPolicy={"gang": {"minCount": 0}})
    assert keys(BlockType.SCHEDULING, bad, old=NO_OLD) == keys(BlockType.SCHEDULING, bad)
    assert keys(BlockType.SCHEDULING, bad) == [(INV, f"{P}.schedulingPolicy.gang.minCount")]
    assert repr(NO_OLD) == "NO_OLD"


# --------------------------------------------------------------------------- the embedding as a whole

EMBEDDING_CASES: list[tuple[str, BlockType, object, list[tuple[str, str]]]] = [
    ("valid", BlockType.SCHEDULING, EXAMPLE_JOB_SCHEDULING, []),
    (
        "container-rules",
        BlockType.SCHEDULING,
        {
            "schedulingPolicy": [],
            "disruptionMode": "all",
            "resourceClaims": [claim("a"), claim("a")],
            "extra": {},
        },
        [
            (TYPE, f"{P}.schedulingPolicy"),
            (TYPE, f"{P}.disruptionMode"),
            (DUP, f"{P}.resourceClaims[1]"),
            (FORB, f"{P}.extra"),
        ],
    ),
    (
        "claims-max-items",
        BlockType.SCHEDULING,
        sched(resourceClaims=[{}] * 5),
        [(TOO_MANY, f"{P}.resourceClaims")],
    ),
    ("claims-not-a-list", BlockType.SCHEDULING, sched(resourceClaims={}), [(TYPE, f"{P}.resourceClaims")]),
    (
        "claim-item-not-object",
        BlockType.SCHEDULING,
        sched(resourceClaims=["gpus"]),
        [(TYPE, f"{P}.resourceClaims[0]")],
    ),
    ("value-not-object", BlockType.SCHEDULING, [], [(TYPE, P)]),
    (
        "composite",
        BlockType.COMPOSITE_SCHEDULING,
        {"schedulingPolicy": {}, "disruptionMode": {"all": {}, "single": {}}, "resourceClaims": []},
        [(INV, f"{P}.schedulingPolicy"), (INV, f"{P}.disruptionMode"), (FORB, f"{P}.resourceClaims")],
    ),
    (
        "claims-list",
        BlockType.RESOURCE_CLAIMS,
        [{"name": "a"}, {"name": "a"}],
        [(INV, f"{P}[0]"), (INV, f"{P}[1]"), (DUP, f"{P}[1]")],
    ),
]


@pytest.mark.parametrize(
    ("block", "value", "expected"), [c[1:] for c in EMBEDDING_CASES], ids=[c[0] for c in EMBEDDING_CASES]
)
def test_embedding(block: BlockType, value: object, expected: list[tuple[str, str]]) -> None:
    assert keys(block, value) == expected


def test_embedding_ratchets_too() -> None:
    old = sched(resourceClaims=[claim("a"), claim("a")])
    assert keys(BlockType.SCHEDULING, copy.deepcopy(old), old=old) == []


# --------------------------------------------------------------------------- the document


def test_document_is_valid_2020_12() -> None:
    doc = schema_document()
    Draft202012Validator.check_schema(doc)
    assert set(doc["$defs"]) >= {b.value for b in BlockType}
    for name, definition in doc["$defs"].items():
        assert definition.get("description"), name
        assert definition["type"] in ("object", "array"), name


def test_document_is_a_copy() -> None:
    doc = schema_document()
    doc["$defs"].clear()
    assert schema_document()["$defs"]


@pytest.mark.parametrize("block", list(BlockType), ids=[b.name for b in BlockType])
def test_block_schema_is_self_contained_and_valid(block: BlockType) -> None:
    schema = block_schema(block)
    Draft202012Validator.check_schema(schema)
    assert "$ref" not in json.dumps(schema)
    assert "$defs" not in schema


def _walk(node: object) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out.extend(_walk(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_walk(v))
    return out


def test_document_conventions() -> None:
    for node in _walk(schema_document()["$defs"]):
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False, node
        if "oneOf" in node:
            assert all(list(sub) == ["required"] and len(sub["required"]) == 1 for sub in node["oneOf"])


def test_example_job_validates_against_the_document() -> None:
    doc = schema_document()
    validator = Draft202012Validator({**doc, "$ref": "#/$defs/SchedulingConfiguration"})
    assert list(validator.iter_errors(EXAMPLE_JOB_SCHEDULING)) == []
    assert validate_block(BlockType.SCHEDULING, EXAMPLE_JOB_SCHEDULING, BASE) == []
    block = block_schema(BlockType.SCHEDULING)
    assert list(Draft202012Validator(block).iter_errors(EXAMPLE_JOB_SCHEDULING)) == []


# --------------------------------------------------------------------------- engine agreement

ALL_TABLE_VALUES: list[tuple[str, BlockType, object]] = (
    [(c[0], BlockType.SCHEDULING, c[1]) for c in SCHEDULING_CASES]
    + [(c[0], c[1], c[3]) for c in BLOCK_CASES]
    + [(c[0], c[1], c[2]) for c in EMBEDDING_CASES]
    + [(c[0] + "-old", c[1], c[2]) for c in RATCHET_CASES]
    + [(c[0] + "-new", c[1], c[3]) for c in RATCHET_CASES]
)
ALL_TABLE_VALUES = [c for c in ALL_TABLE_VALUES if c[2] is not None]  # None is an unset block


def _has_float(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


@pytest.mark.parametrize(
    ("block", "value"), [c[1:] for c in ALL_TABLE_VALUES], ids=[c[0] for c in ALL_TABLE_VALUES]
)
def test_engines_agree_on_table_cases(block: BlockType, value: object) -> None:
    fast, reference = S.verdicts(block, value)
    if _has_float(value):
        assert fast is None  # routed to the reference engine: jsonschema_rs takes 5.0 as an integer
    else:
        assert fast is reference
    if value is not None:
        assert (validate_block(block, value, BASE) == []) is reference
        with reference_engine_only():
            assert validate_block(block, value, BASE) == validate_block(block, value, BASE)


def test_fast_engine_would_accept_float_integers() -> None:
    # Why floats bypass the fast engine.
    rs = S.fast_validator(S.compiled_schema(BlockType.POLICY))
    assert rs.is_valid({"gang": {"minCount": 5.0}})
    assert keys(BlockType.POLICY, {"gang": {"minCount": 5.0}}) == [(TYPE, f"{P}.gang.minCount")]


# Realistic near-valid inputs.
NAMES = st.one_of(
    st.sampled_from(["gpus", "a", "b", "x.y", "a" * 63]),  # valid (mostly) and colliding
    st.sampled_from(["", "../claim", "GPU", "a" * 64, "a" * 254, "-x", "x-", "a/b", "example.com/Key"]),
    st.text(max_size=8),
)
KEYS = st.one_of(
    st.sampled_from(["topology.kubernetes.io/rack", "zone", "Rack_1", "example.com/key"]),
    st.sampled_from(["", "a" * 254, "example.com/" + "a" * 64, "/x", "a/b/c", "-x"]),
    st.text(max_size=8),
)
INTS = st.one_of(
    st.integers(1, 64),
    st.sampled_from([0, -1, 1, 2, 8, 2**31 - 1, 2**31, -(2**31), 2**63, 2**64]),
    st.integers(),
)
JUNK = st.one_of(
    st.none(), st.booleans(), INTS, st.just(5.0), st.just(0.5), st.text(max_size=4), st.just([]), st.just({})
)
# Mostly no extra key; sometimes a misspelt or misplaced one.
EXTRA = st.one_of(
    *[st.just({})] * 4,
    st.dictionaries(
        st.sampled_from(["extra", "Basic", "minCount", "name", "key"]), JUNK, min_size=1, max_size=1
    ),
)


def _maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a well-formed value, sometimes junk (null, wrong type, out-of-range number)."""
    return st.one_of(*[s] * 6, JUNK)


def _obj(required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]) -> Any:
    built = st.builds(lambda d, e: {**d, **e}, st.fixed_dictionaries(required, optional=optional), EXTRA)
    return _maybe(built)


EMPTY = _maybe(st.just({}))
GANG = _obj({}, {"minCount": _maybe(INTS)})
CGANG = _obj({}, {"minGroupCount": _maybe(INTS)})
POLICY = _obj({}, {"basic": EMPTY, "gang": GANG})
CPOLICY = _obj({}, {"basic": EMPTY, "gang": CGANG})
TOPOLOGY = _obj({}, {"key": _maybe(KEYS)})
CONSTRAINTS = _obj({}, {"topology": _maybe(st.lists(_maybe(TOPOLOGY), max_size=3))})
DISRUPTION = _obj({}, {"single": EMPTY, "all": EMPTY})
CLAIM = _obj(
    {"name": _maybe(NAMES)},
    {"resourceClaimName": _maybe(NAMES), "resourceClaimTemplateName": _maybe(NAMES)},
)
CLAIMS = _maybe(st.lists(_maybe(CLAIM), max_size=6))
SCHEDULING = _obj(
    {},
    {
        "schedulingPolicy": _maybe(POLICY),
        "schedulingConstraints": _maybe(CONSTRAINTS),
        "disruptionMode": _maybe(DISRUPTION),
        "resourceClaims": CLAIMS,
    },
)
CSCHEDULING = _obj(
    {},
    {
        "schedulingPolicy": _maybe(CPOLICY),
        "schedulingConstraints": _maybe(CONSTRAINTS),
        "disruptionMode": _maybe(DISRUPTION),
    },
)
NEAR: dict[BlockType, st.SearchStrategy[Any]] = {
    BlockType.POLICY: POLICY,
    BlockType.CONSTRAINTS: CONSTRAINTS,
    BlockType.DISRUPTION: DISRUPTION,
    BlockType.RESOURCE_CLAIM: CLAIM,
    BlockType.RESOURCE_CLAIMS: CLAIMS,
    BlockType.COMPOSITE_POLICY: CPOLICY,
    BlockType.COMPOSITE_CONSTRAINTS: CONSTRAINTS,
    BlockType.COMPOSITE_DISRUPTION: DISRUPTION,
    BlockType.SCHEDULING: SCHEDULING,
    BlockType.COMPOSITE_SCHEDULING: CSCHEDULING,
}

# Well-formed values, so that both verdicts are exercised about equally.
V_INT32 = st.integers(1, 2**31 - 1)
V_NAME = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
V_POLICY: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({"basic": {}}),
    st.fixed_dictionaries({}, optional={"minCount": V_INT32}).map(lambda g: {"gang": g}),
)
V_CPOLICY: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({"basic": {}}),
    st.fixed_dictionaries({}, optional={"minGroupCount": V_INT32}).map(lambda g: {"gang": g}),
)
V_CONSTRAINTS = st.fixed_dictionaries(
    {},
    optional={
        "topology": st.lists(
            st.fixed_dictionaries(
                {"key": st.sampled_from(["zone", "topology.kubernetes.io/rack", "x.io/A_1"])}
            ),
            max_size=1,
        )
    },
)
V_DISRUPTION: st.SearchStrategy[dict[str, Any]] = st.sampled_from([{"single": {}}, {"all": {}}])
V_CLAIM = st.builds(
    lambda name, ref, target: {"name": name, ref: target},
    V_NAME,
    st.sampled_from(["resourceClaimName", "resourceClaimTemplateName"]),
    st.sampled_from(["claim", "a.b-c", "tmpl-1"]),
)
V_CLAIMS = st.lists(V_CLAIM, max_size=4, unique_by=lambda c: c["name"])
VALID: dict[BlockType, st.SearchStrategy[Any]] = {
    BlockType.POLICY: V_POLICY,
    BlockType.CONSTRAINTS: V_CONSTRAINTS,
    BlockType.DISRUPTION: V_DISRUPTION,
    BlockType.RESOURCE_CLAIM: V_CLAIM,
    BlockType.RESOURCE_CLAIMS: V_CLAIMS,
    BlockType.COMPOSITE_POLICY: V_CPOLICY,
    BlockType.COMPOSITE_CONSTRAINTS: V_CONSTRAINTS,
    BlockType.COMPOSITE_DISRUPTION: V_DISRUPTION,
    BlockType.SCHEDULING: st.fixed_dictionaries(
        {},
        optional={
            "schedulingPolicy": V_POLICY,
            "schedulingConstraints": V_CONSTRAINTS,
            "disruptionMode": V_DISRUPTION,
            "resourceClaims": V_CLAIMS,
        },
    ),
    BlockType.COMPOSITE_SCHEDULING: st.fixed_dictionaries(
        {},
        optional={
            "schedulingPolicy": V_CPOLICY,
            "schedulingConstraints": V_CONSTRAINTS,
            "disruptionMode": V_DISRUPTION,
        },
    ),
}
STRATEGIES: dict[BlockType, st.SearchStrategy[Any]] = {b: st.one_of(VALID[b], NEAR[b]) for b in BlockType}
BLOCK_AND_VALUE = st.sampled_from(list(BlockType)).flatmap(lambda b: st.tuples(st.just(b), STRATEGIES[b]))

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)

HYPOTHESIS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYPOTHESIS
@given(BLOCK_AND_VALUE)
def test_engines_agree_on_generated_blocks(block_value: tuple[BlockType, Any]) -> None:
    block, value = block_value
    fast, reference = S.verdicts(block, value)
    assert fast is None or fast is reference
    if value is not None:
        errors = validate_block(block, value, BASE)
        assert (errors == []) is reference
        assert all(str(e.field).startswith(str(BASE)) for e in errors)


@HYPOTHESIS
@given(st.sampled_from(list(BlockType)).flatmap(lambda b: st.tuples(st.just(b), VALID[b])))
def test_valid_strategies_are_valid(block_value: tuple[BlockType, Any]) -> None:
    block, value = block_value
    assert validate_block(block, value, BASE) == []
    assert S.verdicts(block, value) == (True, True)


@HYPOTHESIS
@given(BLOCK_AND_VALUE, st.data())
def test_ratcheting_properties(block_value: tuple[BlockType, Any], data: st.DataObject) -> None:
    block, value = block_value
    # An unchanged value never reports anything on update.
    assert validate_block(block, value, BASE, old=copy.deepcopy(value)) == []
    # Ratcheting only ever removes errors.
    old = data.draw(STRATEGIES[block])
    created = validate_block(block, value, BASE)
    updated = validate_block(block, value, BASE, old=old)
    assert all(e in created for e in updated)


@HYPOTHESIS
@given(st.sampled_from(list(BlockType)), JSON, JSON)
def test_never_raises_on_any_json(block: BlockType, value: Any, old: Any) -> None:
    errors = validate_block(block, value, BASE)
    validate_block(block, value, BASE, old=old)
    assert all(e.type.value != "InternalError" for e in errors)
    fast, reference = S.verdicts(block, value)
    assert fast is None or fast is reference


def test_determinism() -> None:
    value = SCHEDULING_CASES[-1][1]
    first = validate_block(BlockType.SCHEDULING, value, BASE)
    assert all(validate_block(BlockType.SCHEDULING, copy.deepcopy(value), BASE) == first for _ in range(3))


@pytest.mark.parametrize(
    "value",
    [
        {1: "non-string key"},
        {"schedulingPolicy": {"gang": {"minCount": float("nan")}}},
        {"schedulingPolicy": {"gang": {"minCount": 2**70}}},
        {"resourceClaims": [{"name": "\ud800"}]},
        {"schedulingPolicy": ({"gang": {}},)},
        {"schedulingPolicy": object()},
    ],
    ids=["int-key", "nan", "bigint", "lone-surrogate", "tuple", "object"],
)
def test_hostile_inputs_do_not_raise(value: object) -> None:
    errors = validate_block(BlockType.SCHEDULING, value, BASE)
    assert errors
    assert all(e.type.value != "InternalError" for e in errors)


def test_deep_nesting_does_not_raise() -> None:
    value: Any = {}
    for _ in range(5000):
        value = {"x": value}
    errors = validate_block(BlockType.SCHEDULING, value, BASE)
    assert errors  # Forbidden for "x", or an InternalError if the nesting defeats recursion


# --------------------------------------------------------------------------- the fast verdict


class _Dict(dict[str, Any]):
    pass


class _List(list[Any]):
    pass


class _Str(str):
    pass


class _Int(int):
    pass


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"gang": {"minCount": 4}}
    for _ in range(depth):
        value = {"schedulingPolicy": value}
    return value


GANG_BLOCK = {"schedulingPolicy": {"gang": {"minCount": 4}}}

# Inputs the fast engine must not judge alone (something for Go's decoder to drop or replace,
# something it judges differently, a subclass, deep nesting), and whether each is valid.
HAND_OVER_CASES: list[tuple[str, object, bool]] = [
    ("null-member", {**GANG_BLOCK, "disruptionMode": None}, True),
    ("null-nested-member", {"schedulingPolicy": {"gang": {"minCount": None}}}, True),
    ("null-list-item", {"resourceClaims": [None]}, False),
    ("float", {"schedulingPolicy": {"gang": {"minCount": 4.0}}}, False),
    ("nan", {"schedulingPolicy": {"gang": {"minCount": float("nan")}}}, False),
    ("int-above-int64", {"schedulingPolicy": {"gang": {"minCount": 2**63}}}, False),
    ("int-below-int64", {"schedulingPolicy": {"gang": {"minCount": -(2**63) - 1}}}, False),
    ("int-key", {1: {}}, False),
    ("str-subclass-key", {_Str("schedulingPolicy"): {"basic": {}}}, True),
    ("str-subclass-value", {"resourceClaims": [{"name": _Str("gpus"), "resourceClaimName": "c"}]}, True),
    ("int-subclass-value", {"schedulingPolicy": {"gang": {"minCount": _Int(4)}}}, True),
    ("dict-subclass", {"schedulingPolicy": _Dict(gang={"minCount": 4})}, True),
    ("list-subclass", {"resourceClaims": _List()}, True),
    ("tuple", {"resourceClaims": ({"name": "gpus", "resourceClaimName": "c"},)}, False),
    ("object", {"schedulingPolicy": object()}, False),
    ("deep", _nested(40), False),
    ("plain-gang", GANG_BLOCK, True),
    ("plain-all-four-fields", EXAMPLE_JOB_SCHEDULING, True),
]


@pytest.mark.parametrize(
    ("value", "valid"), [c[1:] for c in HAND_OVER_CASES], ids=[c[0] for c in HAND_OVER_CASES]
)
def test_fast_verdict_changes_no_answer(value: object, valid: bool) -> None:
    with_verdict = validate_block(BlockType.SCHEDULING, value, BASE)
    with reference_engine_only():
        reference = validate_block(BlockType.SCHEDULING, value, BASE)
    assert [e.key() for e in with_verdict] == [e.key() for e in reference]
    assert (with_verdict == []) is valid


@HYPOTHESIS
@given(st.sampled_from(list(BlockType)), st.one_of(BLOCK_AND_VALUE.map(lambda bv: bv[1]), JSON), JSON)
def test_fast_verdict_changes_no_answer_on_generated_values(block: BlockType, value: Any, old: Any) -> None:
    for previous in (NO_OLD, old):
        with_verdict = validate_block(block, value, BASE, old=previous)
        with reference_engine_only():
            reference = validate_block(block, value, BASE, old=previous)
        assert [(e.key(), e.detail) for e in with_verdict] == [(e.key(), e.detail) for e in reference]


def test_deep_nesting_is_reported_not_raised() -> None:
    for value in (_nested(5000), _nested(990)):
        assert validate_block(BlockType.SCHEDULING, value, BASE) != []
