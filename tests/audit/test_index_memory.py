"""``wasp audit`` of one namespace with many scheduling objects holds only a page's worth of them
in memory (the rest is in its on-disk index, webhook/audit/index.py), and still finds what
the whole namespace says: drift, missing objects, pods without groups, orphans, pods naming a
PodGroup that does not exist."""

from __future__ import annotations

import typing as t

import pytest

from webhook.reconciler import world

from . import scenario
from .conftest import Cluster, start

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
NS = "many"
TRAINERS = 30  # in sync: a Workload and a PodGroup each


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[Cluster]:
    for cluster in start(tmp_path_factory.mktemp("many")):
        cluster.create("/api/v1/namespaces", {"metadata": {"name": NS}})
        for i in range(TRAINERS):
            scenario.governed(cluster, f"t{i}", ns=NS)
        scenario.governed(cluster, "drifted", ns=NS, edit=scenario.drift)
        scenario.governed(cluster, "missing", ns=NS, objects=False)
        started, _ = scenario.governed(cluster, "started", ns=NS, objects=False)
        owner = {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "name": "started",
                 "uid": started["metadata"]["uid"], "controller": True}  # fmt: skip
        cluster.create(scenario.PODS.format(ns=NS), {"metadata": {"name": "started-0", "ownerReferences": [owner]},
                       "spec": {"containers": [{"name": "c", "image": "x"}]}})  # fmt: skip
        scenario.governed(cluster, "deleted", ns=NS)
        cluster.standin.request("DELETE", scenario.TRAINERS.format(ns=NS) + "/deleted")
        scenario.pod(cluster, "lost", ns=NS, group="no-such-group")
        yield cluster


def about(f: Json) -> tuple[str, str, str]:
    """(type, the governed object it is about or found by, path)."""
    name = (f["owner"] or {}).get("name") or f["object"]["name"]
    if f["type"] == "Orphaned":
        name = "orphan of " + f["object"]["kind"]
    return f["type"], name, f["path"]


EXPECTED: t.Final = {
    ("MinCountDrift", "drifted", "spec.schedulingPolicy.gang.minCount"),
    ("Missing", "missing", ""),
    ("StartedWithoutGroups", "started", ""),
    ("Orphaned", "orphan of Workload", ""),
    ("Orphaned", "orphan of PodGroup", ""),
    ("PodGroupNotFound", "lost", "spec.schedulingGroup.podGroupName"),
}


@pytest.mark.parametrize(
    "chunk",
    [pytest.param(4, id="pages-of-4"), pytest.param(7, id="pages-of-7"), pytest.param(500, id="one-page")],
)
def test_a_namespace_is_judged_whole_while_a_page_of_scheduling_objects_is_held(
    many: Cluster, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[world.World] = []
    init = world.World.__init__

    def recorded(self: world.World, *args: t.Any, **kwargs: t.Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(world.World, "__init__", recorded)
    code, doc = many.audit("-n", NS, "--chunk-size", str(chunk))
    assert {about(f) for f in doc["findings"]} == EXPECTED and code == 1
    total = 2 * (TRAINERS + 2)  # the in-sync and drifted Trainers' objects, and the orphans
    assert doc["summary"]["schedulingObjects"] == total
    # A page of governed objects each with a Workload and a PodGroup: at most 2 per object.
    held = max(sum(len(objects) for objects in w.objects.values()) for w in made)
    assert held <= min(2 * chunk, total)
