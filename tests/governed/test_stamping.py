"""Pod and child-template stamping (``webhook.governed.stamping``) through ``mutate_object``."""

from __future__ import annotations

import copy
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from patch_oracle import check_patch

from webhook.governed.mutation import mutate_object
from webhook.governed.stamping import stamp_child, stamp_pod
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.errors import PolicyError
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

COMPOSITE_ON = FeatureGates.parse("CompositePodGroup=true")

Json = dict[str, t.Any]
REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer" / "policy.yaml"
ROLEBASED = REPO / "examples" / "rolebased" / "policy.yaml"
IMPLICIT_GANG = REPO / "examples" / "policies" / "batch-job-implicit-gang.yaml"
UID = "5b7c0a2e-1111-4c3d-9e0f-0123456789ab"
ROLE_LABEL = "example.com/role"
RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"

# A JobSet-like controller: it creates one batch/v1 Job per replicated job, and those Jobs
# create the pods. wasp stamps the Jobs' pod templates.
JOBSET_POLICY: Json = {
    "apiVersion": "wasp.dev/v1alpha1",
    "kind": "SchedulingIntegration",
    "metadata": {"name": "example-jobset"},
    "spec": {
        "target": {
            "group": "jobset.x-k8s.io",
            "versions": ["v1alpha2"],
            "kind": "JobSet",
            "resource": "jobsets",
        },
        "allowedPolicies": ["basic", "gang"],
        "allowedDisruptionModes": ["single", "all"],
        "root": {
            "type": "composite",
            "path": "spec.scheduling",
            "templateName": "{name}",
            "children": [
                {
                    "id": "rjob",
                    "type": "leaf",
                    "forEach": "spec.replicatedJobs",
                    "itemKey": "name",
                    "path": "scheduling",
                    "templateName": "{name}-{key}",
                    "podCount": {"path": "replicas"},
                    "podLabel": {"key": RJOB_LABEL},
                }
            ],
        },
        "stamping": {
            "childTemplates": [{"apiVersion": "batch/v1", "kind": "Job", "templatePath": "spec.template"}]
        },
    },
}


def with_stamping(base: Path, tmp: Path, **stamping: object) -> Path:
    """``base`` (a policy file) with ``spec.stamping`` set, written under ``tmp``."""
    doc = yaml.safe_load(base.read_text())
    doc["spec"]["stamping"] = stamping
    out = tmp / base.parent.name / base.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc))
    return out


@pytest.fixture
def policies(tmp_path: Path) -> PolicySet:
    jobset = tmp_path / "jobset.yaml"
    jobset.write_text(yaml.safe_dump(JOBSET_POLICY))
    # Two of these trees are composites: their groups exist only with the CompositePodGroup gate.
    return PolicySet.load(
        [
            with_stamping(TRAINER, tmp_path, pods=True),
            with_stamping(ROLEBASED, tmp_path, pods=True),
            jobset,
            IMPLICIT_GANG,  # so a child Job *would* be defaulted if it were not a child
        ],
        gates=COMPOSITE_ON,
    )


# ------------------------------------------------------------------------------- makers


def owner(
    kind: str = "Trainer",
    *,
    api_version: str | None = None,
    name: str = "llm",
    uid: str | None = UID,
    controller: bool | None = True,
) -> Json:
    versions = {
        "Trainer": "ml.example.com/v1",
        "InferenceService": "serving.example.com/v1",
        "JobSet": "jobset.x-k8s.io/v1alpha2",
        "Job": "batch/v1",
    }
    ref: Json = {
        "apiVersion": api_version or versions.get(kind, "example.com/v1"),
        "kind": kind,
        "name": name,
    }
    if uid is not None:
        ref["uid"] = uid
    if controller is not None:
        ref["controller"] = controller
    return ref


