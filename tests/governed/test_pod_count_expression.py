"""Pod counts as CEL expressions over the node's context (``podCount.expression``): products and
clamps such as a JobSet's replicas x parallelism, checked at load and judged like a field."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest

from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.errors import PolicyError

KEY = "scheduling.wasp.dev/blocks"
COUNT = "(has(self.replicas) ? self.replicas : 1) * self.template.spec.parallelism"
POLICY = f"""\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: jobset-like
spec:
  target: {{group: jobset.x-k8s.io, versions: [v1alpha2], kind: JobSet, resource: jobsets}}
  allowedPolicies: [basic, gang]
  allowedDisruptionModes: [single, all]
  root:
    type: composite
    path: "metadata.annotations[{KEY}]"
    encoding: json
    templateName: "{{name}}"
    children:
    - id: job
      type: leaf
      forEach: spec.replicatedJobs
      itemKey: name
      path: "template.metadata.annotations[{KEY}]"
      encoding: json
      templateName: "{{name}}-{{key}}"
      podCount: {{expression: "{COUNT}"}}
"""


def _policy_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobset.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    return PolicySet([load_policy_file(_policy_file(tmp_path_factory.mktemp("p"), POLICY))])


def jobset(min_count: int | None, *, replicas: object = 3, parallelism: object = 2) -> dict[str, t.Any]:
    job: dict[str, t.Any] = {"name": "workers", "template": {"spec": {"parallelism": parallelism}}}
    if replicas is not None:
        job["replicas"] = replicas
    if min_count is not None:
        blocks = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
        job["template"]["metadata"] = {"annotations": {KEY: json.dumps(blocks)}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"replicatedJobs": [job]},
    }


AT = f"spec.replicatedJobs[0].template.metadata.annotations[{KEY}].schedulingPolicy.gang.minCount"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(jobset(6), [], id="upstream's JobSet gang of 3 x 2 = 6 pods is admitted"),
        pytest.param(
            jobset(7), [("FieldValueInvalid", AT)], id="a gang larger than replicas x parallelism is denied"
        ),
        pytest.param(jobset(2, replicas=None), [], id="an absent replicas counts as the guard says (1 x 2)"),
        pytest.param(
            jobset(3, replicas=None), [("FieldValueInvalid", AT)], id="and the bound follows that count"
        ),
        pytest.param(
            jobset(2, parallelism="2"),
            [("FieldValueInvalid", "spec.replicatedJobs[0]")],
            id="a field of the wrong type makes the count fail, reported at the element",
        ),
    ],
)
def test_pod_count_expressions_bound_min_count(
    obj: dict[str, t.Any], expected: list[tuple[str, str]], policies: PolicySet
) -> None:
    assert [e.key() for e in validate_object(obj, policies=policies).errors] == expected


def test_the_message_names_the_expression_and_its_value(policies: PolicySet) -> None:
    [error] = validate_object(jobset(7), policies=policies).errors
    assert COUNT in error.detail and "(6)" in error.detail


def test_an_unset_gang_count_compiles_to_the_expression_value(policies: PolicySet) -> None:
    obj = jobset(None)
    job = obj["spec"]["replicatedJobs"][0]
    job["template"]["metadata"] = {"annotations": {KEY: json.dumps({"schedulingPolicy": {"gang": {}}})}}
    policy = policies.for_object(obj)
    assert policy is not None
    [pod_group] = compile_object(policy, obj, uid="u").pod_groups
    assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 6}}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param(
            "self.replicas *", "CEL expression does not compile", id="an expression that does not compile"
        ),
        pytest.param(
            "replicas * numOfHosts",
            "names 'numOfHosts', 'replicas': the node's context is `self`",
            id="a bare field name",
        ),
    ],
)
def test_pod_count_expression_mistakes_are_load_time_errors(
    tmp_path: Path, expression: str, message: str
) -> None:
    path = _policy_file(tmp_path, POLICY.replace(COUNT, expression))
    with pytest.raises(
        PolicyError, match=rf"jobset\.yaml: spec\.root\.children\[0\]\.podCount\.expression: .*{message}"
    ):
        load_policy_file(path)


def test_a_pod_count_with_both_a_path_and_an_expression_is_refused(tmp_path: Path) -> None:
    text = POLICY.replace(
        f'podCount: {{expression: "{COUNT}"}}', f'podCount: {{path: replicas, expression: "{COUNT}"}}'
    )
    with pytest.raises(PolicyError, match=r"jobset\.yaml: .*podCount"):
        load_policy_file(_policy_file(tmp_path, text))
