"""The reconciler's native mode in process (docs/coexistence.md): a CRD event switching the kind
to native re-plans its objects; a new object then gets no write and a ManagedNatively report, an
object wasp already manages keeps its objects; a Workload the object's controller made is never
adopted or patched."""

from __future__ import annotations

import typing as t
from dataclasses import replace

from webhook.governed.outsiders import slim_crd
from webhook.policy import PolicySet
from webhook.policy.native import Native
from webhook.reconciler.controller import Options, Reconciler
from webhook.reconciler.leader import Fence

from .test_sync import TRAINERS, ScriptedApi
from .worlds import policies, trainer

Json = dict[str, t.Any]


def native_policies() -> PolicySet:
    base = policies()
    marked = [
        replace(p, native=Native(crd_fields=(("spec", "gang"),))) if p.kind == "Trainer" else p
        for p in base.policies
    ]
    return PolicySet(marked, gates=base.gates)  # fmt: skip


def crd(with_field: bool) -> Json:
    spec_props: Json = {"workers": {"type": "integer"}}
    if with_field:
        spec_props["gang"] = {"type": "object"}
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "trainers.ml.example.com", "resourceVersion": "1" if not with_field else "2"},
            "spec": {"group": "ml.example.com", "names": {"plural": "trainers", "kind": "Trainer"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}}  # fmt: skip


def reconciler(api: ScriptedApi, reports: list[str]) -> Reconciler:
    r = Reconciler(t.cast(t.Any, api), native_policies(), Fence(always_open=True), Options())
    r.events.publish = lambda obj, report: reports.append(report.reason) or True  # type: ignore[method-assign]
    return r


def test_an_upgrade_of_the_crd_switches_new_objects_to_native_and_keeps_the_old() -> None:
    api, reports = ScriptedApi(), []
    r = reconciler(api, reports)
    transform = slim_crd(r.policies)
    r._on_crd(None, transform(crd(False)))
    old = trainer("old", "uid-old", resourceVersion="1")
    r.sync(next(iter(r.world.governed_changed(TRAINERS, None, old))))
    assert [c[0] for c in api.calls] == ["create", "create"]  # adapter: its Workload and PodGroup
    r._on_crd(transform(crd(False)), transform(crd(True)))  # the controller's CRD now has the field
    assert len(r.queue) >= 1  # every object is planned again
    calls = len(api.calls)
    new = trainer("new", "uid-new", resourceVersion="1")
    r.sync(next(iter(r.world.governed_changed(TRAINERS, None, new))))
    assert len(api.calls) == calls and reports[-1] == "ManagedNatively"  # nothing written
    r.sync(
        next(iter(r.world.governed_changed(TRAINERS, old, {**old, "spec": {**old["spec"], "workers": 6}})))
    )
    assert "ManagedNatively" not in reports[:-1]  # the old object stays wasp's: resized, not abandoned


def test_a_workload_the_objects_controller_made_is_never_adopted() -> None:
    api, reports = ScriptedApi(), []
    r = reconciler(api, reports)
    obj = trainer(resourceVersion="1")
    owner = {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "name": "resnet",
        "uid": "uid-resnet",
        "controller": True,
    }
    theirs = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
              "metadata": {"name": "resnet", "namespace": "ml", "uid": "w1", "resourceVersion": "3", "ownerReferences": [owner]},
              "spec": {"controllerRef": {"apiGroup": "ml.example.com", "kind": "Trainer", "name": "resnet"},
                       "podGroupTemplates": [{"name": "all", "schedulingPolicy": {"gang": {"minCount": 2}}}]}}  # fmt: skip
    key = next(iter(r.world.governed_changed(TRAINERS, None, obj)))
    r.world.put("Workload", theirs)
    r.sync(key)
    assert api.calls == [] and reports == ["ManagedNatively"]
