"""Lists over their declared ``maxItems`` (issue 17): one ``TooMany`` error each, decided before
any per-item work anywhere (decoding, the engines, the compiler's mapping, ratcheting).

Every row's errors are the ones wasp reported before the limit moved ahead of decoding (the
texts were recorded from that code, counts included); the poisoned rows prove that no entry
past a list's limit is read at all, so a list of any length costs the same.
"""

from __future__ import annotations

import typing as t

import pytest

from tests.builders import leaf
from tests.declarative.limits import poisoned, seen, too_many, topology
from webhook.compiler import Builder, BuildOptions, DisruptionKind, PolicyKind, TopologyConstraint
from webhook.compiler.builder import compile_pod_group_template
from webhook.compiler.mapconfig import map_resource_claims, map_topology_constraints
from webhook.declarative import BlockType, validate_block
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.vocab.field import FieldPath

Json = dict[str, t.Any]

POLICIES: t.Final = PolicySet.load()
GANG: t.Final = {"gang": {"minCount": 4}}
TOPOLOGY: t.Final = "spec.scheduling.schedulingConstraints.topology"
CLAIMS: t.Final = "spec.scheduling.resourceClaims"


def job(scheduling: Json, *, kind: str = "Job") -> Json:
    spec: Json = {
        "parallelism": 8,
        "completions": 8,
        "completionMode": "Indexed",
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "t", "image": "busybox"}]}},
        "scheduling": scheduling,
    }
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    return {
        "apiVersion": "batch/v1",
        "kind": kind,
        "metadata": {"name": "train", "namespace": "default"},
        "spec": spec,
    }


def claims(n: int) -> list[Json]:
    return [{"name": "c", "resourceClaimName": "x"} for _ in range(n)]


OBJECT_CASES = [
    pytest.param(
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": topology(200_000)}}),
        None,
        [too_many(TOPOLOGY, 200_000, 1)],
        id="job: a 200,000-entry topology list is one TooMany",
    ),
    pytest.param(
        job(
            {
                "schedulingPolicy": GANG,
                "schedulingConstraints": {"topology": [{"key": ""}, {"key": "Bad Key!"}]},
            }
        ),
        None,
        [too_many(TOPOLOGY, 2, 1)],
        id="job: entries of an over-limit topology list are not validated",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": [None, None, None]}}),
        None,
        [too_many(TOPOLOGY, 3, 1)],
        id="job: null entries count towards the limit",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": list(range(1000))}}),
        None,
        [too_many(TOPOLOGY, 1000, 1)],
        id="job: entries of the wrong type are not type-checked past the limit",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "resourceClaims": claims(200_000)}),
        None,
        [too_many(CLAIMS, 200_000, 4)],
        id="job: 200,000 duplicate claims are one TooMany, no Duplicate",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "resourceClaims": [{"name": "A_"}, {"name": "A_"}, {}, 3, None]}),
        None,
        [too_many(CLAIMS, 5, 4)],
        id="job: bad, duplicate and null claims over the limit are one TooMany",
    ),
    pytest.param(
        job(
            {
                "schedulingPolicy": {"gang": {"minCount": 0}},
                "schedulingConstraints": {"topology": topology(1000), "extra": 1},
                "resourceClaims": claims(1000),
                "bogus": True,
            }
        ),
        None,
        [
            (
                "FieldValueInvalid",
                "spec.scheduling.schedulingPolicy.gang.minCount",
                "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1",
            ),
            too_many(TOPOLOGY, 1000, 1),
            (
                "FieldValueForbidden",
                "spec.scheduling.schedulingConstraints.extra",
                'spec.scheduling.schedulingConstraints.extra: Forbidden: unknown field "extra"',
            ),
            too_many(CLAIMS, 1000, 4),
            (
                "FieldValueForbidden",
                "spec.scheduling.bogus",
                'spec.scheduling.bogus: Forbidden: unknown field "bogus"',
            ),
        ],
        id="job: the other errors of the block keep their order around the TooMany ones",
    ),
    pytest.param(
        job(
            {
                "schedulingPolicy": {"basic": {}},
                "schedulingConstraints": {"topology": topology(5)},
                "disruptionMode": {"all": {}},
            }
        ),
        None,
        [
            too_many(TOPOLOGY, 5, 1),
            (
                "FieldValueInvalid",
                "spec.scheduling.disruptionMode",
                'spec.scheduling.disruptionMode: Invalid value: "": the disruptionMode `all` is not supported '
                "with the Basic scheduling policy",
            ),
        ],
        id="job: the compiler's rules still run beside a TooMany",
    ),
    pytest.param(
        job(
            {"schedulingPolicy": GANG, "schedulingConstraints": {"topology": topology(200_000)}},
            kind="CronJob",
        ),
        None,
        [too_many("spec.jobTemplate.spec.scheduling.schedulingConstraints.topology", 200_000, 1)],
        id="cronjob: the limit holds in the job template",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": topology(1000)}}),
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": topology(1000)}}),
        [],
        id="update: an unchanged over-limit list is ratcheted",
    ),
    pytest.param(
        job(
            {
                "schedulingPolicy": GANG,
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}, {"key": "d"}]},
            }
        ),
        job(
            {
                "schedulingPolicy": GANG,
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}, {"key": "c"}]},
            }
        ),
        # The Job path keeps its update rules beside the content rules (docs/design.md §2.4):
        # no 1.37 batch validation of spec.scheduling was readable to show a short-circuit.
        [
            too_many(TOPOLOGY, 3, 1),
            (
                "FieldValueInvalid",
                "spec.scheduling.schedulingConstraints",
                'spec.scheduling.schedulingConstraints: Invalid value: {"topology":[{"key":"a"},{"key":"b"},'
                '{"key":"d"}]}: field is immutable',
            ),
        ],
        id="update: a changed over-limit list of the same length is reported",
    ),
    pytest.param(
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": [{}, {}]}}),
        job({"schedulingPolicy": GANG, "schedulingConstraints": {"topology": [None, None]}}),
        [
            (
                "FieldValueInvalid",
                "spec.scheduling.schedulingConstraints",
                'spec.scheduling.schedulingConstraints: Invalid value: {"topology":[{},{}]}: field is immutable',
            )
        ],
        id="update: null entries decode to {} before an over-limit list is compared",
    ),
]


