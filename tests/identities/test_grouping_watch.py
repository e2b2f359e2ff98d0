"""The webhook's grouping watch (all or nothing, docs/decisions.md §30) against the stand-in API
server: pods outside a group and Workloads wasp did not create, listed and watched, hold back the
stamping of their workload's new pods; without API access the guard is off, never unready."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from tests.standin import StandIn
from webhook.governed.mutation import mutate_object
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.watches.identities import watch_identities

Json = dict[str, t.Any]
RAY = "ray.io/v1/rayclusters/RayCluster"
PODS = "/api/v1/namespaces/ml/pods"
WORKLOADS = "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/workloads"
OWNER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc", "uid": "uid-rc", "controller": True}


@pytest.fixture
def standin() -> t.Iterator[StandIn]:
    with StandIn("--resource", RAY, "--bookmark-interval", "0.2") as server:
        yield server


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["raycluster"]))


def pod(name: str, *, group: str | None = None) -> Json:
    labels = {"ray.io/cluster": "rc", "ray.io/node-type": "worker", "ray.io/group": "workers"}
    spec: Json = {"containers": [{"name": "ray", "image": "rayproject/ray"}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": "ml", "labels": labels, "ownerReferences": [OWNER]}}  # fmt: skip


def stamped(policies: PolicySet, name: str) -> bool:
    result = mutate_object(pod(name), policies, operation="CREATE")
    return any(op["path"].startswith("/spec/schedulingGroup") for op in result.patch)


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        pytest.param([], True, id="control: nothing exists yet"),
        pytest.param([("pod", pod("rc-w-0", group="rc-pg"))], True, id="control: a grouped pod"),
        pytest.param([("pod", pod("rc-w-0"))], False, id="a pod outside a group"),
        pytest.param(
            [("workload", {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                           "metadata": {"name": "rc", "namespace": "ml", "ownerReferences": [OWNER]},
                           "spec": {"controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": "rc"},
                                    "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]}})],
            False, id="a Workload KubeRay made (native)",
        ),
    ],
)  # fmt: skip
def test_the_listed_cluster_decides_whether_a_new_pod_is_stamped(
    standin: StandIn, tmp_path: Path, policies: PolicySet, existing: list[tuple[str, Json]], expected: bool
) -> None:
    for kind, body in existing:
        standin.create(PODS if kind == "pod" else WORKLOADS, body)
    attached, watch = watch_identities(policies, kubeconfig=standin.kubeconfig(tmp_path / "kubeconfig"))
    assert watch is not None and attached.grouping is not None
    watch.start()
    try:
        assert watch.wait(5.0) and watch.synced()
        assert stamped(attached, "rc-w-1") is expected
    finally:
        watch.stop()


def test_an_outsider_arriving_later_is_seen_through_the_watch(
    standin: StandIn, tmp_path: Path, policies: PolicySet
) -> None:
    attached, watch = watch_identities(policies, kubeconfig=standin.kubeconfig(tmp_path / "kubeconfig"))
    assert watch is not None
    watch.start()
    try:
        assert watch.wait(5.0) and stamped(attached, "rc-w-1")
        standin.create(PODS, pod("rc-w-0"))  # made while wasp's webhook was down under Ignore
        standin.wait_for(lambda: not stamped(attached, "rc-w-1"), 5, "the outsider")
        standin.request("DELETE", f"{PODS}/rc-w-0")
        standin.wait_for(lambda: stamped(attached, "rc-w-1"), 5, "the outsider gone")
    finally:
        watch.stop()


def test_forbidden_feeds_leave_the_guard_off_and_the_webhook_ready(
    standin: StandIn, tmp_path: Path, policies: PolicySet
) -> None:
    standin.create(PODS, pod("rc-w-0"))
    standin.fault(403, verb="list", plural="pods", count=1000)
    standin.fault(403, verb="list", plural="workloads", count=1000)
    attached, watch = watch_identities(policies, kubeconfig=standin.kubeconfig(tmp_path / "kubeconfig"))
    assert watch is not None
    watch.start()
    try:
        assert watch.wait(2.0) and watch.synced()
        assert stamped(attached, "rc-w-1")  # as without the guard: logged, not unready
    finally:
        watch.stop()


def test_without_a_stamping_policy_there_is_no_watch() -> None:
    policies = PolicySet.load()
    assert watch_identities(policies) == (policies, None)
