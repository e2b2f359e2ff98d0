"""The mpijob integration: Kubeflow MPIJob v2beta1, one gang of the launcher and the workers.

Pods as mpi-operator makes them (kubeflow/mpi-operator ``pkg/controller/mpi_job_controller.go``):
workers ``<job>-worker-<i>`` owned by the MPIJob, the launcher Pod through a batch/v1 Job
``<job>-launcher`` the MPIJob owns; labels ``training.kubeflow.org/*``; no UID label.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.wasp_cli import compiled, gang, validated
from webhook.governed.reconcile import Observed, plan
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "mpijob"
POLICY = integration_paths(["mpijob"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["mpijob"]))


def mpijob(blocks: object = None, *, workers: int | None = 2, **spec: object) -> Json:
    obj = yaml.safe_load((DATA / "mpijob.yaml").read_text())
    if blocks is None:
        del obj["metadata"]["annotations"]
    else:
        obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    if workers is None:
        del obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    else:
        obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = workers
    obj["spec"].update(spec)
    return t.cast(Json, obj)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(mpijob(gang()), [], id="the pi example with a gang is valid"),
        pytest.param(mpijob(gang(3)), [], id="a gang of the launcher and both workers is valid"),
        pytest.param(mpijob(), [], id="no blocks is valid"),
        pytest.param(
            mpijob(gang(4)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang larger than launcher plus workers",
        ),
        pytest.param(
            mpijob(gang(3), launcherCreationPolicy="WaitForWorkersReady"),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a launcher created after the workers is not part of their gang",
        ),
        pytest.param(
            mpijob('{"schedulingPolicy": {"gang": {}}'),
            [("FieldValueInvalid", AT)],
            id="blocks that are not JSON are reported at the annotation",
        ),
        pytest.param(
            mpijob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}),
            [("FieldValueInvalid", f"{AT}.disruptionMode")],
            id="basic with disruption mode all",
        ),
        pytest.param(
            mpijob({"schedulingPolicy": {"gang": {"minCount": 0}}}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang of zero pods",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(
    tmp_path: Path, obj: Json, expected: list[t.Any]
) -> None:
    assert validated(tmp_path, obj, "--integrations", "mpijob") == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    ("obj", "pods"),
    [
        pytest.param(mpijob(gang(), workers=2), 3, id="one launcher and two workers"),
        pytest.param(mpijob(gang(), workers=None), 1, id="Worker replicas default to zero"),
        pytest.param(
            mpijob(gang(), workers=4, launcherCreationPolicy="WaitForWorkersReady"),
            4,
            id="a launcher created once the workers are ready is not counted",
        ),
    ],
)
def test_compile_min_count_is_the_pod_count(tmp_path: Path, obj: Json, pods: int) -> None:
    items = compiled(tmp_path, obj, "--integrations", "mpijob")
    assert [i["kind"] for i in items] == ["Workload", "PodGroup"]
    assert items[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": pods}}


def replay(chain: Chain, job: Json, workers: int) -> Json:
    """What mpi-operator creates for the stored MPIJob ``job``: its worker pods, then the
    launcher Job (returned), whose one pod the Job controller creates."""
    name, specs = job["metadata"]["name"], job["spec"]["mpiReplicaSpecs"]
    common = {"training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": name}
    for i in range(workers):
        role = {"training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": str(i)}
        chain.pod(specs["Worker"]["template"], name=f"{name}-worker-{i}", by=job, labels={**common, **role})
    template = copy.deepcopy(specs["Launcher"]["template"])
    template.setdefault("metadata", {})["labels"] = {**common, "training.kubeflow.org/job-role": "launcher"}
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-launcher", "namespace": "ml", "labels": {"app": name}},
        "spec": {"backoffLimit": 6, "template": template},
    }
    launcher = chain.create(body, by=job)
    chain.job_pods(launcher, 1)
    return launcher


def test_every_pod_of_the_controller_chain_joins_the_group_the_reconciler_creates(
    policies: PolicySet,
) -> None:
    """Workers are pods of the MPIJob; the launcher Pod comes through the launcher Job, whose
    pod template the webhook stamps (the Job is its parent's: no Workload of its own)."""
    chain = Chain(policies)
    launcher = replay(chain, chain.create(mpijob(gang(), workers=3)), 3)
    assert plan(launcher, policies, Observed()).writes == ()
    landings = chain.check()
    assert len(landings) == 4 and len({landing.group for landing in landings}) == 1
    [group] = chain.desired()
    assert landings[0].group == group