@pytest.mark.parametrize(("obj", "old", "expected"), OBJECT_CASES)
def test_over_limit_lists_in_governed_objects(
    obj: Json, old: Json | None, expected: list[tuple[str, str, str]]
) -> None:
    assert seen(validate_object(obj, old, policies=POLICIES).errors) == expected


BLOCK_CASES = [
    pytest.param(
        BlockType.SCHEDULING,
        {"schedulingPolicy": GANG, "schedulingConstraints": {"topology": poisoned(topology(2))}},
        [too_many("s.schedulingConstraints.topology", 52, 1)],
        id="leaf embedding: topology",
    ),
    pytest.param(
        BlockType.SCHEDULING,
        {"schedulingPolicy": GANG, "resourceClaims": poisoned(claims(5))},
        [too_many("s.resourceClaims", 55, 4)],
        id="leaf embedding: resource claims",
    ),
    pytest.param(
        BlockType.COMPOSITE_SCHEDULING,
        {"schedulingConstraints": {"topology": poisoned(topology(2))}},
        [too_many("s.schedulingConstraints.topology", 52, 1)],
        id="composite embedding: topology",
    ),
    pytest.param(
        BlockType.CONSTRAINTS,
        {"topology": poisoned(topology(2))},
        [too_many("s.topology", 52, 1)],
        id="constraints block",
    ),
    pytest.param(
        BlockType.COMPOSITE_CONSTRAINTS,
        {"topology": poisoned(topology(2))},
        [too_many("s.topology", 52, 1)],
        id="composite constraints block",
    ),
    pytest.param(
        BlockType.RESOURCE_CLAIMS, poisoned(claims(5)), [too_many("s", 55, 4)], id="claims list block"
    ),
]


@pytest.mark.parametrize(("block", "value", "expected"), BLOCK_CASES)
def test_no_entry_past_the_limit_is_read_by_validation(
    block: BlockType, value: object, expected: list[tuple[str, str, str]]
) -> None:
    assert seen(validate_block(block, value, FieldPath(("s",)))) == expected


