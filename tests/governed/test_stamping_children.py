"""Child-template stamping that reaches the right level (issue 15 item 4), stamp or delegate
(issue 14), and the policy-load checks of ``stamping.childTemplates``."""

from __future__ import annotations

import copy
import re
import typing as t
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from patch_oracle import check_patch

from webhook.compiler.annotations import GROUP_TEMPLATE_NAME, PARENT_COMPOSITE_POD_GROUP
from webhook.governed.mutation import mutate_object
from webhook.governed.stamping import NOT_STAMPED
from webhook.governed.workloads import pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.errors import PolicyError
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
UID = "uid-parent"

# A RayJob-like parent (a composite of a head and keyed worker groups) whose controller creates
# a RayCluster-like child holding several pod templates, and a pipeline-like parent whose
# stages each become one batch/v1 Job.
CLUSTER_POLICY: Json = {
    "apiVersion": "wasp.dev/v1alpha1",
    "kind": "SchedulingIntegration",
    "metadata": {"name": "cluster-job"},
    "spec": {
        "target": {
            "group": "example.com",
            "versions": ["v1"],
            "kind": "ClusterJob",
            "resource": "clusterjobs",
        },
        "allowedPolicies": ["basic", "gang"],
        "allowedDisruptionModes": ["single", "all"],
        "root": {
            "type": "composite",
            "path": "spec.scheduling",
            "templateName": "{name}",
            "children": [
                {
                    "id": "head",
                    "type": "leaf",
                    "path": "spec.cluster.head.scheduling",
                    "templateName": "head",
                    "podCount": {"expression": "1"},
                },
                {
                    "id": "workers",
                    "type": "leaf",
                    "forEach": "spec.cluster.groups",
                    "itemKey": "groupName",
                    "path": "scheduling",
                    "templateName": "{key}",
                    "podCount": {"path": "replicas"},
                },
            ],
        },  # fmt: skip
        "stamping": {
            "childTemplates": [
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Cluster",
                    "templates": [
                        {"path": "spec.head.template", "node": "head"},
                        {
                            "forEach": "spec.groups",
                            "itemKey": "groupName",
                            "path": "template",
                            "node": "workers",
                            "only": ["cpu", "gpu"],
                        },
                    ],
                }  # fmt: skip
            ]
        },
    },
}
PIPELINE_POLICY: Json = {
    "apiVersion": "wasp.dev/v1alpha1",
    "kind": "SchedulingIntegration",
    "metadata": {"name": "pipeline"},
    "spec": {
        "target": {"group": "example.com", "versions": ["v1"], "kind": "Pipeline", "resource": "pipelines"},
        "allowedPolicies": ["basic", "gang"],
        "allowedDisruptionModes": ["single", "all"],
        "root": {
            "type": "composite",
            "path": "spec.scheduling",
            "templateName": "{name}",
            "children": [
                {
                    "id": "stage",
                    "type": "leaf",
                    "forEach": "spec.stages",
                    "itemKey": "name",
                    "path": "scheduling",
                    "templateName": "{name}-{key}",
                    "podCount": {"path": "parallelism"},
                    "podLabel": {"key": "example.com/stage"},
                },
            ],
        },  # fmt: skip
        "stamping": {
            "childTemplates": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "templatePath": "spec.template",
                    "mode": "delegate",
                    "children": {"path": "copies", "default": 1},
                }  # fmt: skip
            ]
        },
        # The Job controller cannot find a leaf under a composite (docs/schedulability.md); the
        # machinery is tested all the same.
        "schedulability": {
            "rules": {"delegation-unreachable": {"action": "off", "reason": "tests the delegation machinery"}}
        },
    },
}


