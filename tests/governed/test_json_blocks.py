"""Blocks kept as JSON text in an annotation (``encoding: json``): where a CRD has no field for
them, an annotation survives pruning, and errors name the annotation and the field inside it."""

from __future__ import annotations

import json
import typing as t

import pytest

from webhook.governed.defaulting import default_object
from webhook.governed.mutation import mutate_object
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object
from webhook.policy import PolicySet, load_policy_file

KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
POLICY = f"""\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: trainer-annotated
spec:
  target: {{group: ml.example.com, versions: [v1], kind: Trainer, resource: trainers}}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  updateRules: immutable
  defaults:
  - name: gang-by-default
    set: {{schedulingPolicy: {{gang: {{}}}}}}
  root:
    type: leaf
    path: "metadata.annotations[{KEY}]"
    encoding: json
    templateName: "{{name}}"
    podCount: {{path: spec.workers}}
"""


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    path = tmp_path_factory.mktemp("policies") / "trainer.yaml"
    path.write_text(POLICY)
    return PolicySet([load_policy_file(path)])


def trainer(blocks: object = None, workers: int = 4) -> dict[str, t.Any]:
    metadata: dict[str, t.Any] = {"name": "resnet", "namespace": "ml"}
    if blocks is not None:
        text = blocks if isinstance(blocks, str) else json.dumps(blocks)
        metadata["annotations"] = {KEY: text}
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": metadata,
        "spec": {"workers": workers},
    }


def gang(n: object) -> dict[str, t.Any]:
    return {"schedulingPolicy": {"gang": {"minCount": n}}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(trainer(gang(4)), [], id="blocks in the annotation are judged like a field's"),
        pytest.param(trainer(), [], id="no annotation is no blocks"),
        pytest.param(
            trainer(gang(8)),
            [("FieldValueInvalid", f"{AT}.schedulingPolicy.gang.minCount")],
            id="an error inside names the annotation and the field in it",
        ),
        pytest.param(
            trainer({"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": 1}),
            [("FieldValueForbidden", f"{AT}.priority")],
            id="an unknown field in the annotation is forbidden there",
        ),
        pytest.param(
            trainer('{"schedulingPolicy": {"gang": {"minCount": 2}'),
            [("FieldValueInvalid", AT)],
            id="text that is not JSON is invalid at the annotation",
        ),
        pytest.param(
            trainer("[1, 2]"),
            [("FieldValueTypeInvalid", AT)],
            id="JSON that is not an object is a type error at the annotation",
        ),
    ],
)
def test_validation_of_blocks_in_an_annotation(
    obj: dict[str, t.Any], expected: list[tuple[str, str]], policies: PolicySet
) -> None:
    result = validate_object(obj, policies=policies)
    assert [e.key() for e in result.errors] == expected
    assert result.status is (Status.INVALID if expected else Status.VALID)


def test_a_json_syntax_error_says_where(policies: PolicySet) -> None:
    raw = '{"schedulingPolicy": {"gang": {"minCount": 2}'
    [error] = validate_object(trainer(raw), policies=policies).errors
    assert "column 46" in error.detail  # just past the last character
    assert error.bad_value == raw  # shown, as apimachinery shows an Invalid value


def test_a_change_of_the_annotation_on_update_is_immutable(policies: PolicySet) -> None:
    result = validate_object(trainer(gang(3)), trainer(gang(2)), policies=policies)
    assert [e.key() for e in result.errors] == [("FieldValueInvalid", AT)]


def test_reformatting_the_annotation_is_no_change(policies: PolicySet) -> None:
    compact = trainer(json.dumps(gang(2), separators=(",", ":")))
    assert validate_object(compact, trainer(json.dumps(gang(2), indent=2)), policies=policies).errors == ()


def test_the_annotation_compiles_like_a_field(policies: PolicySet) -> None:
    obj = trainer(gang(3))
    policy = policies.for_object(obj)
    assert policy is not None
    [pod_group] = compile_object(policy, obj, uid="u").pod_groups
    assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}


def test_defaults_are_written_back_as_json_text(policies: PolicySet) -> None:
    defaulted = default_object(trainer(), policies)
    text = defaulted.object["metadata"]["annotations"][KEY]
    assert json.loads(text) == {"schedulingPolicy": {"gang": {}}}
    mutation = mutate_object(trainer(), policies, operation="CREATE")
    assert [op["path"] for op in mutation.patch] == ["/metadata/annotations"]
