"""One small cluster per finding (and controls where the gang runs), written through a Sink.

Each scenario returns what to explain (``TYPE/NAME``); :data:`SCENARIOS` says what must come
out: the finding codes (exactly), evidence the findings' ``detail`` must hold, the exit code,
and what the stand-in must do differently (gates off, faults).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from tests.explain.world import Sink, compiled

Json = dict[str, t.Any]
NS: t.Final = "ml"
SHAPE: t.Final = {"cpu": "8", "nvidia.com/gpu": "1"}


def trainer(name: str, *, workers: int = 4, min_count: int | None = None, rack: bool = False) -> Json:
    gang: Json = {} if min_count is None else {"minCount": min_count}
    scheduling: Json = {"schedulingPolicy": {"gang": gang}}
    if rack:
        scheduling["schedulingConstraints"] = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    return {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "metadata": {"name": name, "namespace": NS},
            "spec": {"workers": workers, "scheduling": scheduling,
                     "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}}  # fmt: skip


def jobset(name: str, *, replicas: int = 3, parallelism: int = 2, **spec: t.Any) -> Json:
    job = {"parallelism": parallelism, "completions": parallelism,
           "template": {"spec": {"containers": [{"name": "w", "image": "x"}], "restartPolicy": "Never"}}}  # fmt: skip
    rjobs = [{"name": "leader", "replicas": 1, "template": {"spec": job}},
             {"name": "workers", "replicas": replicas - 1, "template": {"spec": job}}]  # fmt: skip
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": NS,
                         "annotations": {"scheduling.wasp.dev/blocks": '{"schedulingPolicy": {"gang": {}}}'}},
            "spec": {"replicatedJobs": rjobs, **spec}}  # fmt: skip


def job(name: str, *, pods: int = 4) -> Json:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"parallelism": pods, "completions": pods, "completionMode": "Indexed",
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": pods}}},
                     "template": {"spec": {"containers": [{"name": "w", "image": "x"}], "restartPolicy": "Never"}}}}  # fmt: skip


def job_labels(obj: Json) -> Json:
    return {"batch.kubernetes.io/controller-uid": obj["metadata"]["uid"]}


def service(name: str, *, prefill: int = 2, decode: int = 4) -> Json:
    role = {"scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {"spec": {}}}
    return {"apiVersion": "serving.example.com/v1", "kind": "InferenceService", "metadata": {"name": name, "namespace": NS},
            "spec": {"scheduling": {"schedulingPolicy": {"gang": {}}},
                     "roles": [{"name": "prefill", "replicas": prefill, **role}, {"name": "decode", "replicas": decode, **role}]}}  # fmt: skip


def objects_of(sink: Sink, obj: Json, *, groups: bool = True) -> list[Json]:
    """The Workload and (``groups``) (Composite)PodGroups wasp compiles for ``obj``, as the reconciler makes them."""
    made = compiled(obj)
    out = [sink.create(made.workload)]
    if groups:
        out += [sink.create(g) for g in [*made.composite_pod_groups, *made.pod_groups]]
    return out


def group_name(obj: Json) -> str:
    return str(compiled(obj).pod_groups[0]["metadata"]["name"])


def pod(sink: Sink, name: str, owner: Json, *, group: str = "", node: str = "", phase: str = "Pending",
        labels: Json | None = None, requests: Json | None = None, scheduler: str = "", controlled: bool = True,
        **spec: t.Any) -> Json:  # fmt: skip
    body: Json = {
        "containers": [{"name": "w", "image": "x", "resources": {"requests": requests or {"cpu": "1"}}}],
        **spec,
    }
    if group:
        body["schedulingGroup"] = {"podGroupName": group}
    if node:
        body["nodeName"] = node
    if scheduler:
        body["schedulerName"] = scheduler
    meta: Json = {"name": name, "namespace": NS, "labels": labels or {}}
    if controlled:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                    "controller": True}]  # fmt: skip
    return sink.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body,
                        "status": {"phase": phase}})  # fmt: skip


def pods(sink: Sink, owner: Json, n: int, *, running: bool = False, **kwargs: t.Any) -> list[Json]:
    name = owner["metadata"]["name"]
    made = []
    for i in range(n):
        extra = {"node": f"node-{i % 2}", "phase": "Running"} if running else {}
        made.append(pod(sink, f"{name}-{i}", owner, **{**extra, **kwargs}))
    return made


def event(sink: Sink, reason: str, about: Json, message: str, count: int = 1) -> Json:
    meta = about["metadata"]
    return sink.create({"apiVersion": "v1", "kind": "Event",
                        "metadata": {"name": f"{meta['name']}.{reason.lower()}", "namespace": NS},
                        "involvedObject": {"apiVersion": about["apiVersion"], "kind": about["kind"],
                                           "name": meta["name"], "namespace": NS, "uid": meta.get("uid", "")},
                        "reason": reason, "message": message, "type": "Warning", "count": count})  # fmt: skip


def node(sink: Sink, name: str, *, cpu: str = "32", gpu: str = "0", rack: str = "", taints: list[Json] | None = None,
         labels: Json | None = None) -> Json:  # fmt: skip
    all_labels = {**({"topology.kubernetes.io/rack": rack} if rack else {}), **(labels or {})}
    return sink.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": all_labels},
                        "spec": {"taints": taints or []},
                        "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110",
                                                   "nvidia.com/gpu": gpu}}})  # fmt: skip


def big_nodes(sink: Sink, n: int = 2) -> None:
    for i in range(n):
        node(sink, f"node-{i}")


# -- the scenarios ------------------------------------------------------------------------------


def running_trainer(sink: Sink, **pod_fields: t.Any) -> str:
    """A Trainer whose objects exist and whose 4 pods run (with ``pod_fields``)."""
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    pods(sink, obj, 4, running=True, group=group_name(obj), **pod_fields)
    return "trainer/resnet"


def runs(sink: Sink) -> str:
    big_nodes(sink)
    return running_trainer(sink)


def runs_jobset(sink: Sink) -> str:
    big_nodes(sink)
    obj = sink.create(jobset("train"))
    objects_of(sink, obj)
    pods(sink, obj, 6, running=True, group=group_name(obj), controlled=False,
         labels={"jobset.sigs.k8s.io/jobset-name": "train"})  # fmt: skip
    return "jobset/train"


def completed(sink: Sink) -> str:
    return running_trainer(sink, phase="Succeeded")


def runs_job(sink: Sink) -> str:
    obj = sink.create(job("train"))
    objects_of(sink, obj)
    pods(sink, obj, 4, running=True, group=group_name(obj), labels=job_labels(obj))
    return "job/train"


def job_no_workload(sink: Sink) -> str:
    obj = sink.create(job("train"))
    pods(sink, obj, 4, group=group_name(obj), labels=job_labels(obj))
    return "job/train"


def never_forms(sink: Sink) -> str:
    # Admitted before the schedulability rules (or in warn mode): 4 pods at once at most,
    # completions 2, so the Job controller never runs more than 2 of the gang's 4.
    spec = {**job("train")["spec"], "completions": 2, "completionMode": "NonIndexed"}
    obj = sink.create({**job("train"), "spec": spec})
    objects_of(sink, obj)
    pods(sink, obj, 2, group=group_name(obj), labels=job_labels(obj))
    return "job/train"


def composite(sink: Sink, decode: int) -> str:
    obj = sink.create(service("llama"))
    objects_of(sink, obj)
    prefill, dec = (g["metadata"]["name"] for g in compiled(obj).pod_groups)
    for i in range(2):
        pod(sink, f"llama-prefill-{i}", obj, group=prefill, node="node-0", phase="Running")
    for i in range(decode):
        pod(sink, f"llama-decode-{i}", obj, group=dec, node="node-1", phase="Running")
    return "inferenceservice/llama"


def pending_trainer(sink: Sink, n: int = 4) -> str:
    """A Trainer whose objects exist and ``n`` of whose pods wait, unplaced."""
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    pods(sink, obj, n, group=group_name(obj))
    return "trainer/resnet"


def can_run(sink: Sink) -> str:
    big_nodes(sink)
    return pending_trainer(sink)


def no_workload(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    pods(sink, obj, 4, group=group_name(obj))
    return "trainer/resnet"


def no_podgroup(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj, groups=False)
    pods(sink, obj, 4, group=group_name(obj))
    return "trainer/resnet"


def name_taken(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    workload = compiled(obj).workload
    del workload["metadata"]["ownerReferences"]  # someone else's Workload holds the name
    sink.create(workload)
    pods(sink, obj, 4, group=group_name(obj))
    return "trainer/resnet"


def pods_not_created(sink: Sink) -> str:
    return pending_trainer(sink, 2)


def held_back(sink: Sink) -> str:
    obj = sink.create(jobset("train", startupPolicy={"startupPolicyOrder": "InOrder"}))
    objects_of(sink, obj)
    pods(
        sink,
        obj,
        2,
        group=group_name(obj),
        controlled=False,
        labels={"jobset.sigs.k8s.io/jobset-name": "train"},
    )
    return "jobset/train"


def failed_create(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    pods(sink, obj, 1, group=group_name(obj))
    event(
        sink,
        "FailedCreate",
        obj,
        'pods "resnet-1" is forbidden: exceeded quota: compute, requested: cpu=1',
        3,
    )
    return "trainer/resnet"


def failed_create_child(sink: Sink) -> str:
    obj = sink.create(jobset("train"))
    objects_of(sink, obj)
    child = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train-workers-0", "uid": "uid-job"},
    }
    event(
        sink,
        "FailedCreate",
        child,
        'Error creating: pods "train-workers-0-0" is forbidden: violates PodSecurity',
        2,
    )
    return "jobset/train"


def suspended(sink: Sink) -> str:
    obj = sink.create(jobset("train", suspend=True))
    objects_of(sink, obj)
    return "jobset/train"


def podgroup_missing(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    pods(sink, obj, 4, group="resnet-typo")
    return "pod/resnet-0"


def half_grouped(sink: Sink) -> str:
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    pods(sink, obj, 2, group=group_name(obj))
    for i in (2, 3):
        pod(sink, f"resnet-{i}", obj, node="node-0", phase="Running")
    return "trainer/resnet"


def foreign_scheduler(sink: Sink) -> str:
    return running_trainer(sink, scheduler="volcano")


def second_gang(sink: Sink) -> str:
    return running_trainer(sink, labels={"scheduling.x-k8s.io/pod-group": "resnet"})


def failed_scheduling(sink: Sink) -> str:
    big_nodes(sink)
    obj = sink.create(trainer("resnet"))
    objects_of(sink, obj)
    for p in pods(sink, obj, 4, group=group_name(obj)):
        event(
            sink,
            "FailedScheduling",
            p,
            "0/2 nodes are available: 2 node(s) had volume node affinity conflict.",
        )
    return "trainer/resnet"


def insufficient_capacity(sink: Sink) -> str:
    for rack, count in (("r1", 2), ("r2", 3), ("r3", 6)):
        for i in range(count):
            node(sink, f"{rack}-n{i}", cpu="9", gpu="1", rack=rack)
    node(
        sink,
        "tainted",
        cpu="64",
        gpu="8",
        rack="r1",
        taints=[{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
    )
    obj = sink.create(trainer("resnet", workers=8, rack=True))
    objects_of(sink, obj)
    pods(sink, obj, 8, group=group_name(obj), requests=SHAPE)
    return "trainer/resnet"


def capacity_unknown(sink: Sink) -> str:
    return pending_trainer(sink)  # no nodes in the dump; the stand-in answers 403 to listing them


@dataclass(frozen=True)
class Scenario:
    build: t.Callable[[Sink], str]
    codes: tuple[str, ...]
    exit_code: int
    detail: dict[str, Json] = field(default_factory=dict)  # code -> keys its detail must hold
    verdict: str = "blocked"
    gates_off: frozenset[str] = frozenset()
    forbid: tuple[str, ...] = ()  # plurals the stand-in answers 403 when listed


SCENARIOS: t.Final = {
    "runs": Scenario(runs, (), 0, verdict="runs"),
    "runs-jobset": Scenario(runs_jobset, (), 0, verdict="runs"),
    "can-run": Scenario(can_run, (), 0, verdict="can-run"),
    "completed": Scenario(completed, (), 0, verdict="runs"),
    "runs-composite": Scenario(lambda sink: composite(sink, 4), (), 0, verdict="runs"),
    "pods-not-created-composite": Scenario(lambda sink: composite(sink, 2), ("pods-not-created",), 1),
    "runs-job": Scenario(runs_job, (), 0, verdict="runs"),
    "no-workload-job": Scenario(job_no_workload, ("no-workload",), 1),
    "no-workload": Scenario(no_workload, ("no-workload",), 1),
    "no-podgroup": Scenario(no_podgroup, ("no-podgroup",), 1),
    "reconcile-blocked": Scenario(
        name_taken, ("reconcile-blocked",), 1, {"reconcile-blocked": {"reason": "NameTaken"}}
    ),
    "pods-not-created": Scenario(
        pods_not_created, ("pods-not-created",), 1, {"pods-not-created": {}}
    ),  # fmt: skip
    "held-back-sequenced": Scenario(held_back, ("held-back-sequenced",), 1),
    "never-forms": Scenario(
        never_forms,
        ("never-forms", "pods-not-created"),
        1,
        {
            "never-forms": {
                "errors": [
                    {
                        "type": "FieldValueInvalid",
                        "field": "spec.scheduling.schedulingPolicy.gang.minCount",
                        "rule": "job-concurrency",
                    }
                ]
            }
        },
    ),  # fmt: skip
    "failed-create": Scenario(failed_create, ("failed-create",), 1, {"failed-create": {"events": 3}}),
    "failed-create-child": Scenario(
        failed_create_child, ("failed-create",), 1, {"failed-create": {"events": 2}}
    ),
    "suspended": Scenario(suspended, ("suspended",), 1, {"suspended": {"path": "spec.suspend", "queue": ""}}),
    "podgroup-missing": Scenario(
        podgroup_missing,
        ("podgroup-missing",),
        1,
        {"podgroup-missing": {"podGroup": "resnet-typo", "pods": 4}},
    ),  # fmt: skip
    "half-grouped": Scenario(
        half_grouped, ("half-grouped",), 1, {"half-grouped": {"ungrouped": 2, "inOtherGroups": 0}}
    ),  # fmt: skip
    "schedulinggroup-dropped": Scenario(
        no_workload,
        ("schedulinggroup-dropped",),
        1,
        {"schedulinggroup-dropped": {"ungrouped": 4}},
        gates_off=frozenset({"GenericWorkload"}),
    ),  # fmt: skip
    "foreign-scheduler": Scenario(
        foreign_scheduler,
        ("foreign-scheduler",),
        0,
        {"foreign-scheduler": {"schedulerName": "volcano", "pods": 4}},
        "runs",
    ),  # fmt: skip
    "second-gang-system": Scenario(
        second_gang,
        ("second-gang-system",),
        0,
        {"second-gang-system": {"system": "scheduler-plugins", "gang": "resnet", "pods": 4}},
        "runs",
    ),  # fmt: skip
    "failed-scheduling": Scenario(failed_scheduling, ("failed-scheduling",), 1),
    "insufficient-capacity": Scenario(
        insufficient_capacity,
        ("insufficient-capacity",),
        1,
        {
            "insufficient-capacity": {
                "needed": 8,
                "fitTotal": 11,
                "bestDomain": "r3",
                "bestDomainFit": 6,
                "topologyKey": "topology.kubernetes.io/rack",
            }
        },
    ),  # fmt: skip
    "capacity-unknown": Scenario(
        capacity_unknown, ("capacity-unknown",), 0, verdict="can-run", forbid=("nodes",)
    ),  # fmt: skip
}
