"""The volcano-job integration: Volcano batch.volcano.sh/v1alpha1 Job, one gang of every task.

Pods as Volcano makes them (volcano-sh/volcano ``pkg/controllers/job/job_controller_util.go``):
``<job>-<task>-<index>``, owned by the Job directly, labels ``volcano.sh/job-name``,
``volcano.sh/task-spec`` and ``volcano.sh/task-index``; the Job UID only in an annotation.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.wasp_cli import compiled, field_errors, gang, validated, wasp
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "volcano-job"
POLICY = integration_paths(["volcano-job"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["volcano-job"]))


def vcjob(blocks: object = None, replicas: t.Sequence[int | None] = (1, 2)) -> Json:
    obj = yaml.safe_load((DATA / "job.yaml").read_text())
    if blocks is None:
        del obj["metadata"]["annotations"]
    else:
        obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    template = obj["spec"]["tasks"][0]["template"]
    obj["spec"]["tasks"] = [
        {"name": f"task{i}", "template": template, **({} if n is None else {"replicas": n})}
        for i, n in enumerate(replicas)
    ]
    return t.cast(Json, obj)


def test_the_sample_is_valid(tmp_path: Path) -> None:
    code, out, _ = wasp("validate", "--integrations", "volcano-job", "-o", "json", DATA / "job.yaml")
    assert (code, field_errors(out)) == (0, [])


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(vcjob(gang(3)), [], id="a gang of every task's pods is valid"),
        pytest.param(vcjob(), [], id="no blocks is valid"),
        pytest.param(
            vcjob(gang(4)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang larger than the sum of the tasks' replicas",
        ),
        pytest.param(
            vcjob(gang(2), replicas=(2, None)),
            [],
            id="a task without replicas counts no pod",
        ),
        pytest.param(
            vcjob(gang(3), replicas=(2, None)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a task without replicas adds nothing to the bound",
        ),
        pytest.param(
            vcjob("schedulingPolicy: gang"),
            [("FieldValueInvalid", AT)],
            id="blocks written as YAML are not JSON",
        ),
        pytest.param(
            vcjob({"schedulingPolicy": {"gang": {"minCount": 2}, "basic": {}}}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy")],
            id="both basic and gang",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(
    tmp_path: Path, obj: Json, expected: list[t.Any]
) -> None:
    assert validated(tmp_path, obj, "--integrations", "volcano-job") == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    ("replicas", "pods"),
    [
        pytest.param((1, 2), 3, id="a ps and two workers"),
        pytest.param((4,), 4, id="one task"),
        pytest.param((2, 3, 5), 10, id="three tasks"),
    ],
)
def test_compile_min_count_is_the_pod_count(tmp_path: Path, replicas: tuple[int, ...], pods: int) -> None:
    items = compiled(tmp_path, vcjob(gang(), replicas), "--integrations", "volcano-job")
    assert [i["kind"] for i in items] == ["Workload", "PodGroup"]
    assert items[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": pods}}


def test_every_pod_volcano_creates_joins_the_group_the_reconciler_creates(policies: PolicySet) -> None:
    chain = Chain(policies)
    job = chain.create(vcjob(gang(), replicas=(1, 3)))
    meta = job["metadata"]
    for task in job["spec"]["tasks"]:
        for i in range(task["replicas"]):
            labels = {
                "volcano.sh/job-name": meta["name"], "volcano.sh/job-namespace": meta["namespace"],
                "volcano.sh/queue-name": "default", "volcano.sh/task-spec": task["name"],
                "volcano.sh/task-index": str(i),
            }  # fmt: skip
            annotations = {"scheduling.k8s.io/group-name": f"{meta['name']}-{meta['uid']}"}
            chain.pod(task["template"], name=f"{meta['name']}-{task['name']}-{i}", by=job, labels=labels, annotations=annotations)  # fmt: skip
    landings = chain.check()
    assert len(landings) == 4 and {landing.group for landing in landings} == chain.desired()
    assert len(chain.desired()) == 1
