"""Which controllers hold pods back until others are ready: the start order of a workload.

This is the one seam ``wasp explain`` reads start order through (:func:`start_order`). Each
rule below is a controller's own behaviour (the upstream source is named beside it, as read
for /work/shared/notes/ecosystem-crds.md); once the policy format describes a controller's
start order (issue 26), :func:`start_order` should read that description instead of this
table, and nothing else in ``wasp explain`` changes.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

__all__ = ["StartOrder", "start_order"]

Obj = t.Mapping[str, t.Any]


@dataclass(frozen=True, slots=True)
class StartOrder:
    """``why``: what in the object sequences the start; ``fix``: how to start everything at once."""

    why: str
    fix: str


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[t.Any]:
    return value if isinstance(value, list) else []


def _jobset(obj: Obj) -> StartOrder | None:
    # jobset_types.go: StartupPolicy.startupPolicyOrder InOrder creates each replicated job once
    # the previous one is ready; ReplicatedJob.dependsOn waits for Ready or Complete.
    spec = _dict(obj.get("spec"))
    if _dict(spec.get("startupPolicy")).get("startupPolicyOrder") == "InOrder":
        return StartOrder(
            "spec.startupPolicy.startupPolicyOrder is InOrder: each replicated job is created only once the one "
            "before it is ready",
            "use startupPolicyOrder AnyOrder, or set minCount to the pods of the first replicated job",
        )
    for i, rjob in enumerate(_list(spec.get("replicatedJobs"))):
        for dep in _list(_dict(rjob).get("dependsOn")):
            return StartOrder(
                f"spec.replicatedJobs[{i}] ({_dict(rjob).get('name')}) dependsOn {_dict(dep).get('name')} "
                f"({_dict(dep).get('status')}): its Jobs are created only after that",
                "leave the dependent replicated jobs out of the gang (a gang per replicated job), or drop dependsOn",
            )
    return None


def _lws(obj: Obj) -> StartOrder | None:
    # leaderworkerset_types.go: startupPolicy LeaderReady creates the worker StatefulSet only
    # once the leader pod is ready.
    if _dict(obj.get("spec")).get("startupPolicy") == "LeaderReady":
        return StartOrder(
            "spec.startupPolicy is LeaderReady: workers are created only once the leader pod is ready",
            "use startupPolicy LeaderCreated",
        )
    return None


def _mpijob(obj: Obj) -> StartOrder | None:
    # mpi-operator v2beta1 types.go: launcherCreationPolicy WaitForWorkersReady creates the
    # launcher Job only once every worker is ready.
    if _dict(obj.get("spec")).get("launcherCreationPolicy") == "WaitForWorkersReady":
        return StartOrder(
            "spec.launcherCreationPolicy is WaitForWorkersReady: the launcher is created only once every worker "
            "is ready",
            "leave the launcher out of the gang, or use launcherCreationPolicy AtStartup",
        )
    return None


def _volcano(obj: Obj) -> StartOrder | None:
    # volcano batch/v1alpha1 job.go: TaskSpec.dependsOn creates a task's pods once the tasks
    # it names are running.
    for i, task in enumerate(_list(_dict(obj.get("spec")).get("tasks"))):
        names = _list(_dict(_dict(task).get("dependsOn")).get("name"))
        if names:
            return StartOrder(
                f"spec.tasks[{i}] ({_dict(task).get('name')}) dependsOn {', '.join(map(str, names))}: its pods are "
                "created only after those run",
                "leave the dependent tasks out of the gang, or drop dependsOn",
            )
    return None


_RULES: t.Final[dict[tuple[str, str], t.Callable[[Obj], StartOrder | None]]] = {
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("kubeflow.org", "MPIJob"): _mpijob,
    ("batch.volcano.sh", "Job"): _volcano,
}


def start_order(obj: Obj) -> StartOrder | None:
    """Why ``obj``'s controller creates some of its pods only after others are ready, or ``None``."""
    api_version = obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    rule = _RULES.get((group, str(obj.get("kind", ""))))
    return rule(obj) if rule is not None else None
