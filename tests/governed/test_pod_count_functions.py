"""Pod count expressions over lists and clamps: ``sum()``, ``min()`` and ``max()`` (which the
CEL binding lacks), and macros whose bound variable is not a free one (Volcano: the sum of
``tasks[].replicas``; RayCluster: clamped replicas x hosts per worker group)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from webhook.governed.validation import validate_object
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.errors import PolicyError

POLICY: t.Final = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata: {name: counted}
spec:
  target: {group: ml.example.com, versions: [v1], kind: Counted, resource: counteds}
  allowedPolicies: [gang]
  allowedDisruptionModes: [single]
  root:
    type: leaf
    path: spec.scheduling
    templateName: all
    podCount: {expression: "EXPRESSION"}
"""


def _policies(tmp_path: Path, expression: str) -> PolicySet:
    path = tmp_path / "counted.yaml"
    path.write_text(POLICY.replace("EXPRESSION", expression))
    return PolicySet([load_policy_file(path)])


def counted(min_count: int, **spec: object) -> dict[str, t.Any]:
    body = {**spec, "scheduling": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}
    return {"apiVersion": "ml.example.com/v1", "kind": "Counted", "metadata": {"name": "c"}, "spec": body}


AT: t.Final = ("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")


@pytest.mark.parametrize(
    ("expression", "spec", "bound"),
    [
        pytest.param(
            "sum(self.spec.tasks.map(t, t.replicas))",
            {"tasks": [{"replicas": 2}, {"replicas": 3}]},
            5,
            id="a sum over a list",
        ),
        pytest.param(
            "sum(self.spec.tasks.map(t, t.replicas))",
            {"tasks": [{"replicas": 0}, {"replicas": 1}]},
            1,
            id="a task of none",
        ),
        pytest.param("min(self.spec.replicas, self.spec.max)", {"replicas": 7, "max": 4}, 4, id="min clamps"),
        pytest.param("max(self.spec.replicas, self.spec.min)", {"replicas": 1, "min": 3}, 3, id="max clamps"),
        pytest.param(
            "sum(self.spec.groups.filter(g, !g.off).map(g, g.n))",
            {"groups": [{"n": 2, "off": False}, {"n": 5, "off": True}]},
            2,
            id="macros bind their own variables",
        ),
    ],
)
def test_counts_over_lists_and_clamps(
    tmp_path: Path, expression: str, spec: dict[str, t.Any], bound: int
) -> None:
    policies = _policies(tmp_path, expression)
    assert list(validate_object(counted(bound, **spec), policies=policies).errors) == []
    assert [e.key() for e in validate_object(counted(bound + 1, **spec), policies=policies).errors] == [AT]


def test_a_sum_over_values_that_are_not_integers_is_reported_at_the_context(tmp_path: Path) -> None:
    policies = _policies(tmp_path, "sum(self.spec.tasks.map(t, t.replicas))")
    errors = validate_object(counted(1, tasks=[{"replicas": "two"}]), policies=policies).errors
    assert [(e.key(), "sum() takes a list of integers" in e.detail) for e in errors] == [
        (("FieldValueInvalid", ""), True)
    ]


def test_a_free_variable_beside_a_macro_is_still_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"podCount\.expression: .* names 'n'"):
        _policies(tmp_path, "sum(self.spec.tasks.map(t, t.replicas)) + n")


def test_a_long_expression_is_not_quoted_in_the_users_message(tmp_path: Path) -> None:
    expression = "sum(self.spec.tasks.map(t, has(t.replicas) && t.replicas > 0 ? t.replicas : 0)) + 0 * size(self.spec.tasks)"
    policies = _policies(tmp_path, expression)
    [error] = validate_object(counted(9, tasks=[{"replicas": 2}]), policies=policies).errors
    assert error.detail == "must be less than or equal to the pod count (2)"
