"""The leaderworkerset integration: a gang per LWS replica group (repeated groups), pods by label.

The object chain as lws makes it (kubernetes-sigs/lws ``pkg/controllers``): LWS -> leader
StatefulSet ``<lws>`` -> leader Pods ``<lws>-<g>`` -> worker StatefulSet ``<lws>-<g>`` (owned by
the leader Pod) -> worker Pods ``<lws>-<g>-<w>``. No owner of a pod is the LWS; every pod carries
``leaderworkerset.sigs.k8s.io/name`` (``stamping.membership``), and the webhook's identity cache
(fed here with the LWS's UID, as the watch would) gives the UID the PodGroup names hash.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.wasp_cli import field_errors, gang, wasp
from webhook.governed.desired_groups import identity
from webhook.governed.membership import IdentityCache, IdentityUnavailable, with_identities
from webhook.governed.mutation import mutate_object
from webhook.governed.reconcile import Create, Observed, plan
from webhook.governed.workloads import pod_group_name
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "leaderworkerset"
POLICY = integration_paths(["leaderworkerset"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
LWS = "leaderworkerset.sigs.k8s.io"
UID = "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["leaderworkerset"]))


def watched(policies: PolicySet, *known: Json, synced: bool = True) -> PolicySet:
    """``policies`` with an identity cache holding the LWS objects ``known`` (their UID and the
    PodGroups the reconciler plans for them), as the webhook's watch of LeaderWorkerSets fills it."""
    cache = IdentityCache("LeaderWorkerSet")
    for obj in known:
        found = identity(obj, policies)
        assert found is not None
        cache.put(obj["metadata"]["namespace"], obj["metadata"]["name"], found)
    if synced:
        cache.mark_synced()
    return with_identities(policies, {"leaderworkerset": cache})


