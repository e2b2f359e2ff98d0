"""Over-limit lists of composite children (issue 17): the governed tree reads a bounded number of
a repeated child's elements (webhook/governed/tree.py), so a list or map of any length is one
TooMany at the list, and the blocks of the composite root and of its children keep their own
limits (tests/declarative/test_limits.py has the blocks' lists)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from tests.declarative.limits import poisoned, seen, too_many, topology
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet, load_policy_file

Json = dict[str, t.Any]
EXAMPLES: t.Final = Path(__file__).resolve().parents[2] / "examples"
MPI_POLICY: t.Final = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata: {name: mpijob-limits}
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  updateRules: immutable
  root:
    type: composite
    path: spec.scheduling
    templateName: "{name}"
    children:
    - id: replica
      type: leaf
      forEach: spec.mpiReplicaSpecs
      forEachOver: map
      path: scheduling
      templateName: "{name}-{key}"
      podCount: {path: replicas}
"""


def mpijob(specs: object, scheduling: Json | None = None) -> Json:
    spec: Json = {"mpiReplicaSpecs": specs}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ml"},
        "spec": spec,
    }


def jobset(replicated_jobs: list[t.Any]) -> Json:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
            "spec": {"replicatedJobs": replicated_jobs}}  # fmt: skip


def replicated_job(i: int) -> Json:
    blocks = '{"schedulingPolicy": {"gang": {"minCount": 2}}}'
    return {"name": f"w{i}", "replicas": 1, "template": {"metadata": {"annotations": {"scheduling.wasp.dev/blocks": blocks}},
            "spec": {"parallelism": 2, "completions": 2}}}  # fmt: skip


@pytest.fixture(scope="module")
def composite_policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PolicySet]:
    mpi = tmp_path_factory.mktemp("policies") / "mpijob.yaml"
    mpi.write_text(MPI_POLICY)
    return {
        "mpijob": PolicySet([load_policy_file(mpi)]),
        "jobset": PolicySet([load_policy_file(EXAMPLES / "jobset-per-replicated-job" / "policy.yaml")]),
    }


@pytest.mark.parametrize(
    ("policy", "obj", "expected"),
    [
        pytest.param(
            "mpijob",
            mpijob({f"r{i}": {"replicas": 1} for i in range(200_000)}),
            [
                (
                    "FieldValueTooMany",
                    "spec.mpiReplicaSpecs",
                    "spec.mpiReplicaSpecs: Too many: 200000: must have at most 8 items",
                )
            ],
            id="a map of 200,000 children is one TooMany",
        ),
        pytest.param(
            "mpijob",
            mpijob(
                {
                    "worker": {
                        "replicas": 4,
                        "scheduling": {"schedulingConstraints": {"topology": topology(1000)}},
                    }
                },
                {
                    "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                    "schedulingConstraints": {"topology": topology(1000)},
                },
            ),
            [
                too_many("spec.scheduling.schedulingConstraints.topology", 1000, 1),
                too_many("spec.mpiReplicaSpecs[worker].scheduling.schedulingConstraints.topology", 1000, 1),
            ],
            id="the composite root's topology and a child's are one TooMany each",
        ),  # fmt: skip
        pytest.param(
            "jobset",
            jobset(poisoned([replicated_job(i) for i in range(40)], extra=1000)),
            [
                (
                    "FieldValueTooMany",
                    "spec.replicatedJobs",
                    "spec.replicatedJobs: Too many: 1040: must have at most 8 items",
                )
            ],
            id="a list of 1,040 children is one TooMany, and its tail is never read",
        ),
    ],
)
def test_over_limit_composite_children(
    policy: str, obj: Json, expected: list[tuple[str, str, str]], composite_policies: dict[str, PolicySet]
) -> None:
    assert seen(validate_object(obj, policies=composite_policies[policy]).errors) == expected
