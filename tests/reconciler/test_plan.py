"""The reconciler's decisions, as tables mirroring the 1.37 Job-controller cases
(docs/design.md §7, spec rows 56-65) for governed objects. Pure: no API server."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from webhook.compiler.names import generate_pod_group_name
from webhook.governed.reconcile import Create, Mode, Patch, management_mode, plan
from webhook.governed.workloads import compile_object, pod_group_name, workload_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.gates import FeatureGates

from .worlds import World, converge, policies, service, trainer

PS = policies()

REPO = Path(__file__).resolve().parents[2]


def created(plans: list) -> list[tuple[str, str]]:
    return [(w.kind, w.name) for p in plans for w in p.writes if isinstance(w, Create)]


def reasons(p) -> list[str]:
    return [r.reason for r in p.reports]


def converged_world(obj, **kw) -> World:
    world = World(**kw)
    converge(obj, world, PS)
    return world


# --- creation ---------------------------------------------------------------------------------


def test_a_new_object_gets_its_workload_first_then_its_pod_group_with_the_stamped_names() -> None:
    obj = trainer()
    world = World()
    plans = converge(obj, world, PS)
    wl = workload_name("resnet", "uid-resnet")
    pg = pod_group_name("resnet", "uid-resnet", "resnet-workers")
    assert created(plans) == [("Workload", wl), ("PodGroup", pg)]
    assert plans[0].again and len(plans[0].writes) == 1  # groups wait for the Workload's UID
    group = world.objects[("PodGroup", pg)]
    owners = group["metadata"]["ownerReferences"]
    # Spec row 63: a root PodGroup has 2 owners, the object (controller) and its Workload.
    assert [(o["kind"], o.get("controller", False)) for o in owners] == [
        ("Trainer", True),
        ("Workload", False),
    ]
    assert owners[1]["uid"] == world.objects[("Workload", wl)]["metadata"]["uid"]
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert group["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "wasp"}


def test_the_created_objects_are_exactly_what_compile_object_gives() -> None:
    obj = trainer()
    world = converged_world(obj)
    compiled = compile_object(PS.for_object(obj), obj, uid="uid-resnet")
    for want in compiled.objects():
        have = world.objects[(want["kind"], want["metadata"]["name"])]
        assert have["spec"] == want["spec"]


def test_a_multi_level_object_gets_its_workload_composite_group_and_a_pod_group_per_role() -> None:
    obj = service()
    plans = converge(obj, World(), PS)
    wl = workload_name("llama", "uid-llama")
    assert created(plans) == [
        ("Workload", wl),
        ("CompositePodGroup", pod_group_name("llama", "uid-llama", "llama")),
        ("PodGroup", pod_group_name("llama", "uid-llama", "llama-prefill")),
        ("PodGroup", pod_group_name("llama", "uid-llama", "llama-decode")),
    ]


def test_an_object_whose_pods_run_without_a_scheduling_group_gets_nothing_and_says_why() -> None:
    # Spec row 59's concern for governed kinds: pods made before wasp governed the object
    # are not in any group, so a gang created now would hold back their replacements.
    p = plan(trainer(), PS, World(unstamped_pods=3).observed())
    assert p.writes == () and reasons(p) == ["StartedWithoutGroups"]


def test_a_suspended_object_still_gets_its_objects() -> None:
    # docs/decisions.md §20: created with the object, kept across suspend and resume.
    obj = trainer(status=None)
    obj["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    assert len(created(converge(obj, World(), PS))) == 2


def test_an_invalid_object_is_never_compiled_and_its_event_names_the_field() -> None:
    p = plan(trainer(min_count=5), PS, World().observed())
    assert p.writes == () and reasons(p) == ["FailedWorkloadCompilation"]
    assert "spec.scheduling.schedulingPolicy.gang.minCount" in p.reports[0].message


def test_a_composite_tree_with_the_composite_gate_off_creates_nothing() -> None:
    p = plan(service(), policies(""), World().observed())
    assert p.writes == () and reasons(p) == ["FailedWorkloadCompilation"]


# --- discovery ---------------------------------------------------------------------------------


def test_existing_controlled_objects_are_discovered_and_used_even_with_unstamped_pods() -> None:
    obj = trainer()
    world = converged_world(obj)
    world.unstamped_pods = 2
    p = plan(obj, PS, world.observed())
    # Kept and used; the pods outside the group are reported (docs/decisions.md §30).
    assert p.writes == () and reasons(p) == ["PodsOutsideGroup"]
    assert plan(obj, PS, converged_world(obj).observed()).reports == ()  # control: every pod grouped


def test_a_workload_naming_the_object_without_a_controller_reference_is_ignored() -> None:
    # Spec row 61: bring-your-own Workloads are not the object's; wasp creates its own.
    obj = trainer()
    byo = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
           "metadata": {"name": "byo", "namespace": "ml"},
           "spec": {"controllerRef": {"apiGroup": "ml.example.com", "kind": "Trainer", "name": "resnet"},
                    "podGroupTemplates": [{"name": "x", "schedulingPolicy": {"basic": {}}}]}}  # fmt: skip
    world = World(byo)
    plans = converge(obj, world, PS)
    assert created(plans)[0] == ("Workload", workload_name("resnet", "uid-resnet"))
    assert world.objects[("Workload", "byo")] == {**byo, "metadata": {**byo["metadata"], "uid": "uid-byo-1"}}


def test_a_foreign_object_holding_the_deterministic_name_is_reported_and_left_alone() -> None:
    name = workload_name("resnet", "uid-resnet")
    foreign = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
               "metadata": {"name": name, "namespace": "ml"}, "spec": {}}  # fmt: skip
    p = plan(trainer(), PS, World(foreign).observed())
    assert p.writes == () and reasons(p) == ["NameTaken"]


def test_two_controlled_workloads_fall_back_and_nothing_is_written() -> None:
    # Spec row 62.
    obj = trainer()
    world = converged_world(obj)
    twin = copy.deepcopy(world.objects[("Workload", workload_name("resnet", "uid-resnet"))])
    twin["metadata"]["name"] = "twin"
    world.put(twin)
    p = plan(trainer(workers=6), PS, world.observed())
    assert p.writes == () and reasons(p) == ["SeveralWorkloads"]


def test_two_controlled_pod_groups_for_one_template_fall_back_for_that_group() -> None:
    obj = trainer()
    world = converged_world(obj)
    twin = copy.deepcopy(world.of("PodGroup")[0])
    twin["metadata"]["name"] = "twin"
    world.put(twin)
    p = plan(trainer(workers=6), PS, world.observed())
    assert [w.kind for w in p.writes] == ["Workload"]  # the template is still resized
    assert reasons(p) == ["SeveralPodGroups"]


def test_a_controlled_workload_of_another_structure_is_reported_and_left_alone() -> None:
    # docs/decisions.md §21.
    obj = trainer()
    world = converged_world(obj)
    wl = world.objects[("Workload", workload_name("resnet", "uid-resnet"))]
    wl["spec"]["podGroupTemplates"][0]["name"] = "other"
    p = plan(obj, PS, world.observed())
    assert p.writes == () and reasons(p) == ["UnsupportedWorkloadStructure"]


# --- elastic minCount ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "before", "after", "count"),
    [
        ("minCount follows the pod count when unset", trainer(workers=4), trainer(workers=6), 6),
        ("an explicit minCount edit resizes the gang", trainer(min_count=2), trainer(min_count=3), 3),
    ],
)
def test_a_changed_gang_size_patches_the_template_and_the_pod_group_in_place(sentence, before, after, count):
    world = converged_world(before)
    p = plan(after, PS, world.observed())
    assert [(type(w), w.kind) for w in p.writes] == [(Patch, "Workload"), (Patch, "PodGroup")], sentence
    world.apply(p)
    wl = world.objects[("Workload", workload_name("resnet", "uid-resnet"))]
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == count
    assert world.of("PodGroup")[0]["spec"]["schedulingPolicy"]["gang"]["minCount"] == count
    assert plan(after, PS, world.observed()).writes == ()


def test_basic_objects_are_not_patched_when_their_pod_count_changes() -> None:
    basic = trainer()
    basic["spec"]["scheduling"] = {"schedulingPolicy": {"basic": {}}}
    world = converged_world(basic)
    bigger = copy.deepcopy(basic)
    bigger["spec"]["workers"] = 9
    assert plan(bigger, PS, world.observed()).writes == ()


def test_an_unchanged_world_gets_no_write_on_resync() -> None:
    for obj in (trainer(), service()):
        world = converged_world(obj)
        assert plan(obj, PS, world.observed()).writes == ()


def test_a_composite_count_change_patches_the_template_and_reports_the_immutable_group() -> None:
    obj = service()
    obj["spec"]["scheduling"]["schedulingPolicy"]["gang"] = {"minGroupCount": 2}
    world = converged_world(obj)
    obj["spec"]["scheduling"]["schedulingPolicy"]["gang"] = {"minGroupCount": 1}
    p = plan(obj, PS, world.observed())
    assert [w.kind for w in p.writes] == ["Workload"]
    assert p.writes[0].ops[-1]["path"].endswith("/gang/minGroupCount")
    assert reasons(p) == ["CompositePodGroupImmutable"]


# --- management modes and delegation -------------------------------------------------------------


def _owned(obj, owner, **annotations):
    obj["metadata"]["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                           "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                           "controller": True}]  # fmt: skip
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


GTN = "scheduling.k8s.io/group-template-name"


@pytest.mark.parametrize(
    ("sentence", "obj", "gates", "mode"),
    [
        ("a standalone object is a root", trainer(), "", Mode.BOTH),
        ("GenericWorkload off: nothing", trainer(), "GenericWorkload=false", Mode.NONE),
        ("an owner that is not governed (an operator) leaves it a root",
         _owned(trainer(), {"apiVersion": "argo/v1", "kind": "Flow", "metadata": {"name": "f", "uid": "f"}}), "",
         Mode.BOTH),
        ("a governed owner without the annotation manages everything", _owned(trainer(), service()), "", Mode.NONE),
        ("a controller owner and the annotation key (any value) delegates",
         _owned(trainer(), service(), **{GTN: ""}), "", Mode.DELEGATED),
        ("Jobs are left to the 1.37 Job controller (decision 9)",
         {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": "j"}}, "", Mode.NONE),
    ],
)  # fmt: skip
def test_management_mode(sentence, obj, gates, mode) -> None:
    assert management_mode(obj, policies(gates)) is mode, sentence


def _parent_world() -> tuple[World, str]:
    """A parent whose leaves are delegated: its Workload and composite group, no PodGroups."""
    world = converged_world(service())
    for group in world.of("PodGroup"):
        del world.objects[("PodGroup", group["metadata"]["name"])]
    return world, workload_name("llama", "uid-llama")


def test_a_delegated_child_whose_parent_made_the_group_itself_is_told_the_name_is_taken() -> None:
    world = converged_world(service())  # the parent stamps: it created every PodGroup
    p = plan(_child("c1", "llama-decode"), PS, world.observed())
    assert p.writes == () and reasons(p) == ["NameTaken"]


def _child(name: str, template: str, **extra: str):
    child = trainer(name=name, uid=f"uid-{name}", namespace="serving")
    return _owned(child, service(), **{GTN: template}, **extra)


def test_a_delegated_child_gets_only_its_pod_group_in_the_parents_workload() -> None:
    world, parent = _parent_world()
    before = set(world.objects)
    plans = converge(_child("c1", "llama-decode"), world, PS)
    name = generate_pod_group_name(parent, "llama-decode")
    assert created(plans) == [("PodGroup", name)]
    assert set(world.objects) - before == {("PodGroup", name)}
    group = world.objects[("PodGroup", name)]
    assert [o["kind"] for o in group["metadata"]["ownerReferences"]] == ["Trainer"]  # spec row 63: 1 owner
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}  # the parent's template


def test_an_empty_annotation_selects_the_first_template() -> None:
    world, parent = _parent_world()
    plans = converge(_child("c1", ""), world, PS)
    assert created(plans) == [("PodGroup", generate_pod_group_name(parent, "llama-prefill"))]


def test_the_parent_composite_annotation_becomes_the_parent_link() -> None:
    world, _ = _parent_world()
    child = _child("c1", "llama-decode", **{"scheduling.k8s.io/parent-composite-podgroup": "cpg"})
    p = plan(child, PS, world.observed())
    assert p.writes[0].body["spec"]["parentCompositePodGroupName"] == "cpg"


def test_a_delegated_child_without_a_parent_workload_is_reported_and_retried() -> None:
    p = plan(_child("c1", "llama-decode"), PS, World().observed())
    assert p.writes == () and p.retry and reasons(p) == ["ParentWorkloadMissing"]


def test_a_template_the_parent_lacks_skips_the_child() -> None:
    world, _ = _parent_world()
    p = plan(_child("c1", "nope"), PS, world.observed())
    assert p.writes == () and reasons(p) == ["TemplateNotFound"]


def test_siblings_delegating_to_one_template_clash_and_the_second_is_reported() -> None:
    # docs/decisions.md §18: the two-argument name is the same for both siblings.
    world, _ = _parent_world()
    converge(_child("c1", "llama-decode"), world, PS)
    p = plan(_child("c2", "llama-decode"), PS, world.observed())
    assert p.writes == () and reasons(p) == ["PodGroupNameClash"]


def test_a_delegated_pod_group_follows_the_parents_template_count() -> None:
    world, parent = _parent_world()
    child = _child("c1", "llama-decode")
    converge(child, world, PS)
    world.apply(plan(service(decode=6), PS, world.observed()))  # the parent resizes its template
    p = plan(child, PS, world.observed())
    assert [(type(w), w.kind) for w in p.writes] == [(Patch, "PodGroup")]
    assert p.writes[0].ops[0]["value"] == 6


def test_the_memo_compiles_an_object_once_per_resource_version() -> None:
    import webhook.governed.reconcile as module

    calls = []
    real = module.compile_object
    module.compile_object = lambda *a, **k: calls.append(1) or real(*a, **k)  # type: ignore[assignment]
    try:
        memo: dict = {}
        obj = trainer(resourceVersion="1")
        world = World()
        for _ in range(3):
            world.apply(plan(obj, PS, world.observed(), memo=memo))
        assert len(calls) == 1 and len(world.objects) == 2
        bigger = trainer(workers=6, resourceVersion="2")
        assert [w.kind for w in plan(bigger, PS, world.observed(), memo=memo).writes] == [
            "Workload",
            "PodGroup",
        ]
        assert len(calls) == 2
    finally:
        module.compile_object = real


# --- delegating parents (stamping.childTemplates mode: delegate, docs/decisions.md §27) -------------


def _jobset_policies(mode: str, gates: str, tmp: Path) -> PolicySet:
    # The per-replicated-job JobSet policy (a composite: the shipped jobset integration is one leaf).
    doc = yaml.safe_load((REPO / "examples" / "jobset-per-replicated-job" / "policy.yaml").read_text())
    if mode == "delegate":
        doc["spec"]["stamping"]["childTemplates"][0].update(
            mode="delegate", children={"path": "replicas", "default": 1}
        )
        # Upstream cannot follow it (docs/schedulability.md delegation-unreachable): the machinery is tested.
        doc["spec"]["schedulability"] = {
            "rules": {"delegation-unreachable": {"action": "off", "reason": "tests the delegation machinery"}}
        }
    path = tmp / "jobset.yaml"
    path.write_text(yaml.safe_dump(doc))
    return PolicySet([load_policy_file(path)], gates=FeatureGates.parse(gates))


def _jobset(*replicas: int):
    rjobs = [{"name": f"r{i}", "replicas": n, "template": {"spec": {"parallelism": 2, "template": {"spec": {}}}}}
             for i, n in enumerate(replicas)]  # fmt: skip
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ml", "uid": "uid-js"}, "spec": {"replicatedJobs": rjobs}}  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "gates", "replicas", "kinds", "events"),
    [
        pytest.param("stamp", "CompositePodGroup=true", (1, 3),
                     ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"], [],
                     id="stamp: wasp creates every group"),
        pytest.param("delegate", "CompositePodGroup=true", (1, 1), ["Workload", "CompositePodGroup"], [],
                     id="delegate: the Job controller creates the leaves' PodGroups"),
        pytest.param("delegate", "CompositePodGroup=true", (1, 3), [], ["DelegatedPodGroupNameClash"],
                     id="delegate with 3 Jobs on one template: nothing, and the reason"),
        pytest.param("delegate", "CompositePodGroup=true,WorkloadWithJob=false", (1, 3),
                     ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"], [],
                     id="delegate with the Job controller's gate off: stamped, wasp creates every group"),
    ],
)  # fmt: skip
def test_a_delegating_parent_gets_its_workload_and_composite_groups_only(
    mode, gates, replicas, kinds, events, tmp_path: Path
) -> None:
    ps = _jobset_policies(mode, gates, tmp_path)
    obj = _jobset(*replicas)
    world = World()
    plans = converge(obj, world, ps)
    assert [k for k, _ in created(plans)] == kinds
    assert [r for p in plans for r in reasons(p)] == events