def pod(*refs: Json, labels: Json | None = None, group: Json | None = None) -> Json:
    spec: Json = {"containers": [{"name": "main", "image": "busybox"}]}
    if group is not None:
        spec["schedulingGroup"] = group
    metadata: Json = {"generateName": "llm-", "namespace": "ml"}
    if refs:
        metadata["ownerReferences"] = list(refs)
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def child_job(
    *refs: Json, labels: Json | None = None, template_labels: Json | None = None, group: Json | None = None
) -> Json:
    template_spec: Json = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
    if group is not None:
        template_spec["schedulingGroup"] = group
    template: Json = {"spec": template_spec}
    if template_labels:
        template["metadata"] = {"labels": template_labels}
    metadata: Json = {"name": "llm-workers-0", "namespace": "ml", "ownerReferences": list(refs)}
    if labels:
        metadata["labels"] = labels
    spec = {"parallelism": 4, "completions": 4, "completionMode": "Indexed", "template": template}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def group(template: str, name: str = "llm") -> str:
    return pod_group_name(name, UID, template)


# ------------------------------------------------------------------------------- table


@dataclass(frozen=True)
class Case:
    id: str
    obj: Json
    expected: str | None  # the stamped podGroupName; None: unchanged
    warns: bool = False
    path: tuple[str, ...] = ("spec", "schedulingGroup")


CASES = [
    Case("a pod of a governed single-leaf CRD gets its leaf's PodGroup", pod(owner()), group("llm-workers")),
    Case(
        "a pod of a multi-level object is placed by its role label",
        pod(owner("InferenceService"), labels={ROLE_LABEL: "decode"}),
        group("llm-decode"),
    ),
    Case(
        "a pod of a multi-level object without the label is left alone with a warning",
        pod(owner("InferenceService"), labels={"app": "x"}),
        None,
        warns=True,
    ),
    Case(
        "a pod whose label value names no element is left alone with a warning",
        pod(owner("InferenceService"), labels={ROLE_LABEL: "Not_A_Key"}),
        None,
        warns=True,
    ),
    Case(
        "a pod that already has a schedulingGroup is never changed",
        pod(owner(), group={"podGroupName": "user-chosen"}),
        None,
    ),
    Case("a pod with an empty schedulingGroup is never changed", pod(owner(), group={}), None),
    Case("a pod without ownerReferences is left alone", pod(), None),
    Case(
        "a pod whose only owner reference is not a controller is left alone",
        pod(owner(controller=False)),
        None,
    ),
    Case(
        "a pod whose owner reference has no controller flag is left alone", pod(owner(controller=None)), None
    ),
    Case(
        "the controller reference is used, not the first reference",
        pod(owner("ReplicaSet", controller=False), owner()),
        group("llm-workers"),
    ),
    Case("a pod whose controller no policy governs is left alone", pod(owner("ReplicaSet")), None),
    Case(
        "a pod whose controller's version the policy does not serve is left alone",
        pod(owner(api_version="ml.example.com/v2")),
        None,
    ),
    Case(
        "a pod of a Job is left alone: the Job controller stamps its own pods",
        pod(owner("Job", name="train")),
        None,
    ),
    Case(
        "a pod whose controller reference has no uid is left alone with a warning",
        pod(owner(uid=None)),
        None,
        warns=True,
    ),
    Case(
        "a child Job of a governed JobSet gets its pod template stamped, placed by the Job's label",
        child_job(owner("JobSet"), labels={RJOB_LABEL: "workers"}),
        group("llm-workers"),
        path=("spec", "template", "spec", "schedulingGroup"),
    ),
    Case(
        "a child Job is placed by its template's label when the Job has none",
        child_job(owner("JobSet"), template_labels={RJOB_LABEL: "driver"}),
        group("llm-driver"),
        path=("spec", "template", "spec", "schedulingGroup"),
    ),
    Case(
        "a child Job whose template already has a schedulingGroup is never changed",
        child_job(owner("JobSet"), labels={RJOB_LABEL: "workers"}, group={"podGroupName": "mine"}),
        None,
    ),
    Case(
        "a child Job without the label is left alone with a warning and not defaulted",
        child_job(owner("JobSet")),
        None,
        warns=True,
    ),
    Case(
        "a pod of a stamped child Job is left alone: the template gave it its group",
        pod(owner("Job", name="llm-workers-0"), group={"podGroupName": group("llm-workers")}),
        None,
    ),
]


