"""The per-replicated-job JobSet example (examples/jobset-per-replicated-job/policy.yaml): one
PodGroup per replicated job under one CompositePodGroup, the pods reached through the child Jobs
(stamp or delegate). It needs the alpha CompositePodGroup gate, and it is loaded instead of the
shipped ``jobset`` integration (two policies for one kind are a load error).

Objects as the JobSet controller makes them (jobset ``pkg/controllers/jobset_controller.go``):
Jobs ``<jobset>-<rjob>-<i>`` owned by the JobSet, the JobSet keys as labels and annotations on
the Job and its pod template; pods as the Job controller makes them (tests/integrations/chain.py).
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain, jobset_jobs, running_pods
from tests.integrations.wasp_cli import field_errors, gang, wasp
from webhook.compiler.annotations import GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP
from webhook.governed.desired_groups import converge
from webhook.governed.mutation import mutate_object
from webhook.governed.reconcile import Observed, plan
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name, workload_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
EXAMPLE = Path(__file__).parents[2] / "examples" / "jobset-per-replicated-job"
POLICY = EXAMPLE / "policy.yaml"
CRD = Path(__file__).parent / "data" / "jobset" / "crd.yaml"
KEY = "scheduling.wasp.dev/blocks"
RJOB = f"spec.replicatedJobs[0].template.metadata.annotations[{KEY}]"
GATES = FeatureGates.parse("CompositePodGroup=true")


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load([POLICY], gates=GATES)


@pytest.fixture(scope="module")
def delegating(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    """The example policy with its Job children delegated to the Job controller."""
    doc = yaml.safe_load(POLICY.read_text())
    doc["spec"]["stamping"]["childTemplates"][0].update(
        mode="delegate", children={"path": "replicas", "default": 1}
    )
    # Upstream cannot follow it (docs/schedulability.md delegation-unreachable): the machinery is tested.
    doc["spec"]["schedulability"] = {
        "rules": {"delegation-unreachable": {"action": "off", "reason": "tests the delegation machinery"}}
    }
    path = tmp_path_factory.mktemp("delegate") / "jobset.yaml"
    path.write_text(yaml.safe_dump(doc))
    return PolicySet([*PolicySet.load().policies, load_policy_file(path)], gates=GATES)


def jobset(
    *rjobs: tuple[str, int, int], blocks: t.Mapping[str, object] | None = None, root: object = None
) -> Json:
    """A JobSet with replicated jobs ``(name, replicas, parallelism)`` (completions = parallelism)."""
    sample = yaml.safe_load((EXAMPLE / "jobset.yaml").read_text())
    template = sample["spec"]["replicatedJobs"][0]["template"]
    out = copy.deepcopy(sample)
    out["metadata"]["uid"] = "uid-js"
    if root is not None:
        out["metadata"]["annotations"] = {KEY: json.dumps(root)}
    out["spec"]["replicatedJobs"] = []
    for name, replicas, parallelism in rjobs:
        tpl = copy.deepcopy(template)
        tpl["spec"].update(parallelism=parallelism, completions=parallelism)
        value = (blocks or {}).get(name)
        tpl["metadata"] = {"annotations": {KEY: json.dumps(value)}} if value is not None else {}
        out["spec"]["replicatedJobs"].append({"name": name, "replicas": replicas, "template": tpl})
    return out


# --- the policy and the CLI ---------------------------------------------------------------------


def test_the_policy_fits_the_crd() -> None:
    code, out, _ = wasp("policy", "check", POLICY, "--crd", CRD)
    assert (code, "fits" in out) == (0, True)


def test_it_replaces_the_integration_and_cannot_load_beside_it() -> None:
    # Two policies for one kind: the load error names the integration and the way out.
    code, _, err = wasp("validate", "--policies", EXAMPLE, "--integrations", "jobset",
                        "--feature-gates", "CompositePodGroup=true", EXAMPLE / "jobset.yaml")  # fmt: skip
    assert code == 2 and "already governed by policy 'jobset'" in err
    code, _, err = wasp("validate", "--policies", EXAMPLE, "--feature-gates", "CompositePodGroup=true",
                        EXAMPLE / "jobset.yaml")  # fmt: skip
    assert code == 0, err


def test_without_the_composite_gate_nothing_is_compiled_and_the_reason_is_given() -> None:
    code, out, err = wasp("compile", "--policies", EXAMPLE, "-o", "json", EXAMPLE / "jobset.yaml")
    assert (code, json.loads(out)["items"]) == (0, [])
    assert "a composite tree needs feature gate CompositePodGroup, which is off" in err


def test_without_the_composite_gate_the_reconciler_writes_nothing_and_says_why() -> None:
    obj = jobset(("workers", 3, 2), blocks={"workers": gang(6)})
    p = plan(obj, PolicySet.load([POLICY]), Observed())
    assert (p.writes, [r.reason for r in p.reports]) == ((), ["FailedWorkloadCompilation"])
    assert "CompositePodGroup, which is off" in p.reports[0].message


def test_without_the_composite_gate_no_pod_points_at_a_group_nobody_creates() -> None:
    chain = Chain(PolicySet.load([POLICY]))
    for job in jobset_jobs(chain, chain.create(jobset(("workers", 3, 2), blocks={"workers": gang(6)}))):
        chain.job_pods(job, running_pods(job))
    chain.check(left_alone={"gang-jobset-workers-": "CompositePodGroup is off: no Workload"})


def _validate(obj: Json, tmp_path: Path) -> tuple[int, list[tuple[str, str]]]:
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, _ = wasp("validate", "--policies", POLICY, "--feature-gates", "CompositePodGroup=true",
                        "-o", "json", path)  # fmt: skip
    return code, field_errors(out)


def _with_rjob_blocks(text: str) -> Json:
    obj = yaml.safe_load((EXAMPLE / "jobset.yaml").read_text())
    obj["spec"]["replicatedJobs"][0]["template"]["metadata"]["annotations"][KEY] = text
    return t.cast(Json, obj)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            yaml.safe_load((EXAMPLE / "jobset.yaml").read_text()),
            [],
            id="the upstream gang example: 3 x 2 = 6",
        ),
        pytest.param(
            _with_rjob_blocks('{"schedulingPolicy": {"gang": {"minCount": 7}}}'),
            [("FieldValueInvalid", f"{RJOB}.schedulingPolicy.gang.minCount")],
            id="a gang larger than replicas x parallelism is refused at the annotation's field",
        ),
        pytest.param(
            _with_rjob_blocks('{"schedulingPolicy": {"gang": {"minCount": 6}},}'),
            [("FieldValueInvalid", RJOB)],
            id="a JSON syntax error names the annotation",
        ),
        pytest.param(
            _with_rjob_blocks('{"schedulingPolicy": {"gang": {"minCount": 6}}, "priority": 1}'),
            [("FieldValueForbidden", f"{RJOB}.priority")],
            id="an unknown block is forbidden inside the annotation",
        ),
        pytest.param(
            jobset(
                ("workers", 1, 2), root={"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}
            ),
            [("FieldValueInvalid", f"metadata.annotations[{KEY}].disruptionMode")],
            id="basic with disruption all on the JobSet's own annotation",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(obj: Json, expected: list, tmp_path: Path) -> None:
    code, errors = _validate(obj, tmp_path)
    assert (code, errors) == (1 if expected else 0, expected)


@pytest.mark.parametrize(
    ("rjobs", "minimums"),
    [
        pytest.param([("workers", 3, 2)], [6], id="3 Jobs of 2 pods"),
        pytest.param([("driver", 1, 1), ("workers", 2, 4)], [1, 8], id="a driver and 2 x 4 workers"),
        pytest.param([("workers", 0, 4)], [1], id="0 replicas: the gang stays at 1"),
    ],
)
def test_compile_gives_a_gang_per_replicated_job_the_size_of_its_pods(
    policies: PolicySet, rjobs: list, minimums: list
) -> None:
    obj = jobset(*rjobs, blocks={name: gang() for name, _, _ in rjobs})
    compiled = compile_object(policies.for_object(obj), obj, uid="uid-js")
    got = [g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in compiled.pod_groups]
    assert got == minimums
    # The real pod count, as the JobSet and Job controllers make the pods.
    chain = Chain(policies)
    for job in jobset_jobs(chain, chain.create(obj)):
        chain.job_pods(job, running_pods(job))
    per_rjob = [sum(1 for p in chain.landings() if f"-{name}-" in p.pod) for name, _, _ in rjobs]
    assert [max(1, n) for n in per_rjob] == minimums


# --- the replay: stamp mode ----------------------------------------------------------------------


def test_every_pod_of_a_stamped_jobset_lands_in_a_pod_group_the_reconciler_creates(
    policies: PolicySet,
) -> None:
    chain = Chain(policies)
    stored = chain.create(jobset(("driver", 1, 1), ("workers", 3, 2), blocks={"workers": gang(6)}))
    jobs = jobset_jobs(chain, stored)
    for job in jobs:
        # Stamped, and nothing lands in the Job's spec.scheduling: the Job policy admits it.
        assert "scheduling" not in job["spec"] and job["spec"]["template"]["spec"]["schedulingGroup"]
        assert validate_object(job, policies=policies).errors == ()
        chain.job_pods(job, running_pods(job))
    landings = chain.check()
    assert {p.group for p in landings} == {
        pod_group_name("gang-jobset", "uid-js", "gang-jobset-driver"),
        pod_group_name("gang-jobset", "uid-js", "gang-jobset-workers"),
    }
    assert len(landings) == 7


def test_a_child_job_carries_the_leaf_blocks_only_as_an_annotation(policies: PolicySet) -> None:
    # Issue 15 item 5: blocks at replicatedJobs[].template reach the child Job as metadata, never
    # as spec.scheduling, so stamping its pod template does not collide with the Job policy's
    # exclusiveWith (spec.scheduling with spec.template.spec.schedulingGroup).
    chain = Chain(policies)
    job = jobset_jobs(chain, chain.create(jobset(("workers", 1, 2), blocks={"workers": gang(2)})))[0]
    assert json.loads(job["metadata"]["annotations"][KEY]) == gang(2)
    assert validate_object(job, policies=policies).allowed


# --- the replay: delegate mode -------------------------------------------------------------------


def test_delegated_jobs_get_the_job_controllers_annotations_and_wasp_creates_no_leaf_groups(
    delegating: PolicySet,
) -> None:
    chain = Chain(delegating)
    stored = chain.create(jobset(("driver", 1, 1), ("workers", 1, 4), blocks={"workers": gang(4)}))
    jobs = jobset_jobs(chain, stored)
    composite = pod_group_name("gang-jobset", "uid-js", "gang-jobset")
    for job in jobs:
        rjob = job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
        annotations = job["metadata"]["annotations"]
        assert (annotations[GROUP_TEMPLATE_NAME], annotations[PARENT_COMPOSITE_POD_GROUP]) == (
            f"gang-jobset-{rjob}",
            composite,
        )
        assert "schedulingGroup" not in job["spec"]["template"]["spec"]  # the Job controller stamps
        chain.job_pods(job, running_pods(job))
    # The reconciler creates the Workload and the composite group; the Job controller the rest.
    plans = converge(stored, delegating)
    assert [(o["kind"], o["metadata"]["name"]) for o in plans] == [
        ("Workload", workload_name("gang-jobset", "uid-js")),
        ("CompositePodGroup", composite),
    ]
    landings = chain.check()
    assert len({p.group for p in landings}) == 2 and len(landings) == 5


def test_several_jobs_on_one_delegated_template_are_refused_with_a_reason(delegating: PolicySet) -> None:
    # docs/decisions.md §27: 3 Jobs of one replicated job would share one delegated PodGroup name.
    obj = jobset(("workers", 3, 2), blocks={"workers": gang(6)})
    created = mutate_object(obj, delegating, operation="CREATE")
    assert any("spec.replicatedJobs[0].replicas is 3" in w for w in created.warnings)
    p = plan(obj, delegating, Observed())
    assert (p.writes, [r.reason for r in p.reports]) == ((), ["DelegatedPodGroupNameClash"])
    chain = Chain(delegating)
    for job in jobset_jobs(chain, chain.create(obj)):
        chain.job_pods(job, running_pods(job))
    # No parent Workload: the Job controller creates nothing and its pods get default scheduling.
    chain.check(left_alone={"gang-jobset-workers-": "no Workload: several Jobs would share one PodGroup"})


def test_delegation_falls_back_to_stamping_when_the_job_gate_is_off(delegating: PolicySet) -> None:
    off = PolicySet(
        delegating.policies, gates=FeatureGates.parse("CompositePodGroup=true,WorkloadWithJob=false")
    )
    chain = Chain(off)
    for job in jobset_jobs(chain, chain.create(jobset(("workers", 1, 2)))):
        assert GROUP_TEMPLATE_NAME not in job["metadata"]["annotations"]
        chain.job_pods(job, running_pods(job))
    chain.check()


@pytest.mark.parametrize(
    ("mode", "noted"), [pytest.param("stamp", 0, id="stamp"), pytest.param("delegate", 1, id="delegate")]
)
def test_compile_says_which_pod_groups_the_job_controller_creates(
    tmp_path: Path, mode: str, noted: int
) -> None:
    # The delegated leaves' PodGroups are compiled under the names the Job controller gives
    # them; wasp reconcile does not create them, and wasp compile says so on stderr.
    doc = yaml.safe_load(POLICY.read_text())
    if mode == "delegate":
        doc["spec"]["stamping"]["childTemplates"][0].update(
            mode="delegate", children={"path": "replicas", "default": 1}
        )
        doc["spec"]["schedulability"] = {
            "rules": {"delegation-unreachable": {"action": "off", "reason": "tests the delegation machinery"}}
        }
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(doc))
    code, out, err = wasp(
        "compile",
        "--policies",
        policy,
        "--feature-gates",
        "CompositePodGroup=true",
        "--uid",
        "u",
        EXAMPLE / "jobset.yaml",
    )
    assert code == 0, err
    assert err.count("is created by the Job controller for the delegated Job") == noted
