"""Policy-file strictness and dispatch details not covered by the validation tables."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.policy import NodeSpec, PolicySet, load_policy_file
from webhook.vocab.errors import PolicyError
from webhook.vocab.field import FieldPath

BUILTIN = PolicySet.load()


def test_a_repeated_key_in_a_policy_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    text = Path("policies/batch-job.yaml").read_text()
    text = text.replace("spec:\n", "spec:\n  updateRules: none\n", 1)  # updateRules now appears twice
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=r"(?s)dup\.yaml.*duplicate key 'updateRules'"):
        load_policy_file(path)


@pytest.mark.parametrize(
    ("api_version", "kind", "status"),
    [
        ("scheduling.k8s.io/v1beta1", "Workload", Status.INVALID),
        ("scheduling.k8s.io/v1alpha3", "Workload", Status.INVALID),
        ("scheduling.k8s.io/v1", "Workload", Status.SKIPPED),
        ("scheduling.k8s.io/v1beta1", "CompositePodGroup", Status.SKIPPED),
        ("scheduling.k8s.io/v1alpha3", "CompositePodGroup", Status.INVALID),
    ],
    ids=[
        "v1beta1 Workload is judged",
        "v1alpha3 Workload is judged",
        "a version 1.37 does not serve is skipped",
        "CompositePodGroup is not served in v1beta1",
        "v1alpha3 CompositePodGroup is judged",
    ],
)
def test_scheduling_objects_are_judged_only_in_served_versions(
    api_version: str, kind: str, status: Status
) -> None:
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": {}}
    assert validate_object(obj, policies=BUILTIN).status is status


def test_an_object_with_only_generate_name_gets_no_template_name_warning() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"generateName": "train-"},
        "spec": {"scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {"spec": {}}},
    }
    result = validate_object(job, policies=BUILTIN)
    assert (result.status, result.warnings) == (Status.VALID, ())


@pytest.mark.parametrize(
    ("pattern", "key", "index"),
    [
        ("{name}-pgt-0", "", None),
        ("{name}", "", None),
        ("grp-{{x}}-{name}-}}", "", None),
        ("{name}-{key}", "workers", 1),
        ("{name}-{index}", "", 3),
        ("{name}-{key}-{name}", "ps", 0),
        ("fixed", "", None),
    ],
    ids=[
        "name then a suffix (the built-in Job policy)",
        "the name alone",
        "escaped braces around the name",
        "name and key",
        "name and index",
        "the name twice",
        "no placeholder",
    ],
)
def test_template_for_expands_like_str_format(pattern: str, key: str, index: int | None) -> None:
    # template_for concatenates precomputed affixes for prefix{name}suffix patterns and formats
    # the rest: both must write exactly what str.format writes.
    spec = NodeSpec(id="n", composite=False, path=FieldPath.parse("spec.scheduling"), template_name=pattern)
    for name in ("train", "a{b}c", ""):
        want = pattern.format(name=name, key=key, index="" if index is None else index)
        assert spec.template_for(name, key, index) == want


@pytest.mark.parametrize(
    ("api_version", "kind", "governed_by"),
    [
        ("batch/v1", "Job", "batch-job"),
        ("batch/v1", "CronJob", "batch-cronjob"),
        ("batch/v2", "Job", None),
        ("batch/v1", "job", None),
        ("v1", "Job", None),
        ("/batch/v1", "Job", None),
        ("batch/v1/", "Job", None),
        ("", "Job", None),
    ],
    ids=[
        "Job in a served version",
        "CronJob in a served version",
        "a version the policy does not list",
        "kinds are case-sensitive",
        "the core group is another group",
        "a leading slash is not the group",
        "a trailing slash is not the version",
        "an empty apiVersion",
    ],
)
def test_for_kind_matches_the_api_version_exactly(
    api_version: str, kind: str, governed_by: str | None
) -> None:
    policy = BUILTIN.for_kind(api_version, kind)
    assert (policy.name if policy is not None else None) == governed_by


# --------------------------------------------------------------------------- policy-author mistakes at load

MAP_POLICY = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: mpijob
spec:
  target: {group: kubeflow.org, versions: [v2beta1], kind: MPIJob, resource: mpijobs}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  stamping: {pods: true}
  root:
    type: composite
    path: metadata.annotations[scheduling.wasp.dev/blocks]
    templateName: "{name}"
    children:
    - id: replica
      type: leaf
      forEach: spec.mpiReplicaSpecs
      forEachOver: map
      path: scheduling
      templateName: "{name}-{key}"
      podCount: {path: replicas}
      podLabel: {key: training.kubeflow.org/replica-type}
"""


