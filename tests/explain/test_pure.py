"""The pure parts of wasp explain, as tables: quantities, the capacity estimate's filters,
start order per controller (with controls), what TYPE names, how a target is resolved."""

from __future__ import annotations

import typing as t
from decimal import Decimal

import pytest

from tests.explain.world import policies
from webhook.explain.capacity import Shape, add_usage, fit, parse_quantity, pod_requests
from webhook.explain.diagnose import explain
from webhook.explain.kinds import parse_type
from webhook.explain.selection import resolve
from webhook.explain.sequencing import start_order
from webhook.explain.snapshot import Snapshot
from webhook.governed.schedulability import held_back
from webhook.policy import PolicySet
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths

Json = dict[str, t.Any]


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", Decimal("0.5")), ("2", Decimal(2)), ("1Gi", Decimal(2**30)), ("1k", Decimal(1000)),
     ("1e3", Decimal(1000)), ("0.5", Decimal("0.5")), (4, Decimal(4)), ("", None), ("x", None), ("-1", None),
     (True, None)],
    ids=["milli", "plain", "binary", "decimal-suffix", "exponent", "fraction", "int", "empty", "junk", "negative", "bool"],
)  # fmt: skip
def test_quantities(text: object, value: Decimal | None) -> None:
    assert parse_quantity(text) == value


def test_a_pods_request_is_its_containers_or_its_largest_init_container_plus_overhead() -> None:
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {"requests": {"cpu": "1"}}}],
                    "initContainers": [{"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
                    "overhead": {"cpu": "100m"}}}  # fmt: skip
    assert pod_requests(pod) == {"cpu": Decimal("3.1"), "memory": Decimal(2**30)}


def _node(name: str, *, cpu: str = "8", taints: list[Json] | None = None, labels: Json | None = None,
          cordoned: bool = False) -> Json:  # fmt: skip
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or [], "unschedulable": cordoned},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}  # fmt: skip


TAINT: t.Final = {"key": "gpu", "value": "a100", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("node", "tolerations", "selector", "fits"),
    [
        pytest.param(_node("n"), (), {}, 4, id="free"),
        pytest.param(_node("n", cordoned=True), (), {}, 0, id="cordoned"),
        pytest.param(_node("n", taints=[TAINT]), (), {}, 0, id="tainted"),
        pytest.param(_node("n", taints=[TAINT]), ({"key": "gpu", "operator": "Exists"},), {}, 4, id="tolerated-exists"),
        pytest.param(_node("n", taints=[TAINT]), ({"key": "gpu", "value": "a100"},), {}, 4, id="tolerated-equal"),
        pytest.param(_node("n", taints=[TAINT]), ({"key": "gpu", "value": "h100"},), {}, 0, id="other-value"),
        pytest.param(_node("n", taints=[{**TAINT, "effect": "PreferNoSchedule"}]), (), {}, 4, id="prefer-is-no-filter"),
        pytest.param(_node("n", labels={"pool": "a"}), (), {"pool": "a"}, 4, id="selector-matches"),
        pytest.param(_node("n"), (), {"pool": "a"}, 0, id="selector-misses"),
    ],
)  # fmt: skip
def test_the_filters(node: Json, tolerations: tuple[Json, ...], selector: dict[str, str], fits: int) -> None:
    shape = Shape({"cpu": Decimal(2)}, selector, tolerations)
    assert fit([node], {}, shape, 4).total == fits


def test_free_room_subtracts_bound_unfinished_pods_and_a_domain_must_hold_the_gang() -> None:
    nodes = [_node(f"n{i}", labels={"rack": "a" if i < 2 else "b"}) for i in range(3)]
    usage: dict[str, t.Any] = {}
    bound = {
        "spec": {"nodeName": "n0", "containers": [{"resources": {"requests": {"cpu": "6"}}}]},
        "status": {},
    }
    done = {"spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "8"}}}]},
            "status": {"phase": "Succeeded"}}  # fmt: skip
    add_usage(usage, [bound, done])
    estimate = fit(nodes, usage, Shape({"cpu": Decimal(2)}, {}, ()), 6, "rack")
    assert (estimate.total, estimate.best_domain, estimate.best_fit, estimate.enough) == (9, "a", 5, False)
    assert fit(nodes, usage, Shape({"cpu": Decimal(2)}, {}, ()), 5, "rack").enough


_INTEGRATIONS: t.Final = PolicySet.load(integration_paths(KNOWN_INTEGRATIONS))


def _rjob(name: str, pods: int = 2, **extra: t.Any) -> Json:
    return {
        "name": name,
        "replicas": 1,
        "template": {"spec": {"parallelism": pods, "completions": pods}},
        **extra,
    }


def _jobset(**spec: t.Any) -> Json:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ns"},
            "spec": {"replicatedJobs": [_rjob("a"), _rjob("b")], **spec}}  # fmt: skip


