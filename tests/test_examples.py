"""The golden example suite (``tests/examples``) and the example integrations (``examples/``).

Every case is one parametrized test whose id is the case's file stem. Expected and actual
``(type, field)`` lists are compared sorted, i.e. as multisets: the order in which
independent layers report is not part of the contract (see ``tests/golden.py``).
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from golden import (
    EXAMPLE_POLICIES,
    GOLDEN_DIR,
    REPO_ROOT,
    GoldenCase,
    discover_cases,
    error_keys,
    golden_policies,
)

from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet

CASES = discover_cases()
EXAMPLES_DIR = REPO_ROOT / "examples"
# (directory, sample manifest) of each example integration.
SAMPLES = [("trainer", "trainer.yaml"), ("rolebased", "inferenceservice.yaml")]


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    # Loaded once: every case reads the same immutable set.
    return golden_policies()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case(case: GoldenCase, policies: PolicySet, structural_engine: str) -> None:
    result = validate_object(case.obj, case.old_obj, policies=policies)
    assert error_keys(e.key() for e in result.errors) == case.expected_errors
    assert result.status is (Status.VALID if case.valid else Status.INVALID)
    if case.expected_warning_count is not None:
        assert len(result.warnings) == case.expected_warning_count, result.warnings


def test_suite_is_large_enough_and_covers_every_kind() -> None:
    kinds = {(c.obj["apiVersion"], c.obj["kind"]) for c in CASES if isinstance(c.obj, dict)}
    assert len(CASES) >= 40
    assert {
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("ml.example.com/v1", "Trainer"),
        ("serving.example.com/v1", "InferenceService"),
        ("scheduling.k8s.io/v1beta1", "Workload"),
        ("scheduling.k8s.io/v1beta1", "PodGroup"),
    } <= kinds
    assert any(c.old_obj is not None for c in CASES if c.valid)
    assert any(c.old_obj is not None for c in CASES if not c.valid)


def test_every_golden_file_belongs_to_a_case() -> None:
    # discover_cases rejects stray .old.yaml / .expected.json files; nothing else may lie there.
    known = {
        p
        for c in CASES
        for p in (c.path, c.path.with_suffix(".old.yaml"), c.path.with_suffix(".expected.json"))
    }
    stray = [p for p in GOLDEN_DIR.glob("*/*") if p not in known]
    assert stray == []


def test_golden_policies_are_the_builtins_plus_the_examples() -> None:
    names = {p.name for p in golden_policies().policies}
    assert names == {"batch-job", "batch-cronjob", "ml-example-trainer", "serving-example-inferenceservice"}
    assert golden_policies().warnings == ()


@pytest.mark.parametrize(("directory", "sample"), SAMPLES, ids=[d for d, _ in SAMPLES])
def test_example_sample_is_admitted_by_its_policy(directory: str, sample: str, policies: PolicySet) -> None:
    obj = yaml.safe_load((EXAMPLES_DIR / directory / sample).read_text())
    policy = PolicySet.load([EXAMPLES_DIR / directory / "policy.yaml"], builtin=False).policies[0]
    result = validate_object(obj, policies=policies)
    assert result.status is Status.VALID, [e.error() for e in result.errors]
    assert result.governed_by == policy.name


@pytest.mark.parametrize(("directory", "sample"), SAMPLES, ids=[d for d, _ in SAMPLES])
def test_example_sample_matches_its_crd_schema(directory: str, sample: str) -> None:
    crd = yaml.safe_load((EXAMPLES_DIR / directory / "crd.yaml").read_text())
    obj = yaml.safe_load((EXAMPLES_DIR / directory / sample).read_text())
    (version,) = crd["spec"]["versions"]
    assert obj["apiVersion"] == f"{crd['spec']['group']}/{version['name']}"
    assert obj["kind"] == crd["spec"]["names"]["kind"]
    # OpenAPI v3 structural schemas are a JSON Schema subset; x-kubernetes-* keys are ignored.
    jsonschema.Draft202012Validator(version["schema"]["openAPIV3Schema"]).validate(obj)


@pytest.mark.parametrize("directory", [d for d, _ in SAMPLES])
def test_example_crd_is_a_valid_1_37_manifest(directory: str) -> None:
    crd = yaml.safe_load((EXAMPLES_DIR / directory / "crd.yaml").read_text())
    kubernetes_validate.validate(crd, "1.37.0", strict=True)


@pytest.mark.parametrize("policy_file", EXAMPLE_POLICIES, ids=lambda p: Path(p).parent.name)
def test_example_policy_targets_its_crd(policy_file: Path) -> None:
    policy = PolicySet.load([policy_file], builtin=False).policies[0]
    crd = yaml.safe_load((policy_file.parent / "crd.yaml").read_text())
    assert (policy.group, policy.kind, policy.resource) == (
        crd["spec"]["group"],
        crd["spec"]["names"]["kind"],
        crd["spec"]["names"]["plural"],
    )
    assert set(policy.versions) == {v["name"] for v in crd["spec"]["versions"] if v["served"]}
