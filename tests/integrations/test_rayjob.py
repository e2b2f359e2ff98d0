"""The rayjob integration: KubeRay RayJob, one gang of its RayCluster's head and workers.

The chain as KubeRay builds it (ray-project/kuberay ``rayjob_controller.go``,
``raycluster_controller.go``, ``common/pod.go``): RayJob -> RayCluster ``<rayjob>-<random>``
(spec from ``spec.rayClusterSpec``, metadata from the RayJob's, controller owner the RayJob)
-> head and worker Pods owned by the RayCluster (labels ``ray.io/cluster``,
``ray.io/node-type``, ``ray.io/group``); RayJob -> submitter Job ``<rayjob>`` -> its Pod.
Layering: with the raycluster integration enabled too, the RayCluster defers to the RayJob.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.wasp_cli import validated, wasp
from webhook.governed.reconcile import Mode, Observed, management_mode, plan
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.policy.crdcheck import check_child_templates
from webhook.policy.integrations import integration_paths

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "rayjob"
POLICY = integration_paths(["rayjob"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
GANG = {"schedulingPolicy": {"gang": {}}}


def policies(*names: str) -> PolicySet:
    return PolicySet.load(integration_paths(names or ("rayjob",)))


def rayjob(blocks: object = GANG, **group: t.Any) -> Json:
    obj = yaml.safe_load((DATA / "rayjob.yaml").read_text())
    obj["metadata"]["uid"] = "uid-rj"
    obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].update(group)
    return t.cast(Json, obj)


def desired_workers(group: Json) -> int:
    """KubeRay's count of a worker group (``utils.GetWorkerGroupDesiredReplicas``)."""
    if group.get("suspend"):
        return 0
    low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2147483647)
    return min(max(group.get("replicas", 0), low), high) * group.get("numOfHosts", 1)


def replay(chain: Chain, job: Json) -> Json:
    stored = chain.create(job)
    meta = stored["metadata"]
    cluster_name = f"{meta['name']}-x7k2p"
    cluster = chain.create(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": cluster_name,
                "namespace": meta["namespace"],
                "labels": {
                    **meta.get("labels", {}),
                    "ray.io/originated-from-cr-name": meta["name"],
                    "ray.io/originated-from-crd": "RayJob",
                },
                "annotations": dict(meta.get("annotations", {})),  # RayJob metadata is copied
            },
            "spec": copy.deepcopy(stored["spec"]["rayClusterSpec"]),
        },  # fmt: skip
        by=stored,
    )
    common = {"ray.io/cluster": cluster_name, "ray.io/is-ray-node": "yes", "app.kubernetes.io/name": "kuberay",
              "app.kubernetes.io/created-by": "kuberay-operator"}  # fmt: skip
    spec = cluster["spec"]
    chain.pod(spec["headGroupSpec"]["template"], name=f"{cluster_name}-head", by=cluster,
              labels={**common, "ray.io/node-type": "head", "ray.io/group": "headgroup"})  # fmt: skip
    for group in spec["workerGroupSpecs"]:
        for i in range(desired_workers(group)):
            chain.pod(group["template"], name=f"{cluster_name}-{group['groupName']}-worker-{i}", by=cluster,
                      labels={**common, "ray.io/node-type": "worker", "ray.io/group": group["groupName"],
                              "ray.io/worker-group-replica-index": str(i)})  # fmt: skip
    # K8sJobMode: the submitter Job, created once the cluster is ready.
    submitter = chain.create(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
         "spec": {"backoffLimit": 2, "template": {"metadata": {"labels": {"ray.io/originated-from-cr-name": meta["name"]}},
                  "spec": {"restartPolicy": "Never", "containers": [{"name": "ray-job-submitter", "image": "ray"}]}}}},
        by=stored,
    )  # fmt: skip
    chain.job_pods(submitter, 1)
    return cluster


SUBMITTER = {"rayjob-sample-0": "the submitter pod runs once the cluster is up: outside the gang"}


# --- the policy and the CLI ---------------------------------------------------------------------


