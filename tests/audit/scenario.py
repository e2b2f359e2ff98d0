"""The audited cluster: valid, invalid and drifted governed objects, foreign gangs of the three
systems, pods naming a PodGroup that does not exist; built on the stand-in through its API."""

from __future__ import annotations

import copy
import typing as t

from tests.reconciler.worlds import policies, trainer
from webhook.governed.workloads import compile_object

from .conftest import Cluster

Json = dict[str, t.Any]
TRAINERS = "/apis/ml.example.com/v1/namespaces/{ns}/trainers"
WORKLOADS = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/workloads"
POD_GROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"
PODS = "/api/v1/namespaces/{ns}/pods"
VOLCANO = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
COSCHEDULING = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"


def governed(cluster: Cluster, name: str, *, ns: str = "ml", objects: bool = True, min_count: int | None = None,
             edit: t.Callable[[Json, list[Json]], None] | None = None) -> tuple[Json, list[Json]]:  # fmt: skip
    """A Trainer and (``objects``) the scheduling objects wasp compiles for it, after ``edit``."""
    obj = cluster.create(TRAINERS.format(ns=ns), trainer(name, namespace=ns, min_count=min_count))
    if not objects:
        return obj, []
    policy = policies().for_kind("ml.example.com/v1", "Trainer")
    assert policy is not None
    compiled = compile_object(policy, obj, uid=obj["metadata"]["uid"])
    workload, groups = copy.deepcopy(compiled.workload), copy.deepcopy(compiled.pod_groups)
    if edit is not None:
        edit(workload, groups)
    made = [cluster.create(WORKLOADS.format(ns=ns), workload)]
    made += [cluster.create(POD_GROUPS.format(ns=ns), g) for g in groups]
    return obj, made


def pod(cluster: Cluster, name: str, *, ns: str = "ml", group: str = "", labels: Json | None = None,
        annotations: Json | None = None) -> Json:  # fmt: skip
    spec: Json = {"containers": [{"name": "c", "image": "x"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    meta: Json = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    return cluster.create(PODS.format(ns=ns), {"metadata": meta, "spec": spec})


def drift(workload: Json, groups: list[Json]) -> None:
    groups[0]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 99


def foreign_workload(workload: Json, groups: list[Json]) -> None:
    """The Workload's name is held by an object nobody controls; no groups."""
    workload["metadata"].pop("ownerReferences", None)
    groups.clear()


def twice(workload: Json, groups: list[Json]) -> None:
    """Two PodGroups for the same template, both controlled by the object."""
    second = copy.deepcopy(groups[0])
    second["metadata"]["name"] += "-copy"
    groups.append(second)


def build(cluster: Cluster) -> dict[str, Json]:
    """Every object of the scenario by a short name (the test ids)."""
    for ns in ("ml", "other"):
        cluster.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    made: dict[str, Json] = {}
    made["good"], objects = governed(cluster, "good")
    good_group = objects[1]
    made["invalid"], _ = governed(cluster, "invalid", objects=False, min_count=-3)
    made["drifted"], drifted = governed(cluster, "drifted", edit=drift)
    made["drifted-group"] = drifted[1]
    made["missing"], _ = governed(cluster, "missing", objects=False)
    made["taken"], _ = governed(cluster, "taken", edit=foreign_workload)
    # Objects wasp made for a Trainer that is gone (the garbage collector has not run).
    _, left = governed(cluster, "deleted")
    cluster.standin.request("DELETE", TRAINERS.format(ns="ml") + "/deleted")
    made["deleted-workload"] = left[0]
    made["several"], _ = governed(cluster, "several", edit=twice)
    # An object the good Trainer controls that its compiled tree does not name.
    extra = copy.deepcopy(good_group)
    extra["metadata"] = {**extra["metadata"], "name": "good-leftover"}
    extra["spec"]["workloadRef"]["templateName"] = "removed-template"  # not in the compiled tree
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        extra["metadata"].pop(key, None)
    made["extra"] = cluster.create(POD_GROUPS.format(ns="ml"), extra)
    made["other-invalid"], _ = governed(cluster, "elsewhere", ns="other", objects=False, min_count=-3)
    made["orphan-pod"] = pod(cluster, "orphan", group="no-such-group")
    made["stamped-pod"] = pod(cluster, "stamped", group=good_group["metadata"]["name"])
    cluster.create(
        VOLCANO.format(ns="ml"), {"metadata": {"name": "vc"}, "spec": {"minMember": 3, "queue": "q1"}}
    )
    cluster.create(
        COSCHEDULING.format(ns="ml"),
        {"metadata": {"name": "co"}, "spec": {"minMember": 2, "scheduleTimeoutSeconds": 60}},
    )
    pod(cluster, "vc-0", annotations={"scheduling.k8s.io/group-name": "vc"})
    # Both gangs: a Volcano member that also names a native PodGroup.
    pod(
        cluster,
        "vc-1",
        annotations={"scheduling.k8s.io/group-name": "vc"},
        group=good_group["metadata"]["name"],
    )
    pod(cluster, "co-0", labels={"scheduling.x-k8s.io/pod-group": "co"})
    for i in range(2):
        pod(cluster, f"kq-{i}", labels={"kueue.x-k8s.io/pod-group-name": "kq"},
            annotations={"kueue.x-k8s.io/pod-group-total-count": "2"})  # fmt: skip
    return made
