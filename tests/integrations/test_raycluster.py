"""The raycluster integration: KubeRay RayCluster, one gang of the head and every worker.

Pods as KubeRay makes them (ray-project/kuberay ``ray-operator/controllers/ray/common/pod.go``):
owned by the RayCluster directly, head ``<cluster>-head-<rand>`` and workers
``<cluster>-<group>-worker-<rand>``, labels ``ray.io/cluster``, ``ray.io/node-type`` (head|worker)
and ``ray.io/group`` (``headgroup`` on the head, else the group name); no UID label.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.wasp_cli import compiled, gang, validated
from webhook.policy import PolicySet, load_policy_file
from webhook.policy.integrations import integration_paths
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "raycluster"
POLICY = integration_paths(["raycluster"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["raycluster"]))


def raycluster(blocks: object = None, *groups: Json) -> Json:
    obj = yaml.safe_load((DATA / "raycluster.yaml").read_text())
    if blocks is None:
        del obj["metadata"]["annotations"]
    else:
        obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    if groups:
        template = obj["spec"]["workerGroupSpecs"][0]["template"]
        obj["spec"]["workerGroupSpecs"] = [
            {"groupName": f"group{i}", "rayStartParams": {}, "template": template, **g}
            for i, g in enumerate(groups)
        ]
    return t.cast(Json, obj)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(raycluster(gang()), [], id="the sample with a gang is valid"),
        pytest.param(raycluster(gang(8)), [], id="a gang of the head and all seven workers"),
        pytest.param(raycluster(), [], id="no blocks is valid"),
        pytest.param(
            raycluster(gang(9)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang larger than head plus workers",
        ),
        pytest.param(
            raycluster(gang(5), {"replicas": 9, "maxReplicas": 3}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="replicas above maxReplicas count as maxReplicas",
        ),
        pytest.param(
            raycluster({"schedulingPolicy": {"gang": {}}, "disruptionMode": {"al": {}}}),
            [
                ("FieldValueInvalid", f"{AT}.disruptionMode"),
                ("FieldValueForbidden", f"{AT}.disruptionMode.al"),
            ],
            id="a misspelt disruption mode: no mode set, and an unknown field, inside the annotation",
        ),
        pytest.param(
            raycluster("{"),
            [("FieldValueInvalid", AT)],
            id="blocks that are not JSON",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(
    tmp_path: Path, obj: Json, expected: list[t.Any]
) -> None:
    assert validated(tmp_path, obj, "--integrations", "raycluster") == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    ("groups", "pods"),
    [
        pytest.param((), 8, id="the sample: 1 head, 3 workers, 2 replicas of 2 hosts"),
        pytest.param(({"replicas": 0},), 1, id="a head alone"),
        pytest.param(
            ({"replicas": 1, "minReplicas": 4},), 5, id="replicas below minReplicas count as minReplicas"
        ),
        pytest.param(
            ({"replicas": 9, "maxReplicas": 3},), 4, id="replicas above maxReplicas count as maxReplicas"
        ),
        pytest.param(({"replicas": 2, "numOfHosts": 4},), 9, id="multi-host replicas count every host"),
        pytest.param(
            ({"replicas": 3, "suspend": True}, {"replicas": 2}), 3, id="a suspended group counts none"
        ),
        pytest.param(({},), 1, id="replicas default to zero"),
    ],
)
def test_compile_min_count_is_the_pod_count(tmp_path: Path, groups: tuple[Json, ...], pods: int) -> None:
    items = compiled(tmp_path, raycluster(gang(), *groups), "--integrations", "raycluster")
    assert [i["kind"] for i in items] == ["Workload", "PodGroup"]
    assert items[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": pods}}


def ray_pods(chain: Chain, cluster: Json) -> None:
    """The head and every worker pod as KubeRay creates them, each through the webhooks."""
    name, spec = cluster["metadata"]["name"], cluster["spec"]

    def labels(node_type: str, group: str) -> Json:
        return {
            "ray.io/cluster": name, "ray.io/node-type": node_type, "ray.io/group": group,
            "ray.io/is-ray-node": "yes", "ray.io/identifier": f"{name}-{node_type}",
            "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
        }  # fmt: skip

    chain.pod(spec["headGroupSpec"]["template"], name=f"{name}-head-8xk2z", by=cluster, labels=labels("head", "headgroup"))  # fmt: skip
    for group in spec["workerGroupSpecs"]:
        hosts = group.get("numOfHosts", 1)
        for replica in range(group.get("replicas", 0)):
            for host in range(hosts):
                extra = {"ray.io/worker-group-replica-index": str(replica)}
                if hosts > 1:
                    extra |= {"ray.io/worker-group-replica-name": f"{group['groupName']}-r{replica}", "ray.io/replica-host-index": str(host)}  # fmt: skip
                pod_name = f"{name}-{group['groupName']}-worker-{replica}{host}"
                chain.pod(group["template"], name=pod_name, by=cluster, labels={**labels("worker", group["groupName"]), **extra})  # fmt: skip


def test_every_pod_kuberay_creates_joins_the_group_the_reconciler_creates(policies: PolicySet) -> None:
    chain = Chain(policies)
    ray_pods(chain, chain.create(raycluster(gang())))
    landings = chain.check()
    assert len(landings) == 8 and {landing.group for landing in landings} == chain.desired()
    assert len(chain.desired()) == 1


def test_a_gang_per_worker_group_places_the_head_in_its_own_group() -> None:
    """The observed defect: under a per-group policy the head pod, which carries
    ray.io/group=headgroup like a worker of a group named "headgroup", was stamped with a
    PodGroup name no template produces. The head now claims pods by ray.io/node-type=head."""
    gates = FeatureGates.parse("CompositePodGroup=true")
    chain = Chain(PolicySet([load_policy_file(DATA / "per-group-policy.yaml")], gates=gates))
    ray_pods(chain, chain.create(raycluster(gang())))
    landings = chain.check()
    groups: dict[str, set[str | None]] = {}
    for landing in landings:  # by the pod's group: head, workergroup, tpu(-group)
        groups.setdefault(landing.pod.split("-")[2], set()).add(landing.group)
    assert sorted(groups) == ["head", "tpu", "workergroup"]
    assert [len(g) for g in groups.values()] == [1, 1, 1]
    assert set().union(*groups.values()) == chain.desired() and len(chain.desired()) == 3
