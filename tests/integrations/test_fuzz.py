"""With every integration loaded, no object shape makes the webhook's functions raise: governed
objects with arbitrary specs and block annotations are judged (and, when valid, compiled), and
pods, child objects and governed objects of any shape are mutated. Bad input gets field errors or
warnings, never an exception (a retriable ``IdentityUnavailable`` for a member pod is the one
deliberate refusal)."""

from __future__ import annotations

import json
import typing as t

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.governed.membership import IdentityUnavailable
from webhook.governed.mutation import mutate_object
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object
from webhook.policy import PolicySet
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths
from webhook.vocab.errors import BuildError
from webhook.vocab.gates import FeatureGates

POLICIES = PolicySet.load(
    integration_paths(sorted(KNOWN_INTEGRATIONS)), gates=FeatureGates.parse("CompositePodGroup=true")
)
FIELDS = ["replicas", "parallelism", "completions", "name", "template", "spec", "metadata", "numOfHosts",
          "minReplicas", "maxReplicas", "groupName", "size", "leaderWorkerTemplate", "tasks",
          "mpiReplicaSpecs", "Worker", "Launcher", "workerGroupSpecs", "headGroupSpec", "rayClusterSpec",
          "trainer", "numNodes", "replicatedJobs", "annotations", "labels"]  # fmt: skip
LABELS = ["leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index", "ray.io/node-type",
          "ray.io/group", "jobset.sigs.k8s.io/replicatedjob-name", "training.kubeflow.org/job-role",
          "volcano.sh/task-spec"]  # fmt: skip
KINDS = sorted({(f"{p.group}/{p.versions[0]}", p.kind) for p in POLICIES.policies if p.group} | {
    ("v1", "Pod"), ("batch/v1", "Job"), ("apps/v1", "StatefulSet")})  # fmt: skip

scalar = st.none() | st.booleans() | st.integers(-3, 10) | st.text(max_size=5)
value = st.recursive(
    scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(FIELDS), c, max_size=4),
    max_leaves=20,
)
blocks = st.one_of(st.text(max_size=10), st.builds(json.dumps, value),
                   st.just('{"schedulingPolicy": {"gang": {"minCount": 2}}}'))  # fmt: skip
owner = st.fixed_dictionaries({
    "apiVersion": st.sampled_from([k[0] for k in KINDS]), "kind": st.sampled_from([k[1] for k in KINDS]),
    "name": st.one_of(st.text(max_size=6), value), "uid": st.one_of(st.text(max_size=6), value),
    "controller": st.one_of(st.just(True), value),
})  # fmt: skip


@st.composite
def objects(draw: st.DrawFn) -> dict[str, t.Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    metadata = {
        "name": draw(st.one_of(st.just("n"), value)),
        "namespace": draw(st.one_of(st.just("ns"), value)),
        "uid": "u",
        "labels": draw(st.one_of(st.dictionaries(st.sampled_from(LABELS), st.one_of(
            st.sampled_from(["0", "1", "head", "worker", "Launcher"]), value), max_size=3), value)),
        "ownerReferences": draw(st.one_of(st.lists(owner, max_size=2), value)),
        "annotations": draw(st.one_of(st.fixed_dictionaries({"scheduling.wasp.dev/blocks": blocks}), value)),
    }  # fmt: skip
    return {"apiVersion": api_version, "kind": kind, "metadata": draw(st.one_of(st.just(metadata), value)),
            "spec": draw(value)}  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects(), objects())
def test_no_object_makes_validation_or_compilation_raise(
    obj: dict[str, t.Any], old: dict[str, t.Any]
) -> None:
    result = validate_object(obj, policies=POLICIES)
    validate_object(obj, old if old["kind"] == obj["kind"] else None, policies=POLICIES)
    policy = POLICIES.for_object(obj)
    if result.status is Status.VALID and policy is not None:
        try:
            compile_object(policy, obj, uid="u")
        except BuildError:
            pass  # reported by wasp compile as "cannot compile", with the reason


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(objects(), st.sampled_from(["CREATE", "UPDATE"]))
def test_no_object_makes_mutation_raise(obj: dict[str, t.Any], operation: str) -> None:
    try:
        mutate_object(obj, POLICIES, operation=operation, old_obj=obj if operation == "UPDATE" else None)
    except IdentityUnavailable:
        pass  # a member pod while no identity cache runs: the retriable refusal
