"""Short-circuiting markers of Workload, PodGroup and CompositePodGroup (docs/design.md §2.4).

Upstream facts (kubernetes/api ``scheduling/v1alpha3/zz_generated.validations.go`` at
10b39a39bcee; apimachinery ``pkg/api/validate`` at eed236ce):

* the ``immutable``, ``update`` (NoSet/NoUnset/NoAddItem/NoRemoveItem), ``ifDisabled``-forbidden
  and ``maxItems`` markers of a field are emitted with ``MarkShortCircuit``: all of them run,
  and if any fails (``earlyReturn``) the field's own rules (format, enum, maximum, union,
  items, map keys) do not; sibling fields are unaffected;
* ``validate.Immutable`` and ``UpdatePointer``/``ValSliceUpdate`` NoSet/NoUnset report
  ``field.Invalid(fldPath, nil, ...)``, rendered ``Invalid value: null``; ``ValSliceUpdate``
  NoRemoveItem is one Forbidden per removed old item;
* ``PodGroupSpec.ResourceClaims`` has no ``IfOption`` gate marker (immutable, maxItems=4,
  optional only);
* a struct's union is checked before its members (``Validate_WorkloadSpec``,
  ``Validate_PodGroupResourceClaim``);
* metadata name/namespace use the hand-written ``ValidateImmutableField`` (apimachinery
  ``pkg/api/validation/objectmeta.go``), which reports the new value and no origin.
"""

from __future__ import annotations

import copy
import typing as t

import pytest

from webhook.scheduling_objects import validate_composite_pod_group, validate_pod_group, validate_workload
from webhook.vocab.gates import KNOWN_GATES, FeatureGates

Json = dict[str, t.Any]
INV, F, R, TM = "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueTooMany"
ALL_ON = FeatureGates(frozenset(KNOWN_GATES))


def _off(gate: str) -> FeatureGates:
    return FeatureGates(frozenset(KNOWN_GATES) - {gate})


def _obj(kind: str, version: str, name: str, spec: Json) -> Json:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
    }


def pod_group(**spec: t.Any) -> Json:
    body: Json = {
        "workloadRef": {"workloadName": "train", "templateName": "pgt-0"},
        "parentCompositePodGroupName": "train-cpgt-0",
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "resourceClaims": [{"name": "c", "resourceClaimName": "x"}],
        "disruptionMode": {"all": {}},
        "priorityClassName": "x",
        "priority": 5,
        "preemptionPolicy": "Never",
        **spec,
    }
    return _obj("PodGroup", "v1alpha3", "train-pgt-0", body)


