"""``extract.old_tree`` reads a leaf root without a builder; it must give exactly the node
``build_tree(policy, old, items=False, counts=False)`` gives, for any stored object."""

from __future__ import annotations

import typing as t

import pytest
from golden import GoldenCase, discover_cases, golden_policies
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import junk, scheduling

from webhook.governed.tree import ObjectNode, build_tree, old_tree

POLICIES = golden_policies()
# Update cases of governed kinds (hand-written Workloads and PodGroups have no policy).
CASES_WITH_OLD = [
    c for c in discover_cases() if isinstance(c.old_obj, dict) and POLICIES.for_object(c.old_obj) is not None
]
JOB = POLICIES.for_kind("batch/v1", "Job")
CRONJOB = POLICIES.for_kind("batch/v1", "CronJob")
assert JOB is not None and CRONJOB is not None


def snapshot(node: ObjectNode) -> tuple[object, ...]:
    """Every field of a node and, recursively, of its children (the context by identity)."""
    return (
        node.spec, node.path, node.context_path, id(node.context), node.block, node.name, node.template_name,
        node.key, node.pod_count, node.pod_count_explicit, node.default_config, node.input, node.callbacks,
        tuple(snapshot(c) for c in node.children),
    )  # fmt: skip


def built(policy: t.Any, obj: dict[str, t.Any]) -> tuple[object, ...]:
    return snapshot(build_tree(policy, obj, items=False, counts=False)[0])


metadata = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"name": st.one_of(st.sampled_from(["train", "", "x" * 70]), st.integers())}
    ),
    junk,
)
# The objects a stored Job or CronJob can hold where wasp looks, right and wrong.
blocks = st.one_of(scheduling, junk)
job_specs = st.one_of(st.fixed_dictionaries({}, optional={"scheduling": blocks, "parallelism": junk}), junk)
cron_specs = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"jobTemplate": st.one_of(st.fixed_dictionaries({}, optional={"spec": job_specs}), junk)}
    ),  # fmt: skip
    junk,
)


@settings(max_examples=300, deadline=None)
@given(meta=metadata, spec=job_specs, cron_spec=cron_specs)
def test_a_leaf_root_is_read_as_the_builder_reads_it(meta: object, spec: object, cron_spec: object) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}
    assert snapshot(old_tree(JOB, job)) == built(JOB, job)
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": cron_spec}
    assert snapshot(old_tree(CRONJOB, cron)) == built(CRONJOB, cron)


@pytest.mark.parametrize("case", CASES_WITH_OLD, ids=[c.id for c in CASES_WITH_OLD])
def test_golden_stored_objects_give_the_builders_tree(case: GoldenCase) -> None:
    # Covers composite roots (the example CRDs), which old_tree hands to build_tree.
    assert isinstance(case.old_obj, dict)
    policy = POLICIES.for_object(case.old_obj)
    assert policy is not None
    assert snapshot(old_tree(policy, case.old_obj)) == built(policy, case.old_obj)
