"""``wasp policy check``: a policy's paths walked through the CRD's schema (table of mistakes)."""

from __future__ import annotations

import copy
import typing as t
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from webhook.cli.main import cli
from webhook.policy import load_policy_file
from webhook.policy.crdcheck import check_against_crd

REPO = Path(__file__).resolve().parents[2]
MPI_CRD: dict[str, t.Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "mpijobs.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org",
        "names": {"kind": "MPIJob", "plural": "mpijobs"},
        "versions": [
            {
                "name": "v2beta1",
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "mpiReplicaSpecs": {
                                        "type": "object",
                                        "additionalProperties": {
                                            "type": "object",
                                            "properties": {
                                                "replicas": {"type": "integer"},
                                                "restartPolicy": {"type": "string"},
                                                "template": {
                                                    "type": "object",
                                                    "x-kubernetes-preserve-unknown-fields": True,
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}
MPI_POLICY = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: mpijob
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  root:
    type: composite
    path: "metadata.annotations[scheduling.wasp.dev/blocks]"
    encoding: json
    templateName: "{name}"
    children:
    - id: replica
      type: leaf
      forEach: spec.mpiReplicaSpecs
      forEachOver: map
      path: "template.metadata.annotations[scheduling.wasp.dev/blocks]"
      encoding: json
      templateName: "{name}-{key}"
      podCount: {path: replicas}
"""


def problems(tmp_path: Path, policy_text: str, crd: dict[str, t.Any] = MPI_CRD) -> list[tuple[str, str]]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy_text)
    return [(p.where, p.message) for p in check_against_crd(load_policy_file(path), crd)]


@pytest.mark.parametrize(
    ("old", "new", "where", "says"),
    [
        pytest.param(
            "podCount: {path: replicas}",
            "podCount: {path: replica}",
            "spec.root.children[0].podCount.path",
            "no field replica",
            id="a misspelt pod count field is named with the fields that exist",
        ),
        pytest.param(
            "podCount: {path: replicas}",
            "podCount: {path: restartPolicy}",
            "spec.root.children[0].podCount.path",
            "is a string, not an integer",
            id="a pod count that is not an integer is refused",
        ),
        pytest.param(
            '      forEachOver: map\n      path: "template.metadata.annotations[scheduling.wasp.dev/blocks]"\n'
            '      encoding: json\n      templateName: "{name}-{key}"',
            '      path: "template.metadata.annotations[scheduling.wasp.dev/blocks]"\n'
            '      encoding: json\n      templateName: "{name}-{index}"',
            "spec.root.children[0].forEach",
            "is a map, not a list; add forEachOver: map",
            id="forEach over a map without forEachOver says how to fix it",
        ),
        pytest.param(
            '    path: "metadata.annotations[scheduling.wasp.dev/blocks]"\n    encoding: json\n',
            "    path: spec.scheduling\n",
            "spec.root.path",
            "no field spec.scheduling",
            id="blocks at a field the CRD lacks would be pruned",
        ),
        pytest.param(
            '    encoding: json\n    templateName: "{name}"\n',
            '    templateName: "{name}"\n',
            "spec.root.path",
            "is a string, not an object",
            id="an annotation read as an object needs encoding: json",
        ),
        pytest.param(
            "versions: [v2beta1]",
            "versions: [v2]",
            "spec.target.versions",
            "no schema for version 'v2'",
            id="a version the CRD does not define",
        ),
    ],
)
def test_policy_mistakes_found_against_the_crd(
    tmp_path: Path, old: str, new: str, where: str, says: str
) -> None:
    assert old in MPI_POLICY
    found = problems(tmp_path, MPI_POLICY.replace(old, new))
    assert [w for w, _ in found] == [where]
    assert says in found[0][1]


def test_a_fitting_policy_has_no_problems(tmp_path: Path) -> None:
    assert problems(tmp_path, MPI_POLICY) == []


def test_below_preserved_unknown_fields_anything_goes(tmp_path: Path) -> None:
    crd = copy.deepcopy(MPI_CRD)
    text = MPI_POLICY.replace("podCount: {path: replicas}", "podCount: {path: template.spec.anything}")
    assert problems(tmp_path, text, crd) == []


def test_a_crd_for_another_kind_is_reported(tmp_path: Path) -> None:
    crd = copy.deepcopy(MPI_CRD)
    crd["spec"]["names"]["kind"] = "PyTorchJob"
    assert [w for w, _ in problems(tmp_path, MPI_POLICY, crd)] == ["spec.target"]


@pytest.mark.parametrize("example", ["trainer", "rolebased"])
def test_the_example_policies_fit_their_crds(example: str) -> None:
    policy = REPO / "examples" / example / "policy.yaml"
    outcome = CliRunner().invoke(
        cli, ["policy", "check", str(policy), "--crd", str(REPO / "examples" / example / "crd.yaml")]
    )
    assert outcome.exit_code == 0, outcome.output


def test_the_command_exits_1_with_one_line_per_problem_and_2_on_unusable_input(tmp_path: Path) -> None:
    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(MPI_CRD))
    policy = tmp_path / "policy.yaml"
    policy.write_text(MPI_POLICY.replace("podCount: {path: replicas}", "podCount: {path: replica}"))
    outcome = CliRunner().invoke(cli, ["policy", "check", str(policy), "--crd", str(crd)])
    assert outcome.exit_code == 1
    assert outcome.stdout.count("\n") == 1 and "spec.root.children[0].podCount.path" in outcome.stdout
    missing = CliRunner().invoke(cli, ["policy", "check", str(policy), "--crd", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2


@pytest.mark.parametrize(
    "spec_schema",
    [pytest.param("x", id="a string"), pytest.param(["spec"], id="a list"), pytest.param(None, id="null")],
)
def test_a_malformed_crd_schema_is_a_problem_not_a_crash(tmp_path: Path, spec_schema: object) -> None:
    crd = copy.deepcopy(MPI_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec_schema
    found = problems(tmp_path, MPI_POLICY, crd)
    assert [w for w, _ in found] == ["spec.root.children[0].forEach"]


# A one-leaf MPIJob policy; each test appends what it checks (under the root, or under spec).
LEAF_POLICY = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: mpijob-leaf
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  root:
    type: leaf
    path: "metadata.annotations[scheduling.wasp.dev/blocks]"
    encoding: json
    templateName: "{name}"
"""
REPEATED_POLICY = (
    LEAF_POLICY
    + """\
    podCount: {expression: "has(self.spec.mpiReplicaSpecs) ? 2 : 1"}
    groups: {path: GROUPS, indexLabel: example.com/index}
"""
)


@pytest.mark.parametrize(
    ("groups", "says"),
    [
        pytest.param("spec.replica", "no field spec.replica", id="a misspelt group count"),
        pytest.param("spec.mpiReplicaSpecs", "not an integer", id="a group count that is not an integer"),
    ],
)
def test_a_repeated_leafs_group_count_is_checked_like_a_pod_count(
    tmp_path: Path, groups: str, says: str
) -> None:
    found = problems(tmp_path, REPEATED_POLICY.replace("GROUPS", groups))
    assert [where for where, _ in found] == ["spec.root.groups.path"]
    assert says in found[0][1]


REFUSED_POLICY = (
    LEAF_POLICY
    + """\
    minCountDefault: none
  refusedFields:
  - {FOREACH}path: PATH
    message: read elsewhere
"""
)


@pytest.mark.parametrize(
    ("for_each", "path", "expected"),
    [
        pytest.param("", "spec.mpiReplicaSpecs", [], id="a field the CRD has"),
        pytest.param("", "spec.scheduling", ["spec.refusedFields[0].path"], id="a field the CRD lacks"),
        pytest.param(
            "forEach: spec.mpiReplicaSpecs\n    ",
            "replicas",
            ["spec.refusedFields[0].forEach"],
            id="forEach over a map is not a list",
        ),
    ],
)
def test_refused_fields_are_walked_through_the_crd(
    tmp_path: Path, for_each: str, path: str, expected: list[str]
) -> None:
    text = REFUSED_POLICY.replace("{FOREACH}", for_each).replace("PATH", path)
    assert [where for where, _ in problems(tmp_path, text)] == expected