def composite_pod_group(**spec: t.Any) -> Json:
    body: Json = {
        "workloadRef": {"workloadName": "train", "templateName": "cpgt-0"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        **spec,
    }
    return _obj("CompositePodGroup", "v1alpha3", "train-cpgt-0", body)


def tpl(name: str, min_count: int = 2) -> Json:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": min_count}}}


def workload(*templates: Json, **spec: t.Any) -> Json:
    return _obj("Workload", "v1beta1", "train", {"podGroupTemplates": list(templates), **spec})


def composite_workload(*composites: Json) -> Json:
    return _obj("Workload", "v1alpha3", "train", {"compositePodGroupTemplates": list(composites)})


def ctpl(name: str, *leaves: Json) -> Json:
    return {"name": name, "schedulingPolicy": {"basic": {}}, "podGroupTemplates": list(leaves)}


def changed(obj: Json, *path: str | int, value: object) -> Json:
    out = copy.deepcopy(obj)
    node: t.Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


PG = pod_group()
CPG = composite_pod_group()
WL = workload(tpl("a"), controllerRef={"kind": "Job", "name": "j"})
CWL = composite_workload(ctpl("c1", tpl("a")))
IMMUTABLE = "Invalid value: null: field is immutable"

Expected = list[tuple[str, str, str, str]]  # (type, path, origin, rendered error or "")

CASES = [
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "priorityClassName", value="X_"),
        PG,
        ALL_ON,
        [(INV, "spec.priorityClassName", "immutable", f"spec.priorityClassName: {IMMUTABLE}")],
        id="PodGroup priorityClassName to a bad name is only immutable (no format error)",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "priority", value=2_000_000_000),
        PG,
        ALL_ON,
        [(INV, "spec.priority", "immutable", f"spec.priority: {IMMUTABLE}")],
        id="PodGroup priority over the maximum is only immutable",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "workloadRef", "workloadName", value="W"),
        PG,
        ALL_ON,
        [(INV, "spec.workloadRef", "immutable", f"spec.workloadRef: {IMMUTABLE}")],
        id="PodGroup workloadRef to a bad name is only immutable",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "disruptionMode", value={}),
        PG,
        ALL_ON,
        [(INV, "spec.disruptionMode", "immutable", f"spec.disruptionMode: {IMMUTABLE}")],
        id="PodGroup disruptionMode to {} is only immutable (no union error)",
    ),
    pytest.param(
        validate_composite_pod_group,
        changed(CPG, "spec", "schedulingPolicy", value={}),
        CPG,
        ALL_ON,
        [(INV, "spec.schedulingPolicy", "immutable", f"spec.schedulingPolicy: {IMMUTABLE}")],
        id="CompositePodGroup schedulingPolicy to {} is only immutable (no union error)",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "preemptionPolicy", value="Bogus"),
        PG,
        ALL_ON,
        [(INV, "spec.preemptionPolicy", "immutable", "")],
        id="PodGroup preemptionPolicy to an unknown value is only immutable (no NotSupported)",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "preemptionPolicy", value="Bogus"),
        PG,
        _off("PodGroupPreemptionPolicy"),
        [
            (
                F,
                "spec.preemptionPolicy",
                "ifDisabled(PodGroupPreemptionPolicy)",
                "spec.preemptionPolicy: Forbidden",
            ),
            (INV, "spec.preemptionPolicy", "immutable", ""),
        ],
        id="PodGroup preemptionPolicy changed with its gate off is Forbidden and immutable, nothing more",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "parentCompositePodGroupName", value="Bad_"),
        PG,
        _off("CompositePodGroup"),
        [
            (F, "spec.parentCompositePodGroupName", "ifDisabled(CompositePodGroup)", ""),
            (INV, "spec.parentCompositePodGroupName", "immutable", ""),
        ],
        id="PodGroup parent name changed with its gate off is Forbidden and immutable, no format",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "schedulingPolicy", value={"gang": {"minCount": 0}}),
        pod_group(schedulingPolicy={"basic": {}}),
        ALL_ON,
        [
            (INV, "spec.schedulingPolicy.basic", "immutable", f"spec.schedulingPolicy.basic: {IMMUTABLE}"),
            (
                INV,
                "spec.schedulingPolicy.gang",
                "update",
                "spec.schedulingPolicy.gang: Invalid value: null: field cannot be set once created",
            ),
        ],
        id="PodGroup basic to gang with minCount 0 is immutable and NoSet, no Required inside",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "resourceClaims", 0, "name", value="d"),
        PG,
        _off("DRAWorkloadResourceClaims"),
        [(INV, "spec.resourceClaims", "immutable", f"spec.resourceClaims: {IMMUTABLE}")],
        id="PodGroup claims changed with DRAWorkloadResourceClaims off are only immutable (no Forbidden)",
    ),
    pytest.param(
        validate_pod_group,
        changed(PG, "spec", "resourceClaims", value=[{"name": "c"}] * 5),
        PG,
        ALL_ON,
        [
            (INV, "spec.resourceClaims", "immutable", ""),
            (TM, "spec.resourceClaims", "maxItems", ""),
        ],
        id="PodGroup claims over the limit on update are immutable and TooMany, no Duplicate or union",
    ),
    pytest.param(
        validate_workload,
        workload(tpl("a"), tpl("b", -1), controllerRef={"kind": "Job", "name": "j"}),
        WL,
        ALL_ON,
        [
            (
                F,
                "spec.podGroupTemplates[1]",
                "update",
                "spec.podGroupTemplates[1]: Forbidden: item may not be added",
            )
        ],
        id="Workload adding a template with minCount -1 is only Forbidden (no minimum)",
    ),
    pytest.param(
        validate_workload,
        workload(tpl("c"), tpl("c")),
        workload(tpl("a"), tpl("b")),
        ALL_ON,
        [
            (F, "spec.podGroupTemplates[0]", "update", ""),
            (F, "spec.podGroupTemplates[1]", "update", ""),
            (F, "spec.podGroupTemplates", "update", ""),
            (F, "spec.podGroupTemplates", "update", ""),
        ],
        id="Workload removing two templates is Forbidden once per removed item; no Duplicate",
    ),
    pytest.param(
        validate_workload,
        composite_workload(ctpl("c1", tpl("a")), ctpl("c2", tpl("z", -1))),
        CWL,
        _off("CompositePodGroup"),
        [
            (F, "spec.compositePodGroupTemplates", "ifDisabled(CompositePodGroup)", ""),
            (F, "spec.compositePodGroupTemplates[1]", "update", ""),
        ],
        id="Workload composite list grown with its gate off: Forbidden twice, the new item unchecked",
    ),
    pytest.param(
        validate_workload,
        changed(WL, "spec", "controllerRef", value={"kind": "a/b", "name": "j"}),
        WL,
        ALL_ON,
        [(INV, "spec.controllerRef", "immutable", f"spec.controllerRef: {IMMUTABLE}")],
        id="Workload controllerRef to a bad kind is only immutable",
    ),
    pytest.param(
        validate_workload,
        _obj("Workload", "v1beta1", "train", {"controllerRef": {"name": "j"}}),
        None,
        ALL_ON,
        [
            (INV, "spec", "union", ""),
            (R, "spec.controllerRef.kind", "required", ""),
        ],
        id="Workload spec union comes before the controllerRef's errors",
    ),
    pytest.param(
        validate_workload,
        changed(WL, "metadata", "name", value="other"),
        WL,
        ALL_ON,
        [(INV, "metadata.name", "", 'metadata.name: Invalid value: "other": field is immutable')],
        id="metadata.name change keeps the new value (hand-written ValidateImmutableField)",
    ),
]


@pytest.mark.parametrize(("validate", "obj", "old", "gates", "expected"), CASES)
def test_short_circuit(
    validate: t.Callable[..., t.Any], obj: Json, old: Json | None, gates: FeatureGates, expected: Expected
) -> None:
    errors = validate(obj, old, gates=gates).errors
    assert [(e.type.value, e.path, e.origin) for e in errors] == [(k, p, o) for k, p, o, _ in expected]
    for error, (*_, rendered) in zip(errors, expected, strict=True):
        if rendered:
            assert error.error() == rendered
