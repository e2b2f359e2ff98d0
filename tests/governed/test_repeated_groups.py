"""Repeated groups (issue 15, item 6): a leaf instantiated N times (``groups``), one template and
N runtime PodGroups named with the index, and pods mapped to their group by an index label."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from webhook.governed.stamping import stamp_pod
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, pod_group_name
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.errors import BuildError, PolicyError

Json = dict[str, t.Any]
POLICY: t.Final = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: replicated
spec:
  target: {group: ml.example.com, versions: [v1], kind: Replicated, resource: replicateds}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  updateRules: elastic
  stamping: {pods: true}
  root:
    type: leaf
    path: spec.scheduling
    templateName: replica
    podCount: {path: spec.size}
    groups: GROUPS
"""
GROUPS: t.Final = "{path: spec.replicas, indexLabel: example.com/group-index, countLabel: example.com/groups}"
INDEX, COUNT = "example.com/group-index", "example.com/groups"
UID: t.Final = "u-1"


def _load(tmp_path: Path, text: str) -> PolicySet:
    path = tmp_path / "replicated.yaml"
    path.write_text(text)
    return PolicySet([load_policy_file(path)])


@pytest.fixture
def policies(tmp_path: Path) -> PolicySet:
    return _load(tmp_path, POLICY.replace("GROUPS", GROUPS))


def replicated(replicas: object = 3, size: int = 2, min_count: int | None = None) -> Json:
    spec: Json = {"size": size, "scheduling": {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}}}  # fmt: skip
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "ml.example.com/v1", "kind": "Replicated", "metadata": {"name": "r", "namespace": "ml", "uid": UID}, "spec": spec}  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "replicas", "names"),
    [
        pytest.param(GROUPS, 3, 3, id="a PodGroup per index of the count field"),
        pytest.param(GROUPS, 0, 0, id="no group for a count of zero"),
        pytest.param(GROUPS, None, 1, id="the default count when the field is unset"),
        pytest.param('{expression: "self.spec.replicas * 2", indexLabel: x}', 2, 4, id="a count expression"),
    ],
)
def test_compile_gives_one_template_and_a_pod_group_per_index(
    tmp_path: Path, groups: str, replicas: int | None, names: int
) -> None:
    policies = _load(tmp_path, POLICY.replace("GROUPS", groups))
    obj = replicated(replicas)
    policy = policies.for_object(obj)
    assert policy is not None
    compiled = compile_object(policy, obj, uid=UID)
    assert [t["name"] for t in compiled.workload["spec"]["podGroupTemplates"]] == ["replica"]
    assert [g["metadata"]["name"] for g in compiled.pod_groups] == [
        pod_group_name("r", UID, "replica", i) for i in range(names)
    ]
    assert {g["spec"]["schedulingPolicy"]["gang"]["minCount"] for g in compiled.pod_groups} <= {2}


def test_each_group_index_names_a_pod_group_of_its_own() -> None:
    names = [pod_group_name("r", UID, "replica", i) for i in range(12)]
    assert len(set(names)) == 12 and pod_group_name("r", UID, "replica") not in names


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        pytest.param(-1, [("FieldValueInvalid", "spec.replicas")], id="a negative count"),
        pytest.param(
            "three", [("FieldValueTypeInvalid", "spec.replicas")], id="a count that is not an integer"
        ),
    ],
)
def test_a_bad_group_count_is_reported_at_its_field(
    policies: PolicySet, replicas: object, expected: list[tuple[str, str]]
) -> None:
    assert [e.key() for e in validate_object(replicated(replicas), policies=policies).errors] == expected


def test_min_count_is_bounded_by_one_groups_pods(policies: PolicySet) -> None:
    errors = validate_object(replicated(3, size=2, min_count=3), policies=policies).errors
    assert [e.key() for e in errors] == [
        ("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")
    ]


