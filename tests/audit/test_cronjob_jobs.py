"""``wasp audit`` and the Jobs a CronJob creates (docs/decisions.md §4): the newest Job controller
gives them no Workload or PodGroup, the KEP text gives them both. The audit reports neither
outcome: no Missing when the objects are absent, nothing when a controller made them. Controls:
the Job's own fields are still judged, and a pod naming a PodGroup that is absent is reported."""

from __future__ import annotations

import copy
import typing as t
from pathlib import Path

import pytest

from webhook.governed.workloads import compile_object
from webhook.policy import PolicySet

from .conftest import Cluster, start

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
NS: t.Final = "cron"
JOBS: t.Final = f"/apis/batch/v1/namespaces/{NS}/jobs"


@pytest.fixture
def cluster(tmp_path: Path) -> t.Iterator[Cluster]:
    for running in start(tmp_path):
        running.create("/api/v1/namespaces", {"metadata": {"name": NS}})
        yield running


def cronjob_job(cluster: Cluster, *, min_count: int = 4) -> Json:
    owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
             "uid": "c0c0c0c0-0000-0000-0000-000000000000", "controller": True}  # fmt: skip
    return cluster.create(JOBS, {
        "metadata": {"name": "nightly-29000000", "ownerReferences": [owner]},
        "spec": {"parallelism": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
    })  # fmt: skip


def as_a_root(cluster: Cluster, job: Json) -> str:
    """The Workload and PodGroup a controller following the KEP text would create; the PodGroup's name."""
    policy = PolicySet.load([], builtin=True).for_kind("batch/v1", "Job")
    assert policy is not None
    root = copy.deepcopy(job)
    root["metadata"].pop("ownerReferences")
    compiled = compile_object(policy, root, uid=job["metadata"]["uid"])
    cluster.create(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/workloads", compiled.workload)
    group = compiled.pod_groups[0]
    cluster.create(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/podgroups", group)
    return str(group["metadata"]["name"])


def pod(cluster: Cluster, group: str) -> None:
    cluster.create(f"/api/v1/namespaces/{NS}/pods", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "x"}], "schedulingGroup": {"podGroupName": group}}})  # fmt: skip


def findings(cluster: Cluster) -> list[tuple[str, str]]:
    code, doc = cluster.audit("-n", NS)
    assert doc["exitCode"] == code
    return [(f["type"], f["object"]["kind"]) for f in doc["findings"]]


def test_no_objects_for_a_cronjob_job_is_no_finding(cluster: Cluster) -> None:
    cronjob_job(cluster)
    assert findings(cluster) == []


def test_objects_a_controller_made_for_a_cronjob_job_are_no_finding(cluster: Cluster) -> None:
    pod(cluster, as_a_root(cluster, cronjob_job(cluster)))
    assert findings(cluster) == []


def test_an_invalid_cronjob_job_is_still_judged(cluster: Cluster) -> None:
    cronjob_job(cluster, min_count=9)  # above parallelism 4 (decision 1)
    assert ("FieldValueInvalid", "Job") in findings(cluster)


def test_a_pod_naming_an_absent_podgroup_is_still_reported(cluster: Cluster) -> None:
    cronjob_job(cluster)
    pod(cluster, "nightly-29000000-absent")
    assert findings(cluster) == [("PodGroupNotFound", "Pod")]
