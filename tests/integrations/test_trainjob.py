"""The trainjob integration: Kubeflow Trainer v2 TrainJob, one gang of the trainer step's nodes.

The chain as Trainer builds it (kubeflow/trainer ``pkg/runtime/framework/plugins/jobset``):
TrainJob -> JobSet of the same name (controller owner: the TrainJob; replicated jobs from the
runtime, the trainer step labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer``,
its parallelism and completions set to the node count) -> Jobs -> Pods (JobSet and Job
controllers, tests/integrations/chain.py). Layering: with the jobset integration enabled too,
the JobSet defers to the TrainJob (one Workload, from the TrainJob).
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain, jobset_jobs, running_pods
from tests.integrations.wasp_cli import validated
from webhook.governed.reconcile import Mode, Observed, management_mode, plan
from webhook.governed.result import Status
from webhook.governed.stamping import NOT_STAMPED
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.policy.crdcheck import check_child_templates
from webhook.policy.integrations import integration_paths
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "trainjob"
POLICY = integration_paths(["trainjob"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
GATES = FeatureGates.parse("CompositePodGroup=true")


def policies(*names: str) -> PolicySet:
    return PolicySet.load(integration_paths(names or ("trainjob",)), gates=GATES)


def trainjob(blocks: object = None, num_nodes: int | None = 4) -> Json:
    obj = yaml.safe_load((DATA / "trainjob.yaml").read_text())
    obj["metadata"]["uid"] = "uid-tj"
    if blocks is None:
        del obj["metadata"]["annotations"]
    else:
        obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    if num_nodes is None:
        del obj["spec"]["trainer"]["numNodes"]
    else:
        obj["spec"]["trainer"]["numNodes"] = num_nodes
    return t.cast(Json, obj)


def runtime_jobset(train: Json, nodes: int, *, initializers: bool = True) -> Json:
    """The JobSet Trainer builds for ``train`` from a torch runtime (dataset and model
    initializers, then the trainer step ``node``, which depends on them)."""
    pod = {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "node", "image": "pytorch"}]}}

    def rjob(name: str, step: str, count: int) -> Json:
        return {
            "name": name,
            "replicas": 1,
            "template": {
                "metadata": {"labels": {STEP: step}},
                "spec": {"parallelism": count, "completions": count, "template": copy.deepcopy(pod)},
            },
        }

    steps = [
        rjob("dataset-initializer", "dataset-initializer", 1),
        rjob("model-initializer", "model-initializer", 1),
    ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": train["metadata"]["name"], "namespace": "default", "labels": {}},
        "spec": {"replicatedJobs": [*(steps if initializers else []), rjob("node", "trainer", nodes)]},
    }


def replay(chain: Chain, train: Json, nodes: int) -> Json:
    stored = chain.create(train)
    js = chain.create(runtime_jobset(stored, nodes), by=stored)
    for job in jobset_jobs(chain, js):
        chain.job_pods(job, running_pods(job))
    return js


INITIALIZERS = {
    "pytorch-mnist-dataset-initializer-": "an initializer step runs before the trainer: outside its gang",
    "pytorch-mnist-model-initializer-": "an initializer step runs before the trainer: outside its gang",
}


# --- the policy and the CLI ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(trainjob({"schedulingPolicy": {"gang": {}}}), [], id="the sample: a gang of numNodes"),
        pytest.param(trainjob(), [], id="no annotation is no blocks"),
        pytest.param(
            trainjob({"schedulingPolicy": {"gang": {"minCount": 5}}}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang larger than numNodes is refused at the annotation's field",
        ),
        pytest.param(
            trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}}, num_nodes=None),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="without numNodes the count is 1: a larger gang points at the count",
        ),
        pytest.param(
            trainjob('{"schedulingPolicy": {"gang": {}}'),
            [("FieldValueInvalid", AT)],
            id="a JSON syntax error names the annotation",
        ),
        pytest.param(
            trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}),
            [("FieldValueInvalid", f"{AT}.disruptionMode")],
            id="basic with disruption all",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(obj: Json, expected: list, tmp_path: Path) -> None:
    assert validated(tmp_path, obj, "--integrations", "trainjob") == (expected, 1 if expected else 0)


@pytest.mark.parametrize("nodes", [1, 4, 16])
def test_compile_gives_a_gang_of_the_trainer_steps_pods(nodes: int) -> None:
    ps = policies()
    obj = trainjob({"schedulingPolicy": {"gang": {}}}, num_nodes=nodes)
    (group,) = compile_object(ps.for_object(obj), obj, uid="uid-tj").pod_groups
    chain = Chain(ps)
    replay(chain, obj, nodes)
    trainer_pods = [p for p in chain.landings() if "-node-" in p.pod]
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == len(trainer_pods) == nodes


# --- the replay ---------------------------------------------------------------------------------


def test_the_trainer_pods_land_in_the_trainjobs_group_and_initializers_stay_out() -> None:
    chain = Chain(policies())
    js = replay(chain, trainjob({"schedulingPolicy": {"gang": {}}}), 4)
    rjobs = js["spec"]["replicatedJobs"]
    assert rjobs[2]["template"]["spec"]["template"]["spec"]["schedulingGroup"] == {
        "podGroupName": pod_group_name("pytorch-mnist", "uid-tj", "trainer")
    }
    # Without a jobset policy nobody would restamp the initializers: they are not marked.
    assert all(NOT_STAMPED not in (r["template"]["spec"]["template"].get("metadata") or {}).get("annotations", {})
               for r in rjobs[:2])  # fmt: skip
    landings = chain.check(left_alone=INITIALIZERS)
    assert sum(1 for p in landings if p.group) == 4


def test_with_the_jobset_integration_too_the_trainjob_alone_gets_a_workload() -> None:
    # Issue 15 item 5 (layering): one Workload, from the outermost governed object.
    ps = policies("trainjob", "jobset")
    chain = Chain(ps)
    js = replay(chain, trainjob({"schedulingPolicy": {"gang": {}}}), 4)
    assert management_mode(js, ps) is Mode.NONE
    assert plan(js, ps, Observed()).writes == ()
    verdict = validate_object(js, policies=ps)
    assert verdict.status is Status.SKIPPED and "deferred to its controller TrainJob" in verdict.reason
    # The initializers are marked, so the JobSet's own stamping leaves their Jobs alone.
    for rjob in js["spec"]["replicatedJobs"][:2]:
        assert "only trainer" in rjob["template"]["spec"]["template"]["metadata"]["annotations"][NOT_STAMPED]
    landings = chain.check(left_alone=INITIALIZERS)
    assert {p.group for p in landings if p.group} == {pod_group_name("pytorch-mnist", "uid-tj", "trainer")}


def test_an_inner_jobset_carrying_blocks_is_not_judged_or_defaulted() -> None:
    ps = policies("trainjob", "jobset")
    chain = Chain(ps)
    stored = chain.create(trainjob({"schedulingPolicy": {"gang": {}}}))
    inner = runtime_jobset(stored, 2)
    # Blocks that would be invalid on a JobSet of its own (minCount 9 > 2 pods): not this one's to judge.
    inner["spec"]["replicatedJobs"][2]["template"]["metadata"]["annotations"] = {
        KEY: json.dumps({"schedulingPolicy": {"gang": {"minCount": 9}}})
    }
    js = chain.create(inner, by=stored)  # Chain.create asserts it is not denied
    assert js["metadata"].get("annotations") is None


def test_the_jobset_mapping_fits_the_jobset_crd() -> None:
    crds = list(yaml.safe_load_all((DATA.parent / "jobset" / "crd.yaml").read_text()))
    assert check_child_templates(load_policy_file(POLICY), crds) == []
