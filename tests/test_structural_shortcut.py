"""validate_object skips the per-block structural layer when the whole embedding passes the
schema; that shortcut must never change a verdict. Compared here with it disabled."""

from __future__ import annotations

import typing as t

import pytest
from golden import GoldenCase, discover_cases, golden_policies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import webhook.validating as validating
from webhook.policy import PolicySet
from webhook.result import Result

POLICIES = golden_policies()
CASES = discover_cases()


def both(obj: object, old: object, policies: PolicySet) -> tuple[Result, Result]:
    fast = validating.validate_object(obj, old, policies=policies)
    original = validating.is_valid
    validating.is_valid = lambda *_: False  # type: ignore[assignment]
    try:
        slow = validating.validate_object(obj, old, policies=policies)
    finally:
        validating.is_valid = original
    return fast, slow


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_verdicts_do_not_depend_on_the_shortcut(case: GoldenCase) -> None:
    fast, slow = both(case.obj, case.old_obj, POLICIES)
    assert fast == slow


names = st.sampled_from(["gpus", "a", "", "Bad_Name", "x" * 64, "../c"])
policy = st.one_of(
    st.none(),
    st.just({}),
    st.just({"basic": {}}),
    st.builds(
        lambda n: {"gang": {} if n is None else {"minCount": n}}, st.one_of(st.none(), st.integers(-2, 12))
    ),
    st.just({"basic": {}, "gang": {}}),
    st.just({"gang": {"minCount": 2.0}}),
)
claim = st.fixed_dictionaries(
    {"name": names},
    optional={"resourceClaimName": names, "resourceClaimTemplateName": names, "x": st.just(1)},
)
scheduling = st.fixed_dictionaries(
    {},
    optional={
        "schedulingPolicy": policy,
        "schedulingConstraints": st.one_of(
            st.just({"topology": []}),
            st.lists(
                st.fixed_dictionaries(
                    {"key": st.sampled_from(["rack", "", "a/b/c", "topology.kubernetes.io/rack"])}
                ),
                max_size=2,
            ).map(lambda topo: {"topology": topo}),
        ),
        "disruptionMode": st.sampled_from([{}, {"single": {}}, {"all": {}}, {"single": {}, "all": {}}, None]),
        "resourceClaims": st.lists(claim, max_size=5),
    },
)


def job(block: dict[str, t.Any], parallelism: int) -> dict[str, t.Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {"parallelism": parallelism, "scheduling": block, "template": {"spec": {}}},
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(new=scheduling, old=st.one_of(st.none(), scheduling), parallelism=st.integers(0, 8))
def test_generated_jobs_get_the_same_verdict_with_and_without_the_shortcut(
    new: dict[str, t.Any], old: dict[str, t.Any] | None, parallelism: int
) -> None:
    old_job = job(old, parallelism) if old is not None else None
    fast, slow = both(job(new, parallelism), old_job, POLICIES)
    assert fast == slow