def write(tmp: Path, doc: Json, name: str = "p.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def policies(tmp_path: Path) -> PolicySet:
    paths = [write(tmp_path, CLUSTER_POLICY, "c.yaml"), write(tmp_path, PIPELINE_POLICY, "p.yaml")]
    return PolicySet.load(paths, gates=FeatureGates.parse("CompositePodGroup=true"))


def ref(kind: str, name: str = "train") -> Json:
    return {"apiVersion": "example.com/v1", "kind": kind, "name": name, "uid": UID, "controller": True}


def cluster(*groups: str | None) -> Json:
    template: Json = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    spec: Json = {"head": {"template": copy.deepcopy(template)}, "groups": []}
    for key in groups:
        element: Json = {"template": copy.deepcopy(template)}
        if key is not None:
            element["groupName"] = key
        spec["groups"].append(element)
    meta = {"name": "train-abcde", "namespace": "ml", "ownerReferences": [ref("ClusterJob")]}
    return {"apiVersion": "example.com/v1", "kind": "Cluster", "metadata": meta, "spec": spec}


def stage_job(stage: str | None, *, group: Json | None = None) -> Json:
    template: Json = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    if group is not None:
        template["spec"]["schedulingGroup"] = group
    labels = {} if stage is None else {"example.com/stage": stage}
    meta = {
        "name": f"train-{stage}",
        "namespace": "ml",
        "labels": labels,
        "ownerReferences": [ref("Pipeline")],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"parallelism": 2, "template": template},
    }


def group(template: str) -> Json:
    return {"podGroupName": pod_group_name("train", UID, template)}


def sg(obj: Json, *path: str | int) -> object:
    node: t.Any = obj
    for seg in path:
        node = node[seg]
    return node["spec"].get("schedulingGroup")


# --- several templates, each mapped to its leaf ----------------------------------------------------


def test_every_template_of_a_child_is_stamped_with_its_own_leaf(policies: PolicySet) -> None:
    obj = cluster("cpu", "gpu")
    result = mutate_object(obj, policies, operation="CREATE")
    check_patch(obj, result.object, result.patch)
    stamped = result.object
    assert sg(stamped, "spec", "head", "template") == group("head")
    assert [sg(stamped, "spec", "groups", i, "template") for i in (0, 1)] == [group("cpu"), group("gpu")]
    assert result.warnings == ()


@pytest.mark.parametrize(
    ("groups", "stamped", "warned"),
    [
        pytest.param(
            ("cpu", "other"), [group("cpu"), None], False, id="an element outside only is left out on purpose"
        ),
        pytest.param(
            ("cpu", None), [group("cpu"), None], False, id="an element without its key is not in only"
        ),
        pytest.param(
            ("cpu", "Not_A_Key"), [group("cpu"), None], False, id="a key outside only is never a name"
        ),
    ],
)
def test_templates_that_would_get_a_name_nobody_creates_are_never_stamped(
    groups: tuple, stamped: list, warned: bool, policies: PolicySet
) -> None:
    result = mutate_object(cluster(*groups), policies, operation="CREATE")
    got = [sg(result.object, "spec", "groups", i, "template") for i in range(len(groups))]
    assert (got, bool(result.warnings)) == (stamped, warned)
    # The Cluster kind stamps nothing of its own, so nothing needs a not-stamped mark.
    assert all(NOT_STAMPED not in (g["template"].get("metadata") or {}).get("annotations", {})
               for g in result.object["spec"]["groups"])  # fmt: skip