def test_no_entry_past_the_limit_is_read_on_update_against_a_shorter_list() -> None:
    new = {"topology": poisoned(topology(2))}
    assert seen(validate_block(BlockType.CONSTRAINTS, new, FieldPath(("s",)), old=None)) == [
        too_many("s.topology", 52, 1)
    ]


ALL: t.Final = BuildOptions(
    allowed_policies=frozenset(PolicyKind), allowed_disruption_modes=frozenset(DisruptionKind)
)


def test_the_compilers_own_declarative_layer_reads_no_entry_past_the_limit() -> None:
    item = leaf(policy=GANG, constraints={"topology": poisoned(topology(2))})
    assert seen(Builder(item, ALL).validate()) == [too_many(TOPOLOGY, 52, 1)]


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        pytest.param(
            lambda: map_topology_constraints({"topology": poisoned([{"key": "a"}, {"key": "b"}])}),
            [TopologyConstraint("a"), TopologyConstraint("b")],
            id="topology: mapped up to one entry past its limit",
        ),
        pytest.param(
            lambda: [c.name for c in map_resource_claims(poisoned([{"name": n} for n in "abcde"]))],
            list("abcde"),
            id="claims: mapped up to one entry past their limit",
        ),
    ],
)
def test_the_mapping_stops_one_entry_past_the_limit(got: t.Callable[[], t.Any], expected: object) -> None:
    mapped = got()
    assert (mapped.topology if hasattr(mapped, "topology") else mapped) == expected


def test_an_over_limit_list_still_compiles_over_its_limit() -> None:
    # Only with declarative validation off can such a list reach compilation; what is compiled
    # stays over the limit, so the apiserver refuses the Workload as it would the full list.
    item = leaf(policy=GANG, constraints={"topology": topology(1000)})
    assert seen(Builder(item, ALL).validate()) == [too_many(TOPOLOGY, 1000, 1)]
    assert len(compile_pod_group_template(item)["schedulingConstraints"]["topology"]) == 2


@pytest.mark.parametrize(
    ("scheduling", "expected"),
    [
        pytest.param(
            {"schedulingPolicy": GANG, "schedulingConstraints": {"topology": poisoned(topology(2))}},
            [too_many(TOPOLOGY, 52, 1)],
            id="topology",
        ),
        pytest.param(
            {"schedulingPolicy": GANG, "resourceClaims": poisoned(claims(5))},
            [too_many(CLAIMS, 55, 4)],
            id="resource claims",
        ),
    ],
)
def test_no_layer_of_a_governed_object_reads_an_entry_past_the_limit(
    scheduling: Json, expected: list[tuple[str, str, str]]
) -> None:
    assert seen(validate_object(job(scheduling), policies=POLICIES).errors) == expected


# ------------------------------------------------------ unknown fields: named up to a bound, then counted

SCOPE = FieldPath.of("spec", "scheduling")


@pytest.mark.parametrize(
    ("count", "named", "summary"),
    [
        pytest.param(3, 3, None, id="a few: each named"),
        pytest.param(100, 100, None, id="the bound: each named"),
        pytest.param(
            101, 100, "1 more unknown fields not shown", id="one past the bound: one error counts it"
        ),
        pytest.param(
            200_000, 100, "199900 more unknown fields not shown", id="a hostile body: 101 errors, not 200,000"
        ),
    ],
)
def test_unknown_fields_are_named_up_to_a_bound_then_counted(
    count: int, named: int, summary: str | None
) -> None:
    """Work bounded by the input (issue 17): the first names in report order, one error for the rest."""
    value = {"schedulingPolicy": {"gang": {"minCount": 2}}, **{f"k{i:06d}": 1 for i in range(count)}}
    errors = validate_block(BlockType.SCHEDULING, value, SCOPE)
    members = [e for e in errors if e.path != str(SCOPE)]
    assert [e.path for e in members] == [f"{SCOPE}.k{i:06d}" for i in range(named)]
    assert all((e.type.value, e.origin) == ("FieldValueForbidden", "additionalProperties") for e in errors)
    counted = [e.detail for e in errors if e.path == str(SCOPE)]
    assert counted == ([summary] if summary else [])
