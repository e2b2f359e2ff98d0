"""Each governed kind's mode for ``wasp audit`` / ``wasp doctor`` (webhook/governed/modes.py), and
the audit's per-object finding for an object its controller manages natively."""

from __future__ import annotations

import copy
import typing as t
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from webhook.governed.drift import judge
from webhook.governed.modes import kind_modes
from webhook.governed.reconcile import Observed
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.policy.native import Native

Json = dict[str, t.Any]
CRD = yaml.safe_load(
    (Path(__file__).parents[1] / "integrations" / "data" / "raycluster" / "crd.yaml").read_text()
)
NAME = "rayclusters.ray.io"


def marked(crd_fields: tuple[tuple[str, ...], ...]) -> PolicySet:
    base = PolicySet.load(integration_paths(["raycluster"]))
    return PolicySet([replace(p, native=Native(crd_fields=crd_fields)) if p.kind == "RayCluster" else p
                      for p in base.policies], gates=base.gates)  # fmt: skip


def with_field(crd: Json, name: str) -> Json:
    out = copy.deepcopy(crd)
    for version in out["spec"]["versions"]:
        version["schema"] = copy.deepcopy(version["schema"])
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][name] = {"type": "object"}
    return out


def open_spec(crd: Json) -> Json:
    out = copy.deepcopy(crd)
    for version in out["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return out


@pytest.mark.parametrize(
    ("policies", "crd", "expected"),
    [
        pytest.param(PolicySet.load(integration_paths(["raycluster"])), CRD, "adapter", id="shipped: no marker"),
        pytest.param(marked((("spec", "wasScheduling"),)), CRD, "adapter", id="marker, CRD without the field"),
        pytest.param(marked((("spec", "wasScheduling"),)), with_field(CRD, "wasScheduling"), "native", id="marker in the CRD"),
        pytest.param(marked((("spec", "wasScheduling"),)), open_spec(CRD), "adapter", id="open schema: never guessed"),
        pytest.param(marked((("spec", "wasScheduling"),)), None, "adapter", id="CRD not installed"),
        pytest.param(marked((("spec", "headGroupSpec", "template", "spec", "schedulingGroup"),)),
                     CRD, "adapter", id="a deeper path the CRD lacks"),
    ],
)  # fmt: skip
def test_the_mode_of_each_kind(policies: PolicySet, crd: Json | None, expected: str) -> None:
    modes = {m.kind: m.mode for m in kind_modes(policies, {NAME: crd})}
    assert modes["RayCluster"] == expected
    assert modes.get("Job", "controller") == "controller"


def test_an_object_whose_controller_made_its_workload_is_an_info_finding() -> None:
    policies = PolicySet.load(integration_paths(["raycluster"]))
    cluster = yaml.safe_load(
        (Path(__file__).parents[1] / "integrations" / "data" / "raycluster" / "raycluster.yaml").read_text()
    )
    cluster["metadata"].update(
        uid="uid-rc",
        resourceVersion="1",
        annotations={"scheduling.wasp.dev/blocks": '{"schedulingPolicy": {"gang": {}}}'},
    )
    owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": cluster["metadata"]["name"],
        "uid": "uid-rc",
        "controller": True,
    }
    native = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
              "metadata": {"name": cluster["metadata"]["name"], "namespace": cluster["metadata"].get("namespace", "default"), "ownerReferences": [owner]},
              "spec": {"controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": cluster["metadata"]["name"]},
                       "podGroupTemplates": [{"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 3}}}]}}  # fmt: skip
    found = judge(cluster, policies, Observed(workloads=[native]))
    assert [(f.type, f.severity) for f in found] == [("ManagedNatively", "info")]


def test_doctor_lists_the_mode_of_each_installed_kind_only() -> None:
    from webhook.doctor.checks import mode_checks

    policies = marked((("spec", "wasScheduling"),))
    assert [
        (c.id, c.verdict, c.required) for c in mode_checks(policies, {NAME: with_field(CRD, "wasScheduling")})
    ] == [("mode-raycluster", "pass", False)]
    assert "native" in mode_checks(policies, {NAME: with_field(CRD, "wasScheduling")})[0].title
    assert mode_checks(policies, {NAME: None}) == []
