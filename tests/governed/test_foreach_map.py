"""A tree repeated over a map's entries (``forEachOver: map``), as MPIJob and PyTorchJob keep
their replica specs: each entry is an element keyed by its map key."""

from __future__ import annotations

import typing as t

import pytest

from webhook.governed.result import Status
from webhook.governed.stamping import stamp_pod
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.gates import FeatureGates

POLICY = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: mpijob-map
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  updateRules: immutable
  stamping: {pods: true}
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
      podLabel: {key: training.kubeflow.org/replica-type}
"""
LABEL = "training.kubeflow.org/replica-type"


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    path = tmp_path_factory.mktemp("policies") / "mpijob.yaml"
    path.write_text(POLICY)
    # A composite tree: its groups exist only with the CompositePodGroup gate.
    return PolicySet([load_policy_file(path)], gates=FeatureGates.parse("CompositePodGroup=true"))


def gang(n: int) -> dict[str, t.Any]:
    return {"schedulingPolicy": {"gang": {"minCount": n}}}


def mpijob(specs: object) -> dict[str, t.Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ml"},
        "spec": {"mpiReplicaSpecs": specs},
    }


VALID = {"launcher": {"replicas": 1}, "worker": {"replicas": 4, "scheduling": gang(4)}}


@pytest.mark.parametrize(
    ("specs", "expected"),
    [
        pytest.param(VALID, [], id="each map entry is a group, keyed by its map key"),
        pytest.param(
            {"worker": {"replicas": 2, "scheduling": gang(4)}},
            [("FieldValueInvalid", "spec.mpiReplicaSpecs[worker].scheduling.schedulingPolicy.gang.minCount")],
            id="an entry's errors are reported at the entry's own path",
        ),
        pytest.param(
            [{"replicas": 1}],
            [("FieldValueTypeInvalid", "spec.mpiReplicaSpecs")],
            id="a list where the policy expects a map is a type error at the field",
        ),
        pytest.param(
            {"worker": "four"},
            [("FieldValueTypeInvalid", "spec.mpiReplicaSpecs[worker]")],
            id="an entry that is not an object is a type error at the entry",
        ),
        pytest.param(
            {f"r{i}": {"replicas": 1} for i in range(9)},
            [("FieldValueTooMany", "spec.mpiReplicaSpecs")],
            id="nine entries are more than one template list holds",
        ),
    ],
)
def test_validation_over_map_entries(
    specs: object, expected: list[tuple[str, str]], policies: PolicySet
) -> None:
    result = validate_object(mpijob(specs), policies=policies)
    assert [e.key() for e in result.errors] == expected
    assert result.status is (Status.INVALID if expected else Status.VALID)


def test_adding_an_entry_on_update_is_forbidden_at_the_entry(policies: PolicySet) -> None:
    new = mpijob({**VALID, "extra": {"replicas": 1}})
    result = validate_object(new, mpijob(VALID), policies=policies)
    assert [e.key() for e in result.errors] == [("FieldValueForbidden", "spec.mpiReplicaSpecs[extra]")]


def test_every_entry_compiles_to_a_pod_group_named_by_its_key(policies: PolicySet) -> None:
    obj = mpijob(VALID)
    policy = policies.for_object(obj)
    assert policy is not None
    compiled = compile_object(policy, obj, uid="u-1")
    names = sorted(pg["metadata"]["name"] for pg in compiled.pod_groups)
    assert names == sorted(pod_group_name("pi", "u-1", f"pi-{key}") for key in ("launcher", "worker"))
    minimums = {
        pg["spec"]["workloadRef"]["templateName"]: pg["spec"]["schedulingPolicy"]
        for pg in compiled.pod_groups
    }
    assert minimums["pi-worker"] == {"gang": {"minCount": 4}}


def test_a_pod_is_stamped_with_the_group_of_its_entry(policies: PolicySet) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-0",
            "labels": {LABEL: "worker"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v2beta1",
                    "kind": "MPIJob",
                    "name": "pi",
                    "uid": "u-1",
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": []},
    }
    stamped = stamp_pod(pod, policies)
    assert stamped.object["spec"]["schedulingGroup"] == {
        "podGroupName": pod_group_name("pi", "u-1", "pi-worker")
    }
