"""Outsiders (webhook/governed/outsiders.py): a pod or child wasp would stamp now but that has no
group, and the grouping cache's verdict from them (docs/decisions.md §30)."""

from __future__ import annotations

import typing as t

import pytest

from webhook.governed.grouping import GroupingCache, GroupingUnavailable, slim_workload
from webhook.governed.outsiders import outsider, slim_member
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
PS = PolicySet.load(integration_paths(["raycluster", "jobset", "leaderworkerset"]))
RAY = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "u-rc", "controller": True}
JS = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": "u-js",
    "controller": True,
}
ROOT_RAY = ("ml", "ray.io", "RayCluster", "rc")


def pod(
    owner: Json | None = RAY, *, group: str | None = None, labels: Json | None = None, **meta: t.Any
) -> Json:
    spec: Json = {"containers": [{"name": "c", "image": "i"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    metadata: Json = {
        "name": "p",
        "namespace": "ml",
        "labels": labels if labels is not None else {"ray.io/node-type": "worker", "ray.io/group": "g"},
        **meta,
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Succeeded"}}  # fmt: skip


def job(*, stamped: bool) -> Json:
    template: Json = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    if stamped:
        template["spec"]["schedulingGroup"] = {"podGroupName": "x"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "js-w-0", "namespace": "ml", "ownerReferences": [JS]},
            "spec": {"template": template}}  # fmt: skip


LWS_LABELS = {"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "0"}


@pytest.mark.parametrize(
    ("obj", "policies", "expected"),
    [
        pytest.param(pod(), PS, ROOT_RAY, id="an unstamped pod of a stamping kind (finished: it still counts)"),
        pytest.param(pod(group="g"), PS, None, id="control: a grouped pod"),
        pytest.param(pod(annotations={"scheduling.wasp.dev/not-stamped": "why"}), PS, None, id="control: left out on purpose"),
        pytest.param(pod(None), PS, None, id="control: no controller"),
        pytest.param(pod(), PolicySet(PS.policies, gates=FeatureGates.parse("GenericWorkload=false")), None, id="control: the gate is off now"),
        pytest.param(pod(None, labels=LWS_LABELS), PS, ("ml", "leaderworkerset.x-k8s.io", "LeaderWorkerSet", "vllm"), id="a member pod by label"),
        pytest.param(job(stamped=False), PS, ("ml", "jobset.x-k8s.io", "JobSet", "js"), id="a child Job whose template has no group"),
        pytest.param(job(stamped=True), PS, None, id="control: a stamped child Job"),
    ],
)  # fmt: skip
def test_what_is_an_outsider(obj: Json, policies: PolicySet, expected: tuple | None) -> None:
    assert outsider(obj, policies) == expected


def test_the_cache_holds_back_a_root_with_an_outsider_until_it_is_gone() -> None:
    cache = GroupingCache()
    member = slim_member(PS)
    assert cache.held(ROOT_RAY, "u-rc") is None
    cache.member_changed(None, member(pod()))
    assert "outside a group" in (cache.held(ROOT_RAY, "u-rc") or "")
    assert cache.held(("ml", "ray.io", "RayCluster", "other"), "u-o") is None  # control: another root
    cache.member_changed(member(pod()), None)
    assert cache.held(ROOT_RAY, "u-rc") is None


def test_workloads_made_by_wasp_bring_your_own_and_native() -> None:
    def workload(name: str, *, wasp: bool, owner: bool) -> Json:
        meta: Json = {"name": name, "namespace": "ml"}
        if wasp:
            meta["labels"] = {"app.kubernetes.io/managed-by": "wasp"}
        if owner:
            meta["ownerReferences"] = [RAY]
        return {"metadata": meta, "spec": {"controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": "rc"},
                                           "podGroupTemplates": [{"name": "t"}]}}  # fmt: skip

    cache = GroupingCache()
    cache.workload_changed(None, slim_workload(workload("ours", wasp=True, owner=True)))
    cache.workload_changed(None, slim_workload(workload("byo", wasp=False, owner=False)))
    assert cache.held(ROOT_RAY, "u-rc") is None
    assert cache.templates(ROOT_RAY, "u-rc") == ("ours", frozenset({"t"}))
    cache.workload_changed(None, slim_workload(workload("kuberay", wasp=False, owner=True)))
    assert "not created by wasp" in (cache.held(ROOT_RAY, "u-rc") or "")


def test_before_the_first_list_the_cache_cannot_tell() -> None:
    import threading

    cache = GroupingCache()
    cache.listed.append(threading.Event())
    with pytest.raises(GroupingUnavailable):
        cache.held(ROOT_RAY, "u-rc")