def _at(obj: Json, path: tuple[str, ...]) -> t.Any:
    for seg in path:
        obj = obj.get(seg) if isinstance(obj, dict) else None  # type: ignore[assignment]
    return obj


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_stamping(case: Case, policies: PolicySet) -> None:
    original = copy.deepcopy(case.obj)
    result = mutate_object(case.obj, policies, operation="CREATE")
    assert case.obj == original, "the input must not be modified"
    check_patch(original, result.object, result.patch)
    if case.expected is None:
        assert result.patch == [] and result.object is case.obj
    else:
        assert _at(result.object, case.path) == {"podGroupName": case.expected}
        # Only the schedulingGroup changes: a child Job is never given a spec.scheduling.
        assert [op["path"] for op in result.patch] == ["/" + "/".join(case.path)]
    assert bool(result.warnings) == case.warns, result.warnings
    again = mutate_object(result.object, policies, operation="CREATE")
    assert again.patch == [] and again.warnings == result.warnings


def test_a_stamped_child_job_passes_validation(policies: PolicySet) -> None:
    result = mutate_object(
        child_job(owner("JobSet"), labels={RJOB_LABEL: "workers"}), policies, operation="CREATE"
    )
    assert validate_object(result.object, policies=policies).errors == ()


def test_pods_are_stamped_on_create_only(policies: PolicySet) -> None:
    assert mutate_object(pod(owner()), policies, operation="UPDATE", old_obj=pod(owner())).patch == []


def test_nothing_is_stamped_when_generic_workload_is_off(policies: PolicySet) -> None:
    off = PolicySet(policies.policies, gates=FeatureGates(frozenset({"WorkloadWithJob"})))
    result = mutate_object(pod(owner()), off, operation="CREATE")
    assert result.patch == []
    assert any("GenericWorkload" in w for w in result.warnings)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda: pod(owner("InferenceService"), labels={ROLE_LABEL: "decode"}),
            id="a pod of a multi-level object",
        ),
        pytest.param(lambda: child_job(owner("JobSet"), labels={RJOB_LABEL: "workers"}), id="a child Job"),
    ],
)
def test_nothing_is_stamped_for_a_composite_tree_while_the_composite_gate_is_off(
    policies: PolicySet, make: t.Callable[[], dict[str, t.Any]]
) -> None:
    # The reconciler creates no group of a composite tree without the gate (the apiserver
    # forbids compositePodGroupTemplates): a name stamped now would name a group nobody creates.
    off = PolicySet(policies.policies, gates=DEFAULT_GATES)
    result = mutate_object(make(), off, operation="CREATE")
    assert result.patch == []
    assert any("CompositePodGroup" in w and "not stamped" in w for w in result.warnings)


def test_the_stamp_functions_leave_other_kinds_alone(policies: PolicySet) -> None:
    job = child_job(owner("JobSet"), labels={RJOB_LABEL: "workers"})
    assert stamp_pod(job, policies).object is job
    assert stamp_child(pod(owner()), policies).roots == ()
    assert stamp_pod("not an object", policies).object == "not an object"


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"ownerReferences": "x"}, "spec": {}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"ownerReferences": [owner()], "labels": [1]},
            "spec": {},
        },
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"ownerReferences": [owner()]}, "spec": None},
        {"apiVersion": "v1", "kind": "Pod", "metadata": None},
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"ownerReferences": [owner("JobSet")]},
            "spec": {},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"ownerReferences": [owner("JobSet")]},
            "spec": {"template": {"spec": 3}},
        },
        ["not", "a", "mapping"],
    ],
    ids=[
        "ownerReferences that are not a list",
        "labels that are not a mapping",
        "a pod without a spec",
        "null metadata",
        "a child Job without a template",
        "a child Job whose template spec is not an object",
        "a list instead of an object",
    ],
)
def test_malformed_objects_never_raise(obj: t.Any, policies: PolicySet) -> None:
    result = mutate_object(obj, policies, operation="CREATE")
    check_patch(obj, result.object, result.patch)
    if result.patch:
        assert _at(result.object, ("spec", "schedulingGroup")) is not None


