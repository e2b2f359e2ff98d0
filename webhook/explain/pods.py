"""Findings about a workload's pods as they are: grouped or not, by whom placed, in which gangs.

Each rule reads the pods :mod:`webhook.explain.selection` picked; a PodGroup that does not
exist is judged by :func:`webhook.governed.drift.judge_pod`, as ``wasp audit`` judges it.
"""

from __future__ import annotations

import collections
import typing as t

from webhook.explain.findings import Finding
from webhook.explain.tree import active, group_of
from webhook.governed import foreign_gangs
from webhook.governed.drift import judge_pod
from webhook.governed.reconcile_model import meta, string
from webhook.governed.stamping import NOT_STAMPED

__all__ = ["foreign_schedulers", "grouping", "missing_groups", "names", "second_gangs"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
_SHOWN: t.Final = 5  # pod names listed in one evidence line
DEFAULT_SCHEDULER: t.Final = "default-scheduler"


def names(pods: t.Sequence[Obj]) -> str:
    shown = sorted(string(meta(p).get("name")) for p in pods)
    more = f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else ""
    return ", ".join(shown[:_SHOWN]) + more


def missing_groups(pods: t.Sequence[Obj], exists: t.Callable[[str, str], bool], compiled: t.Container[str],
                   namespace: str) -> list[Finding]:  # fmt: skip
    """Pods naming a PodGroup that does not exist and that is none of the workload's own
    (a missing own group is ``no-podgroup``/``no-workload``), one finding per name."""
    by_group: dict[str, list[Obj]] = collections.defaultdict(list)
    for pod in pods:
        if active(pod) and group_of(pod) not in compiled and judge_pod(pod, exists):
            by_group[group_of(pod)].append(pod)
    ref_of = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "namespace": namespace}
    return [
        Finding(
            "podgroup-missing",
            {**ref_of, "name": name},
            f"{len(members)} pod(s) name PodGroup {name}, which does not exist: they wait for it forever",
            (f"pods: {names(members)}", f"PodGroup {name} is not among the groups the workload compiles to"),
            "correct spec.schedulingGroup.podGroupName in the pod template (or remove it and let wasp stamp "
            "the pods), then recreate the pods",
            {"podGroup": name, "pods": len(members)},
        )  # fmt: skip
        for name, members in sorted(by_group.items())
    ]


def grouping(pods: t.Sequence[Obj], compiled: t.Container[str], exists: t.Callable[[str, str], bool],
             owner: Json, reasons: t.Sequence[str] = ()) -> list[Finding]:  # fmt: skip
    """A half-grouped gang: active pods without a ``schedulingGroup`` (not left out on
    purpose) beside the workload's groups, or in a group that is another workload's;
    ``reasons``: what the reconciler's plan says about it (``StartedWithoutGroups``)."""
    outside = [p for p in pods if active(p) and not group_of(p) and NOT_STAMPED not in _annotations(p)]
    other = [p for p in pods if active(p) and group_of(p) and group_of(p) not in compiled
             and exists(string(meta(p).get("namespace")), group_of(p))]  # fmt: skip
    if not outside and not other and not reasons:
        return []
    evidence = [*reasons]
    if outside:
        evidence.append(f"{len(outside)} pod(s) have no spec.schedulingGroup: {names(outside)}")
    if other:
        groups = ", ".join(sorted({group_of(p) for p in other}))
        evidence.append(
            f"{len(other)} pod(s) are in PodGroup(s) of another workload ({groups}): {names(other)}"
        )
    return [
        Finding(
            "half-grouped",
            owner,
            "some pods of the workload are outside its gang: the gang cannot count them, and wasp stamps no more "
            "pods of a workload that already runs ungrouped (docs/decisions.md D10)",
            tuple(evidence),
            "delete the workload and create it again once wasp's webhook and reconciler run (every pod is then "
            "stamped); pods cannot join a group later (spec.schedulingGroup is immutable)",
            {"ungrouped": len(outside), "inOtherGroups": len(other)},
        )  # fmt: skip
    ]


def _annotations(pod: Obj) -> t.Mapping[str, t.Any]:
    annotations = meta(pod).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def foreign_schedulers(pods: t.Sequence[Obj], schedulers: t.Collection[str], owner: Json) -> list[Finding]:
    """Pods whose ``spec.schedulerName`` is none of the schedulers that implement WAS."""
    by_name: dict[str, list[Obj]] = collections.defaultdict(list)
    for pod in pods:
        spec = pod.get("spec")
        name = string(spec.get("schedulerName")) if isinstance(spec, dict) else ""
        name = name or DEFAULT_SCHEDULER
        if active(pod) and name not in schedulers:
            by_name[name].append(pod)
    return [
        Finding(
            "foreign-scheduler",
            owner,
            f"{len(members)} pod(s) are placed by scheduler {name!r}, which does not implement workload-aware "
            "scheduling: their PodGroup is enforced by nobody",
            (
                f"spec.schedulerName {name!r} on: {names(members)}",
                f"schedulers that implement it: {', '.join(sorted(schedulers))} (--was-scheduler)",
            ),
            "set schedulerName to a kube-scheduler profile that runs the gang plugin (default-scheduler), or "
            "name that profile with --was-scheduler",
            {"schedulerName": name, "pods": len(members)},
        )  # fmt: skip
        for name, members in sorted(by_name.items())
    ]


def second_gangs(pods: t.Sequence[Obj], owner: Json) -> list[Finding]:
    """Pods that also belong to a Volcano, scheduler-plugins or Kueue gang."""
    by_gang: dict[tuple[foreign_gangs.System, str], list[Obj]] = collections.defaultdict(list)
    for pod in pods:
        if active(pod):
            for system, name in foreign_gangs.memberships(pod):
                by_gang[(system, name)].append(pod)
    return [
        Finding(
            "second-gang-system",
            owner,
            f"{len(members)} pod(s) also belong to {system} gang {name}: two gang systems hold the same pods",
            (
                f"{foreign_gangs.MEMBERSHIP[system][0][:-1]} {foreign_gangs.MEMBERSHIP[system][1]}={name} on: "
                f"{names(members)}",
            ),
            f"keep one gang system: remove the {system} membership from the pod template, or wasp's blocks",
            {"system": system, "gang": name, "pods": len(members)},
        )  # fmt: skip
        for (system, name), members in sorted(by_gang.items())
    ]