def _write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        pytest.param(
            "podCount: {path: replicas}",
            "podCount: {path: 'replicas*numOfHosts'}",
            r"spec\.root\.children\[0\]\.podCount\.path: 'replicas\*numOfHosts' .* is not a field name",
            id="a pod count written as an expression is refused, not read as absent",
        ),
        pytest.param(
            "forEach: spec.mpiReplicaSpecs\n      forEachOver: map\n",
            "forEachOver: map\n",
            r"forEachOver needs forEach",
            id="forEachOver without forEach is refused",
        ),
        pytest.param(
            "forEachOver: map\n",
            "forEachOver: map\n      itemKey: name\n",
            r"keyed by their map key: drop itemKey",
            id="an itemKey on a map's entries is refused",
        ),
        pytest.param(
            "      forEachOver: map\n",
            "",
            r"\{key\} needs forEach with itemKey, or forEachOver: map",
            id="a key placeholder over a list needs an itemKey",
        ),
        pytest.param(
            "      podLabel: {key: training.kubeflow.org/replica-type}\n",
            "    - id: launcher\n      type: leaf\n      path: spec.launcher\n      templateName: '{name}-l'\n"
            "      podCount: {path: replicas}\n    - id: other\n      type: leaf\n      path: spec.other\n"
            "      templateName: '{name}-o'\n      podCount: {path: replicas}\n",
            r"children 'replica', 'launcher', 'other' have no podLabel",
            id="a stamping composite whose children cannot be told apart by labels is refused",
        ),
    ],
)
def test_policy_mistakes_are_load_time_errors_naming_file_and_key(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in MAP_POLICY
    path = _write(tmp_path, MAP_POLICY.replace(old, new))
    with pytest.raises(PolicyError, match=rf"(?s)p\.yaml: .*{message}"):
        load_policy_file(path)


def test_two_user_policies_with_one_name_are_an_error(tmp_path: Path) -> None:
    first = load_policy_file(_write(tmp_path, MAP_POLICY, "a.yaml"))
    second = load_policy_file(_write(tmp_path, MAP_POLICY.replace("kind: MPIJob", "kind: MPIJob2"), "b.yaml"))
    with pytest.raises(PolicyError, match=r"b\.yaml: metadata\.name 'mpijob' is already used by .*a\.yaml"):
        PolicySet([first, second])


def test_a_user_policy_may_replace_a_builtin_one_by_name(tmp_path: Path) -> None:
    text = (
        Path("policies/batch-job.yaml").read_text().replace("updateRules: elastic", "updateRules: immutable")
    )
    override = load_policy_file(_write(tmp_path, text, "job.yaml"))
    policies = PolicySet([*BUILTIN.policies, override])
    job = policies.for_kind("batch/v1", "Job")
    assert job is not None and job.update_rules == "immutable"


def test_the_same_file_loaded_twice_is_not_a_clash(tmp_path: Path) -> None:
    path = _write(tmp_path, MAP_POLICY)
    assert len(PolicySet([load_policy_file(path), load_policy_file(path)]).policies) == 1


# --------------------------------------------------------------------------- the policy-schema verdict


def _mutations() -> list[tuple[str, object]]:
    import copy

    import yaml

    base = yaml.safe_load(MAP_POLICY)
    builtin = [yaml.safe_load(p.read_text()) for p in sorted(Path("policies").glob("*.yaml"))]
    cases: list[tuple[str, object]] = [("the example map policy", base)]
    cases += [(f"built-in policy {i}", doc) for i, doc in enumerate(builtin)]

    def mutated(name: str, change: t.Callable[[dict[str, t.Any]], None]) -> None:
        doc = copy.deepcopy(base)
        change(doc)
        cases.append((name, doc))

    mutated("an unknown top-level key", lambda d: d.update(extra=1))
    mutated("an unknown node key", lambda d: d["spec"]["root"].update(colour="red"))
    mutated("a node type outside the enum", lambda d: d["spec"]["root"].update(type="branch"))
    mutated("a missing target", lambda d: d["spec"].pop("target"))
    mutated(
        "a pod count default below zero",
        lambda d: d["spec"]["root"]["children"][0]["podCount"].update(default=-1),
    )
    mutated(
        "a pod count with both forms",
        lambda d: d["spec"]["root"]["children"][0]["podCount"].update(expression="1"),
    )
    mutated(
        "a node id that is not a DNS label", lambda d: d["spec"]["root"]["children"][0].update(id="Replica")
    )
    mutated("allowedPolicies as a string", lambda d: d["spec"].update(allowedPolicies="gang"))
    cases += [("a list", []), ("a string", "policy"), ("null", None)]
    return cases


@pytest.mark.parametrize(("doc",), [(c[1],) for c in _mutations()], ids=[c[0] for c in _mutations()])
def test_the_fast_policy_verdict_agrees_with_the_reference_engine(doc: object) -> None:
    import jsonschema

    from webhook.policy.loading import schema_errors
    from webhook.policy.schema import POLICY_SCHEMA

    reference = list(jsonschema.Draft202012Validator(POLICY_SCHEMA).iter_errors(doc))  # type: ignore[arg-type]
    assert (schema_errors(doc) == []) is (reference == [])