def lws(blocks: object = None, *, replicas: int | None = 3, size: int | None = 4) -> Json:
    obj = yaml.safe_load((DATA / "lws.yaml").read_text())
    if blocks is None:
        del obj["metadata"]["annotations"]
    else:
        obj["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    for field, value, parent in (("replicas", replicas, obj["spec"]), ("size", size, obj["spec"]["leaderWorkerTemplate"])):  # fmt: skip
        if value is None:
            del parent[field]
        else:
            parent[field] = value
    return t.cast(Json, obj)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(lws(gang()), [], id="the sample with a gang per group is valid"),
        pytest.param(lws(gang(4)), [], id="a gang of the leader and three workers"),
        pytest.param(lws(), [], id="no blocks is valid"),
        pytest.param(
            lws(gang(12)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a gang of every pod of every group is larger than one group",
        ),
        pytest.param(
            lws(gang(2), size=None),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="size defaults to one pod per group",
        ),
        pytest.param(
            lws({"schedulingPolicy": {"gang": {"minCount": "4"}}}),
            [("FieldValueTypeInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="a count written as a string",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(
    tmp_path: Path, obj: Json, expected: list[t.Any]
) -> None:
    path = tmp_path / "lws.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, _ = wasp("validate", "--integrations", "leaderworkerset", "-o", "json", path)
    assert (field_errors(out), code) == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    ("replicas", "size", "groups", "pods"),
    [
        pytest.param(3, 4, 3, 4, id="three groups of a leader and three workers"),
        pytest.param(None, 2, 1, 2, id="replicas default to one group"),
        pytest.param(2, None, 2, 1, id="size defaults to a leader alone"),
        pytest.param(0, 4, 0, 4, id="no replicas, no PodGroup"),
    ],
)
def test_compile_gives_a_pod_group_per_replica_of_size_pods(
    tmp_path: Path, replicas: int | None, size: int | None, groups: int, pods: int
) -> None:
    path = tmp_path / "lws.yaml"
    path.write_text(yaml.safe_dump(lws(gang(), replicas=replicas, size=size)))
    code, out, err = wasp("compile", "--integrations", "leaderworkerset", "-o", "json", path)
    assert code == 0, err
    items = json.loads(out)["items"]
    workload, pod_groups = items[0], items[1:]
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": pods}}
    assert [g["metadata"]["name"] for g in pod_groups] == [
        pod_group_name("vllm", "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d", "replica", i) for i in range(groups)
    ]
    assert {g["spec"]["workloadRef"]["templateName"] for g in pod_groups} <= {"replica"}


def _replay(chain: Chain, obj: Json, groups: range | None = None) -> None:
    """The leader StatefulSet, leader Pods, worker StatefulSets and worker Pods, in order;
    ``groups`` (a scale-up) makes only those groups, under the leader StatefulSet made before."""
    spec = obj["spec"]
    name, size, revision = obj["metadata"]["name"], spec["leaderWorkerTemplate"]["size"], "7d9f8c6b5"
    leader_template = copy.deepcopy(spec["leaderWorkerTemplate"]["leaderTemplate"])
    leader_template.setdefault("metadata", {})["labels"] = {
        **leader_template["metadata"].get("labels", {}), f"{LWS}/name": name, f"{LWS}/worker-index": "0",
        f"{LWS}/template-revision-hash": revision,
    }  # fmt: skip
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": spec["replicas"], "podManagementPolicy": "Parallel", "template": leader_template}}  # fmt: skip
    made = [o for o in chain.objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == name]
    leader_sts = made[0] if groups is not None else chain.create(body, by=obj)
    for g in range(spec["replicas"]) if groups is None else groups:
        group = {f"{LWS}/group-index": str(g), f"{LWS}/group-key": f"key{g}"}
        leader = chain.pod(leader_sts["spec"]["template"], name=f"{name}-{g}", by=leader_sts, labels={**group, "apps.kubernetes.io/pod-index": str(g)})  # fmt: skip
        if size == 1:
            continue
        worker_template = copy.deepcopy(spec["leaderWorkerTemplate"]["workerTemplate"])
        worker_template.setdefault("metadata", {})["labels"] = {f"{LWS}/name": name, f"{LWS}/template-revision-hash": revision, **group}  # fmt: skip
        worker_template["metadata"]["annotations"] = {
            f"{LWS}/size": str(size),
            f"{LWS}/leader-name": f"{name}-{g}",
        }
        body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": f"{name}-{g}", "namespace": "ml"},
                "spec": {"replicas": size - 1, "ordinals": {"start": 1}, "template": worker_template}}  # fmt: skip
        worker_sts = chain.create(body, by=leader)
        for w in range(1, size):
            chain.pod(worker_sts["spec"]["template"], name=f"{name}-{g}-{w}", by=worker_sts, labels={f"{LWS}/worker-index": str(w), "apps.kubernetes.io/pod-index": str(w)})  # fmt: skip


@pytest.mark.parametrize(
    ("replicas", "size"),
    [
        pytest.param(3, 4, id="three groups of a leader and three workers"),
        pytest.param(2, 1, id="leaders alone: no worker StatefulSets"),
        pytest.param(1, 8, id="one group of eight"),
    ],
)
def test_every_leader_and_worker_lands_in_its_groups_pod_group(
    policies: PolicySet, replicas: int, size: int
) -> None:
    chain = Chain(watched(policies, lws(gang(), replicas=replicas, size=size)))
    _replay(chain, chain.create(lws(gang(), replicas=replicas, size=size)))
    assert chain.desired() == {pod_group_name("vllm", UID, "replica", g) for g in range(replicas)}
    landings = chain.check()
    assert len(landings) == replicas * size
    # A group is its leader and its workers: vllm-<g> and vllm-<g>-<w> share one PodGroup.
    by_group = {landing.pod.split("-")[1]: set() for landing in landings}
    for landing in landings:
        by_group[landing.pod.split("-")[1]].add(landing.group)
    assert by_group == {str(g): {pod_group_name("vllm", UID, "replica", g)} for g in range(replicas)}
    # Templates are left alone (pods are stamped one by one) and nothing is said.
    assert all(o["spec"]["template"]["spec"].get("schedulingGroup") is None for o in chain.objects if o["kind"] == "StatefulSet")  # fmt: skip
    assert set(chain.warnings.values()) == {()}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(2, 4, id="scaled up: the new groups' pods land in the new PodGroups"),
        pytest.param(4, 2, id="scaled down: the groups left still have theirs"),
    ],
)
def test_pods_of_a_scaled_lws_land_in_the_groups_it_now_has(
    policies: PolicySet, before: int, after: int
) -> None:
    chain = Chain(watched(policies, lws(gang(), replicas=after)))  # the watch saw the new replicas
    chain.create(lws(gang(), replicas=after))
    scaled = chain.objects[-1]
    _replay(chain, {**scaled, "spec": {**scaled["spec"], "replicas": min(before, after)}})
    _replay(chain, scaled, range(min(before, after), after))
    assert chain.desired() == {pod_group_name("vllm", UID, "replica", g) for g in range(after)}
    assert len(chain.check()) == after * 4


