"""The stand-in's feature gates: which resources are served and which fields a create drops.

A STAND-IN for the apiserver's registry strategies (docs/reconciler.md "Tests and the
stand-in"): with a gate off, kube-apiserver serves no resource the gate guards and clears
gated fields on create before validation (the WAS API reference, api.md §2.3, §3). Every gate is
on unless ``--feature-gates`` turns it off, so tests that pass no switch see every field kept.
"""

from __future__ import annotations

import typing as t

Json = dict[str, t.Any]

GATES: t.Final = (
    "GenericWorkload", "WorkloadWithJob", "TopologyAwareWorkloadScheduling",
    "DRAWorkloadResourceClaims", "CompositePodGroup",
)  # fmt: skip

# gate -> the resources ("apiVersion/plural") it guards.
_RESOURCES: t.Final = {
    "GenericWorkload": ("scheduling.k8s.io/v1beta1/workloads", "scheduling.k8s.io/v1beta1/podgroups"),
    "CompositePodGroup": ("scheduling.k8s.io/v1alpha3/compositepodgroups",),
}
# Fields a create drops while the gate is off, by kind; a "*" step is every item of a list.
_TEMPLATE: t.Final = ("spec", "podGroupTemplates", "*")
_FIELDS: t.Final[dict[str, dict[str, tuple[tuple[str, ...], ...]]]] = {
    "WorkloadWithJob": {"Job": (("spec", "scheduling"),)},
    "TopologyAwareWorkloadScheduling": {
        "PodGroup": (("spec", "schedulingConstraints"),),
        "Workload": ((*_TEMPLATE, "schedulingConstraints"),),
    },
    "DRAWorkloadResourceClaims": {
        "PodGroup": (("spec", "resourceClaims"),),
        "Workload": ((*_TEMPLATE, "resourceClaims"),),
    },
    "CompositePodGroup": {
        "PodGroup": (("spec", "parentCompositePodGroupName"),),
        "Workload": (("spec", "compositePodGroupTemplates"),),
    },
    "GenericWorkload": {"Pod": (("spec", "schedulingGroup"),)},
}


def parse(value: str) -> frozenset[str]:
    """The gates turned off by ``Gate=false,...`` (apiserver syntax); unknown gates are an error."""
    off = set()
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, _, state = item.partition("=")
        if name not in GATES or state.lower() not in ("true", "false"):
            raise ValueError(
                f"--feature-gates: {item!r} is not GATE=true|false for one of {', '.join(GATES)}"
            )
        if state.lower() == "false":
            off.add(name)
    return frozenset(off)


def hidden(off: frozenset[str]) -> set[str]:
    return {r for gate in off for r in _RESOURCES.get(gate, ())}


def _drop(node: t.Any, path: tuple[str, ...]) -> None:
    if not isinstance(node, dict) or not path:
        return
    head, rest = path[0], path[1:]
    if head == "*":
        return
    if not rest:
        node.pop(head, None)
        return
    child = node.get(head)
    if rest[0] == "*":
        for item in child if isinstance(child, list) else []:
            _drop(item, rest[1:])
    else:
        _drop(child, rest)


def drop_disabled(kind: str, obj: Json, off: frozenset[str]) -> None:
    """Clear, in place, the fields of ``obj`` whose gate is off (a create's PrepareForCreate)."""
    for gate in off:
        for path in _FIELDS.get(gate, {}).get(kind, ()):
            _drop(obj, path)
