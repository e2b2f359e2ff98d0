"""Schedulability through the controller-chain replay (issue 26, docs/schedulability.md).

Each admitted workload is replayed as its controller starts it: only the pods that exist
before anything waits are made (the first replicated job under dependsOn/InOrder, the tasks
without dependsOn, the workers before a WaitForWorkersReady launcher, min(parallelism,
completions) pods of a Job). Every such pod must land in a group that can form from them
(:meth:`Chain.formable`). The same workloads with a gang over every pod are denied at
admission, so they never reach the replay.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain, jobset_jobs, running_pods
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data"
KEY = "scheduling.wasp.dev/blocks"
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["jobset", "mpijob", "volcano-job"]))


def gang(min_count: int | None = None) -> Json:
    return {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}}


def with_blocks(obj: Json, blocks: Json) -> Json:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("annotations", {})[KEY] = json.dumps(blocks)
    return obj


def rjob(name: str, replicas: int, parallelism: int, **extra: object) -> Json:
    spec = {"parallelism": parallelism, "completions": parallelism, "template": copy.deepcopy(POD)}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}, **extra}


def jobset(blocks: Json, *rjobs: Json, **spec: object) -> Json:
    obj = yaml.safe_load((DATA / "jobset" / "jobset.yaml").read_text())
    obj["spec"] = {"replicatedJobs": list(rjobs), **spec}
    return with_blocks(obj, blocks)


DEPENDS = (rjob("init", 1, 2), rjob("train", 2, 2, dependsOn=[{"name": "init", "status": "Ready"}]))
IN_ORDER = {"startupPolicy": {"startupPolicyOrder": "InOrder"}}


@pytest.mark.parametrize(
    ("obj", "first"),
    [
        pytest.param(jobset(gang(2), *DEPENDS), 1, id="dependsOn, minCount of the first replicated job"),
        pytest.param(jobset(gang(2), rjob("a", 1, 2), rjob("b", 2, 2), **IN_ORDER), 1, id="InOrder, minCount of the first"),
        pytest.param(jobset(gang(), rjob("a", 1, 2), rjob("b", 2, 2)), 2, id="AnyOrder, every pod"),
    ],
)  # fmt: skip
def test_a_jobsets_first_pods_form_its_gang(policies: PolicySet, obj: Json, first: int) -> None:
    chain = Chain(policies)
    stored = chain.create(obj)
    # JobSet creates the Jobs of the replicated jobs that wait for nothing (depends_on.go,
    # startup_policy.go): the first `first` of them here.
    starting = {
        **stored,
        "spec": {**stored["spec"], "replicatedJobs": stored["spec"]["replicatedJobs"][:first]},
    }
    for job in jobset_jobs(chain, starting):
        chain.job_pods(job, running_pods(job))
    chain.check()
    assert chain.formable()


def test_a_volcano_jobs_first_tasks_form_its_gang(policies: PolicySet) -> None:
    obj = yaml.safe_load((DATA / "volcano-job" / "job.yaml").read_text())
    obj["spec"]["tasks"][1]["dependsOn"] = {"name": ["ps"]}
    chain = Chain(policies)
    job = chain.create(with_blocks(obj, gang(1)))
    ps = job["spec"]["tasks"][0]
    name = job["metadata"]["name"]
    labels = {"volcano.sh/job-name": name, "volcano.sh/task-spec": "ps"}
    chain.pod(ps["template"], name=f"{name}-ps-0", by=job, labels=labels)  # the worker task waits
    chain.check()
    assert chain.formable() != {}


def test_mpijob_workers_form_the_gang_before_a_waiting_launcher(policies: PolicySet) -> None:
    obj = yaml.safe_load((DATA / "mpijob" / "mpijob.yaml").read_text())
    obj["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    chain = Chain(policies)
    job = chain.create(with_blocks(obj, gang()))
    name, worker = job["metadata"]["name"], job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
    common = {"training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": name}
    for i in range(3):
        role = {"training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": str(i)}
        chain.pod(worker, name=f"{name}-worker-{i}", by=job, labels={**common, **role})
    chain.check()
    assert list(chain.formable().values()) == [(3, 3)]


def test_a_jobs_running_pods_form_its_gang() -> None:
    chain = Chain(PolicySet.load())
    spec = {"parallelism": 4, "completions": 2, "scheduling": gang(2), "template": copy.deepcopy(POD)}
    job = chain.create(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"}, "spec": spec}
    )
    pods = chain.job_pods(job, running_pods(job))
    # The Job controller groups a Job's pods itself (decision 9): the pods are left to it.
    assert len(pods) == 2 and job["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] <= len(pods)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(jobset(gang(), *DEPENDS), id="jobset dependsOn, gang of every pod"),
        pytest.param(jobset(gang(), rjob("a", 1, 2), rjob("b", 2, 2), **IN_ORDER), id="jobset InOrder, gang of every pod"),
    ],
)  # fmt: skip
def test_a_gang_that_cannot_form_never_reaches_the_controller(policies: PolicySet, obj: Json) -> None:
    with pytest.raises(AssertionError, match="sequenced-start|can never form"):
        Chain(policies).create(obj)