def _pod(labels: Json, namespace: str = "ml") -> Json:
    meta = {"name": "p", "namespace": namespace, "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "s", "uid": "u", "controller": True}]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


MEMBER = {f"{LWS}/name": "vllm", f"{LWS}/group-index": "1"}


@pytest.mark.parametrize(
    ("pod", "known", "warning"),
    [
        pytest.param(
            _pod({**MEMBER, f"{LWS}/name": "gone"}),
            [lws(gang())],
            "LeaderWorkerSet ml/gone does not exist",
            id="the label of an LWS that does not exist",
        ),  # fmt: skip
        pytest.param(
            _pod(MEMBER, "other"),
            [lws(gang())],
            "LeaderWorkerSet other/vllm does not exist",
            id="an LWS of that name in another namespace",
        ),  # fmt: skip
        pytest.param(
            _pod({**MEMBER, f"{LWS}/name": "Not/A_Name"}),
            [],
            "cannot be the name of a LeaderWorkerSet",
            id="a label value no object can have",
        ),  # fmt: skip
        pytest.param(
            _pod({f"{LWS}/name": "vllm"}),
            [lws(gang())],
            f"it has no label {LWS}/group-index",
            id="a pod without its group index",
        ),  # fmt: skip
        pytest.param(
            _pod({**MEMBER, f"{LWS}/group-index": "01"}),
            [lws(gang())],
            "is not a group index",
            id="a group index that is not a number",
        ),  # fmt: skip
        pytest.param(
            _pod({**MEMBER, f"{LWS}/group-index": "3"}),
            [lws(gang(), replicas=3)],
            "is not among the 3 the reconciler creates for it",
            id="a group past spec.replicas (a rolling update's surge)",
        ),
        pytest.param(
            _pod(MEMBER),
            [lws(gang(12))],
            "is not among the 0 the reconciler creates for it",
            id="an LWS the reconciler refuses to compile gets no PodGroup, so no pod is stamped",
        ),
    ],
)
def test_a_pod_that_names_no_known_group_is_left_alone_with_a_warning(
    policies: PolicySet, pod: Json, known: list[Json], warning: str
) -> None:
    mutation = mutate_object(pod, watched(policies, *known), operation="CREATE")
    assert (mutation.patch, [warning in w for w in mutation.warnings]) == ([], [True])


def test_a_pod_of_an_lws_the_cache_knows_is_stamped_whatever_its_owner(policies: PolicySet) -> None:
    mutation = mutate_object(_pod(MEMBER), watched(policies, lws(gang())), operation="CREATE")
    name = pod_group_name("vllm", UID, "replica", 1)
    assert (mutation.patch, mutation.warnings) == (
        [{"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": name}}],
        (),
    )


def test_before_the_cache_has_listed_a_member_pod_is_refused_as_retriable(policies: PolicySet) -> None:
    with pytest.raises(IdentityUnavailable, match="has not listed LeaderWorkerSet objects yet"):
        mutate_object(_pod(MEMBER), watched(policies, synced=False), operation="CREATE")


def test_with_the_generic_workload_gate_off_no_lookup_is_made_and_nothing_is_denied(
    policies: PolicySet,
) -> None:
    gated = PolicySet(
        watched(policies, synced=False).policies, gates=FeatureGates.parse("GenericWorkload=false")
    )
    mutation = mutate_object(_pod(MEMBER), gated, operation="CREATE")  # an unsynced cache would raise
    assert (mutation.patch, [("feature gate GenericWorkload is off" in w) for w in mutation.warnings]) == (
        [],
        [True],
    )


def test_without_an_identity_cache_member_pods_are_left_alone(policies: PolicySet) -> None:
    mutation = mutate_object(_pod(MEMBER), policies, operation="CREATE")
    assert (mutation.patch, [("no identity cache" in w) for w in mutation.warnings]) == ([], [True])


def _live(obj: Json, policies: PolicySet) -> tuple[list[Json], list[Json]]:
    """The Workload and PodGroups the reconciler creates for ``obj``, as the cluster holds them."""
    [workload] = [w.body for w in plan(obj, policies, Observed()).writes if isinstance(w, Create)]
    workload = {**workload, "metadata": {**workload["metadata"], "uid": "workload-uid"}}
    groups = [
        w.body for w in plan(obj, policies, Observed(workloads=[workload])).writes if isinstance(w, Create)
    ]
    return [workload], groups


@pytest.mark.parametrize(
    ("before", "after", "created", "extra"),
    [
        pytest.param(3, 5, [3, 4], [], id="scaling up creates the new groups"),
        pytest.param(3, 3, [], [], id="no change creates nothing"),
        pytest.param(3, 1, [], [1, 2], id="scaling down deletes nothing and reports the groups left over"),
    ],
)
def test_scaling_replicas_creates_missing_groups_and_reports_extra_ones(
    policies: PolicySet, before: int, after: int, created: list[int], extra: list[int]
) -> None:
    workloads, groups = _live(lws(gang(), replicas=before), policies)
    result = plan(lws(gang(), replicas=after), policies, Observed(workloads=workloads, groups=groups))
    uid = UID
    assert [(w.kind, w.body["metadata"]["name"]) for w in result.writes if isinstance(w, Create)] == [
        ("PodGroup", pod_group_name("vllm", uid, "replica", i)) for i in created
    ]
    assert not [w for w in result.writes if not isinstance(w, Create)]
    reported = [r for r in result.reports if r.reason == "ExtraPodGroups"]
    assert [r.message.split(": ")[0] for r in reported] == (
        [", ".join(sorted(pod_group_name("vllm", uid, "replica", i) for i in extra))] if extra else []
    )


def test_a_new_gang_size_is_patched_into_every_groups_pod_group(policies: PolicySet) -> None:
    workloads, groups = _live(lws(gang(4), replicas=2), policies)
    result = plan(lws(gang(3), replicas=2), policies, Observed(workloads=workloads, groups=groups))
    patched = sorted((w.kind, w.name) for w in result.writes if not isinstance(w, Create))
    uid = UID
    assert patched == [("PodGroup", pod_group_name("vllm", uid, "replica", i)) for i in range(2)] + [
        ("Workload", workloads[0]["metadata"]["name"])
    ]