def test_policy_check_walks_the_child_templates_through_the_child_crds_in_the_same_file(
    tmp_path: Path,
) -> None:
    both = tmp_path / "crds.yaml"
    both.write_text(
        (DATA / "crd.yaml").read_text() + "\n---\n" + (DATA.parent / "raycluster" / "crd.yaml").read_text()
    )
    code, out, _ = wasp("policy", "check", POLICY, "--crd", both)
    assert (code, "fits" in out) == (0, True), out
    doc = yaml.safe_load(POLICY.read_text())
    doc["spec"]["stamping"]["childTemplates"][0]["templates"][0]["path"] = "spec.headGroup.template"
    broken = tmp_path / "rayjob.yaml"
    broken.write_text(yaml.safe_dump(doc))
    code, out, _ = wasp("policy", "check", broken, "--crd", both)
    assert code == 1 and "spec.stamping.childTemplates[0].templates[0].path" in out, out


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(rayjob(), [], id="the sample: a gang of 1 + 2 + 2 x 2"),
        pytest.param(
            rayjob({"schedulingPolicy": {"gang": {"minCount": 8}}}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang larger than the cluster's pods is refused at the annotation's field",
        ),
        pytest.param(
            rayjob({"schedulingPolicy": {"gang": {"minCount": 0}}}),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang of 0",
        ),
        pytest.param(
            rayjob("{not json"), [("FieldValueInvalid", AT)], id="a JSON syntax error names the annotation"
        ),
        pytest.param(
            rayjob({"schedulingPolicy": {"gang": {}}, "resourceClaims": [{"name": "x"}]}),
            [("FieldValueInvalid", f"{AT}.resourceClaims[0]")],
            id="a claim without a source",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(obj: Json, expected: list, tmp_path: Path) -> None:
    assert validated(tmp_path, obj, "--integrations", "rayjob") == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    "group",
    [
        pytest.param({}, id="replicas within min and max"),
        pytest.param({"replicas": 9}, id="replicas above maxReplicas are clamped"),
        pytest.param({"replicas": 0}, id="replicas below minReplicas are raised"),
        pytest.param({"suspend": True}, id="a suspended group has no pods"),
        pytest.param({"numOfHosts": 3}, id="multi-host replicas"),
    ],
)
def test_compile_gives_a_gang_of_every_ray_pod(group: Json) -> None:
    ps = policies()
    obj = rayjob(**group)
    (pod_group,) = compile_object(ps.for_object(obj), obj, uid="uid-rj").pod_groups
    chain = Chain(ps)
    replay(chain, obj)
    ray_pods = [p for p in chain.landings() if p.pod.startswith("rayjob-sample-x7k2p-")]
    assert pod_group["spec"]["schedulingPolicy"]["gang"]["minCount"] == len(ray_pods)


# --- the replay ---------------------------------------------------------------------------------


def test_the_head_and_every_worker_land_in_the_rayjobs_group() -> None:
    chain = Chain(policies())
    replay(chain, rayjob())
    landings = chain.check(left_alone=SUBMITTER)
    assert {p.group for p in landings if p.group} == {pod_group_name("rayjob-sample", "uid-rj", "cluster")}
    assert sum(1 for p in landings if p.group) == 7


def test_with_the_raycluster_integration_too_the_rayjob_alone_gets_a_workload() -> None:
    # Issue 15 item 5: the head and the workers used to land in different Workloads.
    ps = policies("rayjob", "raycluster")
    chain = Chain(ps)
    cluster = replay(chain, rayjob())
    assert management_mode(cluster, ps) is Mode.NONE and plan(cluster, ps, Observed()).writes == ()
    # The RayJob's blocks, copied onto the RayCluster, are the RayJob's: not judged twice.
    assert KEY in cluster["metadata"]["annotations"]
    assert validate_object(cluster, policies=ps).status is Status.SKIPPED
    landings = chain.check(left_alone=SUBMITTER)
    assert {p.group for p in landings if p.group} == {pod_group_name("rayjob-sample", "uid-rj", "cluster")}


def test_a_worker_group_without_a_name_still_joins_the_one_gang() -> None:
    ps = policies("rayjob", "raycluster")
    chain = Chain(ps)
    stored = chain.create(rayjob())
    body = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rayjob-sample-x7k2p", "namespace": "default"},
            "spec": copy.deepcopy(stored["spec"]["rayClusterSpec"])}  # fmt: skip
    del body["spec"]["workerGroupSpecs"][0]["groupName"]
    cluster = chain.create(body, by=stored)
    # A static leaf needs no key: the group still joins the RayJob's one gang.
    assert cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["schedulingGroup"]


@pytest.mark.parametrize(
    ("change", "problems"),
    [
        pytest.param({}, [], id="the shipped mappings fit the RayCluster CRD"),
        pytest.param(
            {"path": "spec.headGroup.template"},
            ["spec.stamping.childTemplates[0].templates[0].path"],
            id="a template path the RayCluster does not have",
        ),
        pytest.param(
            {"path": "spec.headGroupSpec.rayStartParams"},
            [],
            id="a map is an object too: the walk checks existence and type only",
        ),
    ],
)
def test_the_child_template_paths_are_checked_against_the_child_crd(
    change: Json, problems: list, tmp_path: Path
) -> None:
    doc = yaml.safe_load(POLICY.read_text())
    doc["spec"]["stamping"]["childTemplates"][0]["templates"][0].update(change)
    path = tmp_path / "rayjob.yaml"
    path.write_text(yaml.safe_dump(doc))
    crds = list(yaml.safe_load_all((DATA.parent / "raycluster" / "crd.yaml").read_text()))
    assert [p.where for p in check_child_templates(load_policy_file(path), crds)] == problems
