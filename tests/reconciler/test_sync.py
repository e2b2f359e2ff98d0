"""One sync in process, with a scripted API: the write paths the stand-in scenarios reach only
by timing (a 409 from a racing replica, a foreign object behind the 409, a closed fence)."""

from __future__ import annotations

import typing as t

import pytest

from webhook.kube.api import ApiException, Resource
from webhook.reconciler.controller import NotLeader, Options, Reconciler, _Exists
from webhook.reconciler.leader import Fence

from .worlds import policies, trainer

TRAINERS = Resource("ml.example.com", "v1", "trainers", "Trainer")
Json = dict[str, t.Any]


class ScriptedApi:
    """Answers creates like an apiserver; ``existing`` objects make a create answer 409."""

    def __init__(self, existing: t.Iterable[Json] = ()) -> None:
        self.client = None
        self.rv = 100
        self.existing = {(o["kind"], o["metadata"]["name"]): o for o in existing}
        self.calls: list[tuple[str, str]] = []

    def create(self, resource: Resource, namespace: str, body: Json) -> Json:
        self.calls.append(("create", body["metadata"]["name"]))
        key = (resource.kind, body["metadata"]["name"])
        if key in self.existing:
            raise ApiException(status=409, reason="AlreadyExists")
        self.rv += 1
        meta = {
            **body["metadata"],
            "namespace": namespace,
            "uid": f"uid-{self.rv}",
            "resourceVersion": str(self.rv),
        }
        return {**body, "metadata": meta}

    def get(self, resource: Resource, namespace: str, name: str) -> Json:
        self.calls.append(("get", name))
        return self.existing[(resource.kind, name)]

    def json_patch(self, *args: object) -> Json:
        raise AssertionError("no patch expected")


def reconciler(api: ScriptedApi, fence: Fence | None = None) -> Reconciler:
    r = Reconciler(t.cast(t.Any, api), policies(), fence or Fence(always_open=True), Options())
    r.events.publish = lambda obj, report: True  # type: ignore[method-assign]
    return r


def _key(r: Reconciler, obj: Json) -> t.Any:
    return next(iter(r.world.governed_changed(TRAINERS, None, obj)))


def test_a_409_from_a_racing_replica_reads_the_object_back_and_finishes_without_a_second_workload() -> None:
    obj = trainer(resourceVersion="1")
    first = reconciler(ScriptedApi())
    first.sync(_key(first, obj))  # what the other replica created
    theirs = [o for o in first.world.objects["Workload"].values()]
    api = ScriptedApi(theirs)
    r = reconciler(api)
    key = _key(r, obj)
    with pytest.raises(_Exists):
        r.sync(key)  # the create meets 409: read back; the worker plans the key again at once
    r.sync(key)
    assert [c for c in api.calls if c[0] == "create"][1:] == [
        ("create", next(iter(first.world.objects["PodGroup"].values()))["metadata"]["name"])
    ]
    assert len(r.world.objects["Workload"]) == 1 and len(r.world.objects["PodGroup"]) == 1


def test_a_foreign_object_behind_a_409_is_reported_not_changed() -> None:
    obj = trainer(resourceVersion="1")
    probe = reconciler(ScriptedApi())
    probe.sync(_key(probe, obj))
    name = next(iter(probe.world.objects["Workload"]))[1]
    foreign = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
               "metadata": {"name": name, "namespace": "ml", "uid": "other", "resourceVersion": "7"}, "spec": {}}  # fmt: skip
    api = ScriptedApi([foreign])
    r = reconciler(api)
    reports: list[str] = []
    r.events.publish = lambda o, report: reports.append(report.reason) or True  # type: ignore[method-assign]
    key = _key(r, obj)
    with pytest.raises(_Exists):
        r.sync(key)
    r.sync(key)
    assert reports == ["NameTaken"]
    assert [c[0] for c in api.calls] == ["create", "get"]  # nothing else was written


def test_a_closed_fence_stops_the_write_before_it_is_sent() -> None:
    api = ScriptedApi()
    r = reconciler(api, Fence(renew_deadline=10))  # a follower: never renewed
    with pytest.raises(NotLeader):
        r.sync(_key(r, trainer(resourceVersion="1")))
    assert api.calls == []