# ------------------------------------------------------------------------------- names agree with the compiler


def test_stamped_names_equal_the_names_the_compiler_emits(policies: PolicySet) -> None:
    isvc = {
        "apiVersion": "serving.example.com/v1",
        "kind": "InferenceService",
        "metadata": {"name": "llm", "namespace": "ml", "uid": UID},
        "spec": {"roles": [{"name": "prefill", "replicas": 2}, {"name": "decode", "replicas": 4}]},
    }
    trainer = {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "llm", "namespace": "ml", "uid": UID},
        "spec": {"workers": 4},
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "llm", "namespace": "ml", "uid": UID},
        "spec": {"replicatedJobs": [{"name": "driver", "replicas": 1}, {"name": "workers", "replicas": 2}]},
    }
    cases = [
        (isvc, [pod(owner("InferenceService"), labels={ROLE_LABEL: r}) for r in ("prefill", "decode")]),
        (trainer, [pod(owner())]),
        (jobset, [child_job(owner("JobSet"), labels={RJOB_LABEL: r}) for r in ("driver", "workers")]),
    ]
    for governing, stamped_objects in cases:
        policy = policies.for_object(governing)
        assert policy is not None
        compiled = [g["metadata"]["name"] for g in compile_object(policy, governing, uid=UID).pod_groups]
        stamped = []
        for obj in stamped_objects:
            result = mutate_object(obj, policies, operation="CREATE")
            group_block = _at(result.object, ("spec", "schedulingGroup")) or _at(
                result.object, ("spec", "template", "spec", "schedulingGroup")
            )
            stamped.append(group_block["podGroupName"])
        assert stamped == compiled


# ------------------------------------------------------------------------------- policy load check


@pytest.mark.parametrize(
    ("stamping", "rejected"),
    [
        ({"pods": True}, True),
        (
            {"childTemplates": [{"apiVersion": "batch/v1", "kind": "Job", "templatePath": "spec.template"}]},
            True,
        ),
        ({"pods": False}, False),
        ({}, False),
    ],
    ids=[
        "a leaf named with {index} is rejected when pods are stamped",
        "a leaf named with {index} is rejected when child templates are stamped",
        "a leaf named with {index} is fine when pods are not stamped",
        "a leaf named with {index} is fine without a stamping section",
    ],
)
def test_index_template_names_cannot_be_stamped(stamping: Json, rejected: bool, tmp_path: Path) -> None:
    doc = copy.deepcopy(JOBSET_POLICY)
    doc["spec"]["root"]["children"][0]["templateName"] = "{name}-{index}"
    doc["spec"]["stamping"] = stamping
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    if rejected:
        with pytest.raises(PolicyError, match=r"\{index\}"):
            load_policy_file(path)
    else:
        assert load_policy_file(path).name == "example-jobset"


# ------------------------------------------------------------------------------- property: never raises

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-1, 3), st.sampled_from(["", "x", "decode", "llm"]))
_JUNK = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(
            st.sampled_from(["spec", "template", "scheduling", "schedulingGroup", "name", "roles"]),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=8,
)
_KINDS = st.sampled_from(
    [
        ("v1", "Pod"),
        ("batch/v1", "Job"),
        ("ml.example.com/v1", "Trainer"),
        ("serving.example.com/v1", "InferenceService"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ]
)


@st.composite
def junk_objects(draw: st.DrawFn) -> Json:
    api_version, kind = draw(_KINDS)
    refs = draw(
        st.one_of(
            _JUNK,
            st.lists(st.sampled_from([owner(), owner("JobSet"), owner("InferenceService")]), max_size=2),
        )
    )
    labels = draw(st.one_of(_JUNK, st.just({ROLE_LABEL: "decode", RJOB_LABEL: "workers"})))
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "llm", "ownerReferences": refs, "labels": labels},
        "spec": draw(_JUNK),
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=junk_objects())
def test_mutation_never_raises_and_its_patch_always_applies(obj: Json, policies: PolicySet) -> None:
    result = mutate_object(obj, policies, operation="CREATE")
    check_patch(obj, result.object, result.patch)
