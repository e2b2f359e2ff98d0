"""A write's answer and its watch echo, in either order: indexed once, nothing queued, and one
object kept (the watch's copy, which the informer caches too)."""

from __future__ import annotations

import copy
import typing as t

import pytest

from webhook.kube.api import Resource
from webhook.reconciler.world import World

Json = dict[str, t.Any]
TRAINERS = Resource("ml.example.com", "v1", "trainers", "Trainer")


def trainer() -> Json:
    return {"apiVersion": "ml.example.com/v1", "kind": "Trainer",
            "metadata": {"name": "t", "namespace": "ns", "uid": "t-uid", "resourceVersion": "1"}}  # fmt: skip


def workload(rv: str) -> Json:
    owner = {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "name": "t",
        "uid": "t-uid",
        "controller": True,
    }
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": "w",
            "namespace": "ns",
            "uid": "w-uid",
            "resourceVersion": rv,
            "ownerReferences": [owner],
        },
        "spec": {"controllerRef": {"apiGroup": "ml.example.com", "kind": "Trainer", "name": "t"}},
    }


def world() -> World:
    w = World()
    w.governed_changed(TRAINERS, None, trainer())
    return w


@pytest.mark.parametrize(
    "echo_first", [pytest.param(False, id="answer first"), pytest.param(True, id="echo first")]
)
def test_the_answer_and_its_echo_leave_one_object_and_queue_nothing(echo_first: bool) -> None:
    w = world()
    answer, echo = workload("7"), workload("7")
    w.writing.add(("Workload", "ns", "w"))
    if echo_first:
        assert w.scheduling_changed("Workload", None, echo) == set()
        w.put("Workload", answer)
    else:
        w.put("Workload", answer)
        assert w.scheduling_changed("Workload", None, echo) == set()
    w.writing.discard(("Workload", "ns", "w"))
    assert w.objects["Workload"][("ns", "w")] is echo
    assert w.workloads_by_ref[("ns", "ml.example.com", "Trainer", "t")] == {"w"}


def test_a_newer_version_from_the_watch_is_a_change() -> None:
    w = world()
    w.put("Workload", workload("7"))
    newer = copy.deepcopy(workload("8"))
    assert w.scheduling_changed("Workload", workload("7"), newer) == {(TRAINERS, "ns", "t")}
    assert w.objects["Workload"][("ns", "w")] is newer