def pod(**labels: str) -> Json:
    ref = {
        "apiVersion": "ml.example.com/v1",
        "kind": "Replicated",
        "name": "r",
        "uid": UID,
        "controller": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "r-0", "namespace": "ml", "labels": labels, "ownerReferences": [ref]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.mark.parametrize(
    ("labels", "index", "warning"),
    [
        pytest.param({INDEX: "2", COUNT: "3"}, 2, None, id="the index label names the group"),
        pytest.param({INDEX: "0", COUNT: "1"}, 0, None, id="index zero"),
        pytest.param(
            {COUNT: "3"}, None, f"no label {INDEX}", id="a pod without the index label is left alone"
        ),
        pytest.param(
            {INDEX: "3", COUNT: "3"}, None, "past the 3 groups", id="an index at the count is left alone"
        ),
        pytest.param(
            {INDEX: "01", COUNT: "3"}, None, "is not a group index", id="a padded index is left alone"
        ),
        pytest.param(
            {INDEX: "-1", COUNT: "3"}, None, "is not a group index", id="a negative index is left alone"
        ),
        pytest.param(
            {INDEX: "1"}, None, f"{COUNT}=None does not say", id="without the count label it is left alone"
        ),
    ],
)
def test_stamping_maps_a_pod_to_its_group_by_the_index_label(
    policies: PolicySet, labels: dict[str, str], index: int | None, warning: str | None
) -> None:
    stamped = stamp_pod(pod(**labels), policies)
    group = stamped.object["spec"].get("schedulingGroup")
    if index is None:
        assert group is None
        assert len(stamped.warnings) == 1 and warning in stamped.warnings[0]
    else:
        assert group == {"podGroupName": pod_group_name("r", UID, "replica", index)}
        assert stamped.warnings == ()


def test_without_a_count_label_any_index_is_stamped(tmp_path: Path) -> None:
    policies = _load(
        tmp_path, POLICY.replace("GROUPS", "{path: spec.replicas, indexLabel: example.com/group-index}")
    )
    stamped = stamp_pod(pod(**{INDEX: "7"}), policies)
    assert stamped.object["spec"]["schedulingGroup"] == {
        "podGroupName": pod_group_name("r", UID, "replica", 7)
    }


@pytest.mark.parametrize(
    ("root", "message"),
    [
        pytest.param(
            "root:\n    type: composite\n    path: spec.s\n    templateName: c\n    groups: {path: spec.n, indexLabel: x}\n"
            "    children: [{type: leaf, path: spec.scheduling, templateName: l, minCountDefault: none}]",
            r"spec\.root\.groups: only leaf nodes repeat",
            id="a composite cannot repeat",
        ),
        pytest.param(
            "root:\n    type: composite\n    path: spec.s\n    templateName: c\n    children:\n"
            "    - {type: leaf, forEach: spec.roles, itemKey: name, path: s, templateName: '{key}', "
            "minCountDefault: none, podLabel: {key: role}, groups: {path: n, indexLabel: x}}",
            r"spec\.root\.children\[0\]\.groups: a node with forEach cannot also repeat",
            id="a forEach node cannot repeat",
        ),
        pytest.param(
            "root: {type: leaf, path: spec.s, templateName: l, minCountDefault: none, groups: {path: spec.n}}",
            r"spec\.root\.groups: 'indexLabel' is a required property",
            id="groups need the index label",
        ),
        pytest.param(
            'root: {type: leaf, path: spec.s, templateName: l, minCountDefault: none, groups: {expression: "n", indexLabel: x}}',
            r"spec\.root\.groups\.expression: 'n' names 'n'",
            id="a group count expression reads only self",
        ),
    ],
)
def test_repeated_group_mistakes_are_load_errors(tmp_path: Path, root: str, message: str) -> None:
    text = POLICY.split("  root:")[0].replace("  stamping: {pods: true}\n", "") + "  " + root + "\n"
    with pytest.raises(PolicyError, match=message):
        _load(tmp_path, text)


def test_a_template_named_like_anothers_group_is_a_compile_error(tmp_path: Path) -> None:
    root = (
        "root:\n    type: composite\n    path: spec.s\n    templateName: c\n    children:\n"
        "    - {type: leaf, path: spec.a, templateName: replica, podCount: {path: spec.size}, "
        "groups: {path: spec.replicas, indexLabel: x}, podLabel: {key: role, value: a}}\n"
        "    - {type: leaf, path: spec.b, templateName: replica-1, podCount: {path: spec.size}}\n"
    )
    policies = _load(tmp_path, POLICY.split("  root:")[0] + "  " + root)
    policy = policies.for_object(replicated(2))
    assert policy is not None
    with pytest.raises(BuildError, match="two PodGroups would be named r-.*-replica-1-"):
        compile_object(policy, replicated(2), uid=UID)
