"""``new_pod_group`` / ``new_composite_pod_group`` and existing-workload builders: rows 48–53,
the decision-19 deviation, and the CompositePodGroup counterpart (docs/design.md §6.8, docs/design.md §6.9).
Rows 48–51 carry the names of upstream's ``builder_test.go`` subtests of ``TestBuilderNewPodGroup``.
"""

from __future__ import annotations

import copy
import dataclasses
import typing as t
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.builders import (
    JOB_OWNER,
    cgang,
    child,
    claim,
    composite,
    config,
    gang,
    leaf,
    mode,
    options,
    topology,
)
from webhook.compiler import Builder
from webhook.vocab.errors import BuildError

Json = dict[str, t.Any]

V1BETA1 = "scheduling.k8s.io/v1beta1"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"

RICH_TEMPLATE: Json = {
    "name": "pgt-0",
    "schedulingPolicy": {"gang": {"minCount": 4}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu-tpl"}],
    "disruptionMode": {"all": {}},
    "priorityClassName": "high",
    "priority": 1000,
}

PERSISTED_WORKLOAD: Json = {
    "apiVersion": V1BETA1,
    "kind": "Workload",
    "metadata": {"name": "parent-wl", "namespace": "team", "uid": "wl-uid", "resourceVersion": "7"},
    "spec": {
        "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "js"},
        "podGroupTemplates": [
            {"name": "first", "schedulingPolicy": {"basic": {}}},
            copy.deepcopy(RICH_TEMPLATE),
        ],
    },
}

# A three-level tree: outer{a, inner{c, deep{d}}}, every composite block set on the outer node.
TREE = composite(
    "outer",
    leaf("a", path=child(0), policy=gang(2)),
    composite(
        "inner",
        leaf("c", path=child(1, 0), policy=gang(3), claims=[claim("nic", ref="nic-claim")]),
        composite("deep", leaf("d", path=child(1, 1, 0)), path=child(1, 1), policy=cgang(1)),
        path=child(1),
        policy=cgang(2),
    ),
    policy=cgang(2),
    constraints=topology("rack"),
    disruption=mode("all"),
    default=config(priority_class_name="high"),
)


def built_leaf() -> Builder:
    """A builder that has compiled the leaf Workload ``wl`` in ``ns`` with template ``pgt-0``."""
    builder = Builder(
        leaf("pgt-0", policy=gang(4), constraints=topology("zone"), disruption=mode("all")), options()
    )
    builder.build_workload()
    return builder


def built_leaf_owner_cleared() -> Builder:
    builder = built_leaf()
    builder.options = dataclasses.replace(builder.options, owner=None)
    return builder


def built_tree() -> Builder:
    builder = Builder(TREE, options())
    builder.build_workload()
    return builder


def existing(owner: t.Mapping[str, object] | None = JOB_OWNER) -> Callable[[], Builder]:
    return lambda: Builder.from_existing_workload(PERSISTED_WORKLOAD, options(owner=owner))


def pod_group(name: str, template: str, spec: Json, *, namespace: str = "ns", owners: bool = True) -> Json:
    metadata: Json = {"name": name, "namespace": namespace}
    if owners:
        metadata["ownerReferences"] = [JOB_OWNER]
    return {"apiVersion": V1BETA1, "kind": "PodGroup", "metadata": metadata, "spec": spec}


def ref(workload: str, template: str) -> Json:
    return {"workloadRef": {"workloadName": workload, "templateName": template}}


@dataclass(frozen=True)
class Case:
    id: str
    builder: Callable[[], Builder]
    name: str
    template: str
    expected: Json | None  # None: BuildError
    upstream_lookup: bool = False


LEAF_SPEC = {
    **ref("wl", "pgt-0"),
    "schedulingPolicy": gang(4),
    "schedulingConstraints": topology("zone"),
    "disruptionMode": mode("all"),
}

CASES = [
    Case(
        "row-48: requires a workload first",
        lambda: Builder(leaf("pgt-0"), options()),
        "pg",
        "pgt-0",
        None,
    ),
    Case(
        "row-49: materializes from the compiled template owned by the configured owner",
        built_leaf,
        "pg",
        "pgt-0",
        pod_group("pg", "pgt-0", LEAF_SPEC),
    ),
    Case(
        "row-50: omits ownerReferences when no owner is configured",
        built_leaf_owner_cleared,
        "pg",
        "pgt-0",
        pod_group("pg", "pgt-0", LEAF_SPEC, owners=False),
    ),
    Case(
        "row-50: an existing-workload builder without Owner gives no ownerReferences",
        existing(owner=None),
        "pg",
        "first",
        pod_group(
            "pg",
            "first",
            {**ref("parent-wl", "first"), "schedulingPolicy": {"basic": {}}},
            namespace="team",
            owners=False,
        ),
    ),
    Case("row-51: errors on unknown template", built_leaf, "pg", "nope", None),
    Case(
        "row-52: gang 4, zone topology, all, a claim, a priority class and priority 1000 are all copied",
        existing(),
        "pg",
        "pgt-0",
        pod_group(
            "pg",
            "pgt-0",
            {**ref("parent-wl", "pgt-0"), **{k: v for k, v in RICH_TEMPLATE.items() if k != "name"}},
            namespace="team",
        ),
    ),
    Case(
        "row-53: a PodGroup from a persisted Workload copies priorityClassName and priority",
        existing(),
        "child-pg",
        "pgt-0",
        pod_group(
            "child-pg",
            "pgt-0",
            {**ref("parent-wl", "pgt-0"), **{k: v for k, v in RICH_TEMPLATE.items() if k != "name"}},
            namespace="team",
        ),
    ),
    # ---------------------------------------------------------------- lookup (docs/decisions.md §19)
    Case(
        "decision-19: wasp finds a leaf template nested under composites",
        built_tree,
        "pg-c",
        "c",
        pod_group(
            "pg-c",
            "c",
            {
                **ref("wl", "c"),
                "schedulingPolicy": gang(3),
                "resourceClaims": [claim("nic", ref="nic-claim")],
            },
        ),
    ),
    Case(
        "decision-19: wasp finds a leaf three levels down",
        built_tree,
        "pg-d",
        "d",
        pod_group("pg-d", "d", {**ref("wl", "d"), "schedulingPolicy": {"basic": {}}}),
    ),
    Case(
        "decision-19: upstream_lookup=True does not find a nested leaf",
        built_tree,
        "pg-c",
        "c",
        None,
        upstream_lookup=True,
    ),
    Case(
        "upstream_lookup=True finds a top-level leaf",
        built_leaf,
        "pg",
        "pgt-0",
        pod_group("pg", "pgt-0", LEAF_SPEC),
        upstream_lookup=True,
    ),
    Case("new_pod_group does not return a composite template", built_tree, "pg", "inner", None),
    Case(
        "the PodGroup name is taken as given, not validated",
        built_leaf,
        "Not_Valid",
        "pgt-0",
        pod_group("Not_Valid", "pgt-0", LEAF_SPEC),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_new_pod_group(case: Case) -> None:
    builder = case.builder()
    if case.expected is None:
        with pytest.raises(BuildError):
            builder.new_pod_group(case.name, case.template, upstream_lookup=case.upstream_lookup)
        return
    assert (
        builder.new_pod_group(case.name, case.template, upstream_lookup=case.upstream_lookup) == case.expected
    )


# --------------------------------------------------------------------------- CompositePodGroup


def composite_pod_group(name: str, template: str, spec: Json) -> Json:
    return {
        "apiVersion": V1ALPHA3,
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": [JOB_OWNER]},
        "spec": {**ref("wl", template), **spec},
    }


COMPOSITE_CASES = [
    Case(
        "new_composite_pod_group copies the root's policy, constraints, disruption and priority class",
        built_tree,
        "cpg",
        "outer",
        composite_pod_group(
            "cpg",
            "outer",
            {
                "schedulingPolicy": cgang(2),
                "schedulingConstraints": topology("rack"),
                "disruptionMode": mode("all"),
                "priorityClassName": "high",
            },
        ),
    ),
    Case(
        "new_composite_pod_group finds a nested composite (pre-order lookup)",
        built_tree,
        "cpg-inner",
        "inner",
        composite_pod_group("cpg-inner", "inner", {"schedulingPolicy": cgang(2)}),
    ),
    Case(
        "new_composite_pod_group finds a composite two levels down",
        built_tree,
        "cpg-deep",
        "deep",
        composite_pod_group("cpg-deep", "deep", {"schedulingPolicy": cgang(1)}),
    ),
    Case("new_composite_pod_group does not return a leaf template", built_tree, "cpg", "c", None),
    Case("new_composite_pod_group with an unknown template is an error", built_tree, "cpg", "nope", None),
    Case(
        "new_composite_pod_group before build_workload is an error",
        lambda: Builder(TREE, options()),
        "cpg",
        "outer",
        None,
    ),
]


@pytest.mark.parametrize("case", COMPOSITE_CASES, ids=[c.id for c in COMPOSITE_CASES])
def test_new_composite_pod_group(case: Case) -> None:
    builder = case.builder()
    if case.expected is None:
        with pytest.raises(BuildError):
            builder.new_composite_pod_group(case.name, case.template)
        return
    assert builder.new_composite_pod_group(case.name, case.template) == case.expected


def test_composite_pod_group_from_an_existing_workload_copies_priority() -> None:
    workload = copy.deepcopy(PERSISTED_WORKLOAD)
    workload["spec"] = {
        "compositePodGroupTemplates": [
            {
                "name": "grp",
                "schedulingPolicy": cgang(2),
                "priorityClassName": "high",
                "priority": 1000,
                "podGroupTemplates": [{"name": "leaf", "schedulingPolicy": {"basic": {}}}],
            }
        ]
    }
    builder = Builder.from_existing_workload(workload, options())
    group = builder.new_composite_pod_group("cpg", "grp")
    assert group["apiVersion"] == V1ALPHA3
    assert group["spec"] == {
        **ref("parent-wl", "grp"),
        "schedulingPolicy": cgang(2),
        "priorityClassName": "high",
        "priority": 1000,
    }


# --------------------------------------------------------------------------- copies and ownership


def test_row_52_changing_the_pod_group_leaves_the_template_intact() -> None:
    builder = existing()()
    before = copy.deepcopy(PERSISTED_WORKLOAD)
    group = builder.new_pod_group("pg", "pgt-0")
    spec = group["spec"]
    spec["schedulingPolicy"]["gang"]["minCount"] = 99
    spec["schedulingConstraints"]["topology"][0]["key"] = "changed"
    spec["resourceClaims"][0]["name"] = "changed"
    spec["disruptionMode"]["single"] = {}
    group["metadata"]["ownerReferences"][0]["name"] = "changed"
    assert PERSISTED_WORKLOAD == before
    assert builder.new_pod_group("pg", "pgt-0")["spec"]["schedulingPolicy"] == gang(4)
    assert JOB_OWNER["name"] == "my-job"


def test_row_52_changing_the_pod_group_leaves_the_compiled_workload_intact() -> None:
    builder = built_leaf()
    workload = builder.build_workload()
    before = copy.deepcopy(workload)
    group = builder.new_pod_group("pg", "pgt-0")
    group["spec"]["schedulingPolicy"]["gang"]["minCount"] = 99
    group["spec"]["schedulingConstraints"]["topology"].append({"key": "x"})
    assert builder.build_workload() == before


def test_row_53_build_workload_is_refused_on_an_existing_workload_builder() -> None:
    builder = existing()()
    with pytest.raises(BuildError):
        builder.build_workload()
    # ... and it still materialises groups afterwards.
    assert builder.new_pod_group("pg", "first")["spec"]["schedulingPolicy"] == {"basic": {}}


def test_pod_groups_are_owned_by_the_owner_only_and_never_by_the_workload() -> None:
    """The library stamps exactly [opts.Owner]; a reference to the Workload is the caller's job."""
    group = built_leaf().new_pod_group("pg", "pgt-0")
    assert group["metadata"]["ownerReferences"] == [JOB_OWNER]
    assert group["metadata"]["ownerReferences"][0] is not JOB_OWNER
    assert "parentCompositePodGroupName" not in group["spec"]
    assert "labels" not in group["metadata"] and "annotations" not in group["metadata"]


def test_the_existing_workload_is_copied_when_the_builder_is_made() -> None:
    workload = copy.deepcopy(PERSISTED_WORKLOAD)
    builder = Builder.from_existing_workload(workload, options())
    workload["spec"]["podGroupTemplates"][1]["schedulingPolicy"]["gang"]["minCount"] = 99
    assert builder.new_pod_group("pg", "pgt-0")["spec"]["schedulingPolicy"] == gang(4)