def test_a_template_that_already_has_a_group_is_never_changed(policies: PolicySet) -> None:
    obj = cluster("cpu")
    obj["spec"]["head"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    result = mutate_object(obj, policies, operation="CREATE")
    assert sg(result.object, "spec", "head", "template") == {"podGroupName": "mine"}
    assert [op["path"] for op in result.patch] == ["/spec/groups/0/template/spec/schedulingGroup"]


def test_a_list_that_is_not_a_list_gives_a_warning_not_a_crash(policies: PolicySet) -> None:
    obj = cluster()
    obj["spec"]["groups"] = {"cpu": {}}
    result = mutate_object(obj, policies, operation="CREATE")
    check_patch(obj, result.object, result.patch)
    assert any("spec.groups is not a list" in w for w in result.warnings)


# --- delegate ------------------------------------------------------------------------------------


def test_a_delegated_job_gets_the_template_and_parent_composite_annotations(policies: PolicySet) -> None:
    obj = stage_job("train")
    result = mutate_object(obj, policies, operation="CREATE")
    check_patch(obj, result.object, result.patch)
    assert result.object["metadata"]["annotations"] == {
        GROUP_TEMPLATE_NAME: "train-train",
        PARENT_COMPOSITE_POD_GROUP: pod_group_name("train", UID, "train"),
    }
    assert "schedulingGroup" not in result.object["spec"]["template"]["spec"]
    assert mutate_object(result.object, policies, operation="CREATE").patch == []


@pytest.mark.parametrize(
    ("job", "why"),
    [
        pytest.param(
            stage_job(None), "cannot tell which child", id="a Job without its stage label: a warning"
        ),
        pytest.param(stage_job("Bad_Key"), "names no element", id="a label that cannot be a key: a warning"),
        pytest.param(
            stage_job("train", group={"podGroupName": "mine"}), None, id="the user's own group wins"
        ),
    ],
)
def test_jobs_that_cannot_be_delegated_are_left_alone(
    job: Json, why: str | None, policies: PolicySet
) -> None:
    result = mutate_object(job, policies, operation="CREATE")
    assert result.patch == []
    assert (why is None) == (not result.warnings)
    assert why is None or why in result.warnings[0]


def test_several_jobs_per_element_warn_when_the_parent_is_created(policies: PolicySet) -> None:
    pipeline = {"apiVersion": "example.com/v1", "kind": "Pipeline", "metadata": {"name": "train", "namespace": "ml"},
                "spec": {"stages": [{"name": "a", "parallelism": 2}, {"name": "b", "parallelism": 2, "copies": 2}]}}  # fmt: skip
    warnings = mutate_object(pipeline, policies, operation="CREATE").warnings
    assert [w.split(":")[0] for w in warnings] == ["spec.stages[1].copies is 2"]


# --- policy load ----------------------------------------------------------------------------------


def _child(**changes: t.Any) -> Json:
    doc = copy.deepcopy(CLUSTER_POLICY)
    doc["spec"]["stamping"]["childTemplates"][0].update(changes)
    return doc


def _mapping(i: int, **changes: t.Any) -> Json:
    doc = copy.deepcopy(CLUSTER_POLICY)
    mapping = doc["spec"]["stamping"]["childTemplates"][0]["templates"][i]
    mapping.update({k: v for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        del mapping[key]
    return doc


@pytest.mark.parametrize(
    ("doc", "where", "message"),
    [
        pytest.param(_child(mode="delegate"), "childTemplates[0].mode", "only for batch/v1 Job",
                     id="delegate for a kind the Job controller does not run"),
        pytest.param(_child(children={"path": "replicas"}), "childTemplates[0].children", "needs mode: delegate",
                     id="children without delegate"),
        pytest.param(_mapping(0, node="nope"), "childTemplates[0].templates[0].node", "no node with id 'nope'", id="an unknown node"),
        pytest.param(_mapping(0, node="root"), "childTemplates[0].templates[0].node", "is a composite", id="a composite node"),
        pytest.param(_mapping(1, forEach=None, itemKey=None, only=None), "childTemplates[0].templates[1].forEach", "repeats",
                     id="a forEach leaf mapped from a single template"),
        pytest.param(_mapping(1, itemKey=None), "childTemplates[0].templates[1].itemKey", "go together", id="forEach without itemKey"),
        pytest.param(_mapping(0, only=["a"]), "childTemplates[0].templates[0].only", "needs forEach", id="only without forEach"),
        pytest.param(_mapping(0, path="spec.head template"), "childTemplates[0].templates[0].path", "is not a field name",
                     id="a path that is not a field path"),
    ],
)  # fmt: skip
def test_child_template_mistakes_are_load_errors_naming_file_and_key(
    doc: Json, where: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(PolicyError, match=rf"p\.yaml: spec\.stamping\.{re.escape(where)}: .*{message}"):
        load_policy_file(write(tmp_path, doc))


def test_delegate_needs_the_sibling_count(tmp_path: Path) -> None:
    doc = copy.deepcopy(PIPELINE_POLICY)
    del doc["spec"]["stamping"]["childTemplates"][0]["children"]
    with pytest.raises(PolicyError, match=r"childTemplates\[0\]\.children: delegate needs children"):
        load_policy_file(write(tmp_path, doc))


def test_mapped_templates_need_no_pod_labels(tmp_path: Path) -> None:
    # The templatePath form chooses leaves by labels, so two unlabelled children are refused;
    # templates mapped to their nodes need none.
    assert load_policy_file(write(tmp_path, CLUSTER_POLICY)).child_templates[0].templates[0].node == "head"
    doc = _child(templatePath="spec.head.template")
    del doc["spec"]["stamping"]["childTemplates"][0]["templates"]
    with pytest.raises(PolicyError, match="have no podLabel"):
        load_policy_file(write(tmp_path, doc))


def test_a_repeated_leaf_cannot_be_delegated(tmp_path: Path) -> None:
    # The Job controller creates one PodGroup per delegated Job, with no group index.
    doc = copy.deepcopy(PIPELINE_POLICY)
    doc["spec"]["root"] = {"type": "leaf", "path": "spec.scheduling", "templateName": "{name}",
                           "podCount": {"path": "spec.parallelism"},
                           "groups": {"path": "spec.copies", "indexLabel": "example.com/copy"}}  # fmt: skip
    with pytest.raises(PolicyError, match=r"childTemplates\[0\]\.mode: leaf 'root' repeats as groups"):
        load_policy_file(write(tmp_path, doc))


@pytest.mark.parametrize(
    ("key", "warning"),
    [
        pytest.param(None, "its groupName is not set", id="an element without its key"),
        pytest.param("Not_A_Key", "key='Not_A_Key' names no element", id="a key no element can have"),
    ],
)
def test_an_element_whose_key_names_no_group_gets_a_warning_not_a_stamp(
    key: str | None, warning: str, tmp_path: Path
) -> None:
    doc = _mapping(1, only=None)
    ps = PolicySet(
        [load_policy_file(write(tmp_path, doc))], gates=FeatureGates.parse("CompositePodGroup=true")
    )
    result = mutate_object(cluster("cpu", key), ps, operation="CREATE")
    assert [sg(result.object, "spec", "groups", i, "template") for i in (0, 1)] == [group("cpu"), None]
    assert len(result.warnings) == 1 and warning in result.warnings[0]
    assert "spec.groups[1].template" in result.warnings[0]


_JUNK = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1, 3), st.sampled_from(["", "cpu", "gpu", "x y"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(
            st.sampled_from(["head", "groups", "template", "groupName", "spec", "metadata", "annotations",
                             "schedulingGroup", "labels"]),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=10,
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spec=_JUNK,
    kind=st.sampled_from(["Cluster", "Job"]),
    labels=st.one_of(_JUNK, st.just({"example.com/stage": "a"})),
)
def test_child_stamping_never_raises_and_its_patch_always_applies(
    spec: object, kind: str, labels: object, layered: PolicySet
) -> None:
    owner = ref("ClusterJob") if kind == "Cluster" else ref("Pipeline")
    api_version = "example.com/v1" if kind == "Cluster" else "batch/v1"
    obj = {"apiVersion": api_version, "kind": kind,
           "metadata": {"name": "c", "labels": labels, "annotations": copy.deepcopy(labels), "ownerReferences": [owner]},
           "spec": spec}  # fmt: skip
    result = mutate_object(obj, layered, operation="CREATE")
    check_patch(obj, result.object, result.patch)


@pytest.fixture
def layered(tmp_path: Path) -> PolicySet:
    """The fixture's policies and one governing the Cluster kind itself, which stamps its pods:
    templates the ClusterJob leaves out are then marked not-stamped."""
    inner = {"apiVersion": "wasp.dev/v1alpha1", "kind": "SchedulingIntegration", "metadata": {"name": "cluster"},
             "spec": {"target": {"group": "example.com", "versions": ["v1"], "kind": "Cluster", "resource": "clusters"},
                      "allowedPolicies": ["basic", "gang"], "allowedDisruptionModes": ["single", "all"],
                      "root": {"type": "leaf", "path": "spec.scheduling", "templateName": "all",
                               "podCount": {"expression": "1"}},
                      "stamping": {"pods": True}}}  # fmt: skip
    paths = [write(tmp_path, CLUSTER_POLICY, "c.yaml"), write(tmp_path, PIPELINE_POLICY, "p.yaml"),
             write(tmp_path, inner, "inner.yaml")]  # fmt: skip
    return PolicySet.load(paths, gates=FeatureGates.parse("CompositePodGroup=true"))


def test_an_inner_stamping_kind_gets_its_left_out_templates_marked(layered: PolicySet) -> None:
    result = mutate_object(cluster("cpu", "other"), layered, operation="CREATE")
    template = result.object["spec"]["groups"][1]["template"]
    assert "only cpu, gpu join" in template["metadata"]["annotations"][NOT_STAMPED]
    # A pod made from it is left alone by the Cluster's own pod stamping.
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []},
           "metadata": {"name": "p", "annotations": template["metadata"]["annotations"],
                        "ownerReferences": [{**ref("Cluster", "train-abcde")}]}}  # fmt: skip
    assert mutate_object(pod, layered, operation="CREATE").patch == []
    pod["metadata"]["annotations"] = {}
    assert mutate_object(pod, layered, operation="CREATE").patch != []
