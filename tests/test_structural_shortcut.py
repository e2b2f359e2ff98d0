"""validate_object skips the per-block structural layer when the whole embedding passes the
schema; that shortcut must never change a verdict. Compared here with it disabled."""

from __future__ import annotations

import typing as t

import pytest
from golden import GoldenCase, discover_cases, golden_policies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import scheduling

import webhook.governed.validation as validating
from webhook.governed.result import Result
from webhook.policy.model import PolicySet

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
