"""A tree that is one leaf, with its structure checked, is judged without the compiler's
items (``validating._checked_leaf_errors``); it must report exactly what
``Builder.validate`` reports. Compared here with the Builder, on generated trees and on
every golden case."""

from __future__ import annotations

import dataclasses
import typing as t

import pytest
from golden import GoldenCase, discover_cases, golden_policies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import junk, scheduling

import webhook.governed.validation as validating
from webhook.compiler.builder import Builder
from webhook.compiler.types import BuildOptions, DisruptionKind, PolicyKind
from webhook.governed.tree import ObjectNode, build_tree, fill_items
from webhook.governed.validation import validate_object
from webhook.policy.model import Policy
from webhook.vocab.field import FieldError

POLICIES = golden_policies()
CASES = discover_cases()
JOB = POLICIES.for_kind("batch/v1", "Job")
assert JOB is not None
# The template name is the object's name alone, so an object without one has an empty name.
BARE = dataclasses.replace(JOB, root=dataclasses.replace(JOB.root, template_name="{name}"))

ABSENT: t.Final = object()  # the Job has no spec.scheduling
blocks = st.one_of(
    scheduling,
    st.fixed_dictionaries({}, optional={"schedulingPolicy": junk, "disruptionMode": junk}),
    junk,
    st.just(ABSENT),
)
names = st.sampled_from(["train", "other", "", None])


def job(block: object, name: str | None) -> dict[str, t.Any]:
    spec: dict[str, t.Any] = {"parallelism": 4, "template": {"spec": {}}}
    if block is not ABSENT:
        spec["scheduling"] = block
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {} if name is None else {"name": name},
        "spec": spec,
    }


def through_builder(leaf: ObjectNode, old_tree: ObjectNode | None, options: BuildOptions) -> list[FieldError]:
    return Builder(fill_items(leaf), options).validate(old_tree)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from([JOB, BARE]),
    new=blocks,
    old=st.one_of(st.none(), blocks),
    name=names,
    old_name=names,
    allowed_policies=st.frozensets(st.sampled_from(list(PolicyKind))),
    allowed_modes=st.frozensets(st.sampled_from(list(DisruptionKind))),
)
def test_checked_leaf_errors_are_the_builders(
    policy: Policy,
    new: object,
    old: object,
    name: str | None,
    old_name: str | None,
    allowed_policies: frozenset[PolicyKind],
    allowed_modes: frozenset[DisruptionKind],
) -> None:
    options = BuildOptions(
        allowed_policies=allowed_policies,
        allowed_disruption_modes=allowed_modes,
        disable_declarative_validation=True,
    )
    tree = build_tree(policy, job(new, name), items=False)[0]
    old_tree = None if old is None else build_tree(policy, job(old, old_name), items=False)[0]
    expected = through_builder(build_tree(policy, job(new, name))[0], old_tree, options)
    assert validating._checked_leaf_errors(tree, old_tree, options) == expected


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_verdicts_do_not_depend_on_the_leaf_shortcut(
    case: GoldenCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = validate_object(case.obj, case.old_obj, policies=POLICIES)
    monkeypatch.setattr(validating, "_checked_leaf_errors", through_builder)
    assert validate_object(case.obj, case.old_obj, policies=POLICIES) == fast


class _NoBuilder:
    def __init__(self, *_: object) -> None:
        raise AssertionError("the compiler's Builder was used")


@pytest.mark.parametrize(
    ("block", "old_block", "errors"),
    [
        pytest.param({"schedulingPolicy": {"gang": {"minCount": 2}}}, None, [], id="valid-create"),
        pytest.param(
            {"schedulingPolicy": {"gang": {"minCount": 3}}},
            {"schedulingPolicy": {"gang": {}}},
            [],
            id="update",
        ),
        pytest.param(
            {"disruptionMode": {"all": {}}},
            None,
            [("FieldValueInvalid", "spec.scheduling.disruptionMode")],
            id="basic-with-all-is-still-denied",
        ),
    ],
)
def test_a_checked_job_is_judged_without_the_builder(
    block: dict[str, t.Any],
    old_block: dict[str, t.Any] | None,
    errors: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(validating, "Builder", _NoBuilder)
    result = validate_object(job(block, "train"), old_block and job(old_block, "train"), policies=POLICIES)
    assert [(e.type.value, str(e.field)) for e in result.errors] == errors


def test_an_invalid_block_still_goes_through_the_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validating, "Builder", _NoBuilder)
    with pytest.raises(AssertionError, match="Builder was used"):
        validate_object(job({"schedulingPolicy": {"gang": {"minCount": -1}}}, "train"), policies=POLICIES)
