"""Map keys in template names (issue 15, item 3): names are DNS labels, so a map key is
lowercased (MPIJob ``Launcher``/``Worker``), and two keys that differ only in case are an error."""

from __future__ import annotations

import typing as t

import pytest

from webhook.governed.stamping import stamp_pod
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
POLICY: t.Final = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: mpijob-roles
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  stamping: {pods: true}
  root:
    type: composite
    path: metadata.annotations[scheduling.wasp.dev/blocks]
    encoding: json
    templateName: job
    children:
    - type: leaf
      forEach: spec.mpiReplicaSpecs
      forEachOver: map
      path: template.metadata.annotations[scheduling.wasp.dev/blocks]
      encoding: json
      templateName: "{name}-{key}"
      podCount: {path: replicas, default: 0}
      podLabel: {key: training.kubeflow.org/job-role}
"""


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    path = tmp_path_factory.mktemp("policies") / "mpijob.yaml"
    path.write_text(POLICY)
    return PolicySet([load_policy_file(path)], gates=FeatureGates.parse("CompositePodGroup=true"))


def mpijob(specs: Json) -> Json:
    meta = {"name": "pi", "namespace": "ml", "uid": "u-1"}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": meta,
        "spec": {"mpiReplicaSpecs": specs},
    }


def test_capitalised_map_keys_name_lowercase_templates(policies: PolicySet) -> None:
    obj = mpijob({"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}})
    assert validate_object(obj, policies=policies).warnings == ()
    policy = policies.for_object(obj)
    assert policy is not None
    templates = compile_object(policy, obj, uid="u-1").workload["spec"]["compositePodGroupTemplates"][0]
    assert [t["name"] for t in templates["podGroupTemplates"]] == ["pi-launcher", "pi-worker"]


def test_a_pod_labelled_with_the_lowercase_role_gets_the_compiled_name(policies: PolicySet) -> None:
    obj = mpijob({"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}})
    policy = policies.for_object(obj)
    assert policy is not None
    compiled = {g["metadata"]["name"] for g in compile_object(policy, obj, uid="u-1").pod_groups}
    ref = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "name": "pi",
        "uid": "u-1",
        "controller": True,
    }
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "pi-worker-0", "labels": {"training.kubeflow.org/job-role": "worker"}, "ownerReferences": [ref]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }  # fmt: skip
    name = stamp_pod(pod, policies).object["spec"]["schedulingGroup"]["podGroupName"]
    assert name == pod_group_name("pi", "u-1", "pi-worker") and name in compiled


def test_two_keys_that_differ_only_in_case_are_an_error_at_the_second(policies: PolicySet) -> None:
    obj = mpijob({"Worker": {"replicas": 2}, "worker": {"replicas": 1}})
    errors = validate_object(obj, policies=policies).errors
    assert [e.key() for e in errors] == [("FieldValueDuplicate", "spec.mpiReplicaSpecs[worker]")]