_TASK: t.Final = {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
_WORKER: t.Final = {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}


# Read through the shipped integrations' startOrder entries: the same description admission
# judges gangs by (one path), so these rows are the policies' controls as much as explain's.
@pytest.mark.parametrize(
    ("obj", "first"),
    [
        pytest.param(_jobset(startupPolicy={"startupPolicyOrder": "InOrder"}), 2, id="jobset-inorder"),
        pytest.param({**_jobset(), "spec": {"replicatedJobs": [_rjob("a"), _rjob("b", dependsOn=[{"name": "a", "status": "Ready"}])]}},
                     2, id="jobset-dependson"),
        pytest.param(_jobset(startupPolicy={"startupPolicyOrder": "AnyOrder"}), None, id="jobset-anyorder"),
        pytest.param(_jobset(), None, id="jobset-no-order"),
        pytest.param({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
                      "spec": {"startupPolicy": "LeaderReady", "leaderWorkerTemplate": {"size": 4}}}, 1, id="lws-leaderready"),
        pytest.param({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
                      "spec": {"startupPolicy": "LeaderCreated", "leaderWorkerTemplate": {"size": 4}}}, None, id="lws-leadercreated"),
        pytest.param({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
                      "spec": {"launcherCreationPolicy": "WaitForWorkersReady",
                               "mpiReplicaSpecs": {"Launcher": {**_WORKER, "replicas": 1}, "Worker": _WORKER}}}, 2, id="mpijob-wait"),
        pytest.param({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
                      "spec": {"launcherCreationPolicy": "AtStartup",
                               "mpiReplicaSpecs": {"Launcher": {**_WORKER, "replicas": 1}, "Worker": _WORKER}}}, None, id="mpijob-atstartup"),
        pytest.param({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
                      "spec": {"tasks": [{"name": "a", **_TASK}, {"name": "b", **_TASK, "dependsOn": {"name": ["a"]}}]}},
                     2, id="volcano-dependson"),
        pytest.param({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
                      "spec": {"tasks": [{"name": "a", **_TASK}, {"name": "b", **_TASK}]}}, None, id="volcano-no-order"),
    ],
)  # fmt: skip
def test_start_order(obj: Json, first: int | None) -> None:
    policy = _INTEGRATIONS.for_object(obj)
    assert policy is not None
    order = start_order(policy, obj)
    assert (order is not None) == (first is not None)
    if first is not None:
        assert {h.first for h in held_back(policy, obj)} == {first}


@pytest.mark.parametrize(
    ("text", "kind"),
    [("trainer", "Trainer"), ("trainers", "Trainer"), ("Trainer", "Trainer"), ("trainers.ml.example.com", "Trainer"),
     ("jobset", "JobSet"), ("po", "Pod"), ("pg", "PodGroup"), ("workload", "Workload"), ("job", "Job"),
     ("trainers.other.io", None), ("deployment", None)],
)  # fmt: skip
def test_what_type_names(text: str, kind: str | None) -> None:
    spec = parse_type(text, policies())
    assert (spec.kind if spec else None) == kind


def test_a_pod_a_podgroup_and_a_workload_lead_to_their_governed_object() -> None:
    trainer = {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "metadata": {"name": "t", "uid": "u"}}
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"controllerRef": {"apiGroup": "ml.example.com", "kind": "Trainer", "name": "t"}}}  # fmt: skip
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
             "spec": {"workloadRef": {"workloadName": "w"}}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "name": "t", "uid": "u", "controller": True}]}}  # fmt: skip
    store = {o["kind"]: o for o in (trainer, workload, group)}

    def lookup(api_version: str, kind: str, name: str) -> Json | None:
        return store.get(kind) if store.get(kind, {}).get("metadata", {}).get("name") == name else None

    for start, trail in ((pod, ["Pod p", "Trainer t"]), (group, ["PodGroup g", "Workload w", "Trainer t"]),
                         (workload, ["Workload w", "Trainer t"]), (trainer, ["Trainer t"])):  # fmt: skip
        assert resolve(start, policies(), lookup) == (trainer, trail)
    orphan = {**group, "spec": {"workloadRef": {"workloadName": "gone"}}}
    assert resolve(orphan, policies(), lookup) == (None, ["PodGroup g", "Workload gone (not found)"])


def test_a_cronjob_is_explained_through_its_jobs() -> None:
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "ml", "uid": "u"},
               "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}  # fmt: skip
    answer = explain(Snapshot(cronjob, ["CronJob nightly"]), policies())
    assert [(f.code, f.fix) for f in answer.findings] == [
        ("not-governed", "explain one of its Jobs: wasp explain job/NAME")
    ]
    assert (answer.tree, answer.exit_code) == (None, 1)
