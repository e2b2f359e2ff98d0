"""``spec.enforcement: deny | warn`` at the core (issue 19): loading, the verdict, the answer.

``validate_object`` carries the judging policy's enforcement in its verdict; ``warned`` builds the
answer of a warn-mode policy. Verdicts are compared as ``(type, field)`` pairs; warnings
against the denial's own wording (``FieldError.error()``), which is what kubectl prints.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from webhook.admission.response import WARNING_RUNES, WARNINGS_TOTAL_RUNES, denied, warned
from webhook.cli.enforcement_flag import ENFORCEMENT_CHOICES
from webhook.governed.result import Result, Status
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.policy.model import Enforcement
from webhook.policy.schema import POLICY_SCHEMA
from webhook.vocab.errors import PolicyError
from webhook.vocab.field import FieldPath, forbidden, invalid

Json = dict[str, t.Any]

REPO: t.Final = Path(__file__).resolve().parents[2]
BATCH_JOB: t.Final = REPO / "policies" / "batch-job.yaml"
MIN: t.Final = "spec.scheduling.schedulingPolicy.gang.minCount"
INVALID: t.Final = "FieldValueInvalid"
REQUIRED: t.Final = "FieldValueRequired"
FORBIDDEN: t.Final = "FieldValueForbidden"


def job(*, parallelism: int = 8, min_count: int | None = None) -> Json:
    spec: Json = {
        "parallelism": parallelism,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
    }
    if min_count is not None:
        spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": spec,
    }


def workload(min_count: int) -> Json:
    """A hand-written Workload: the scheduling API's own validation judges it, no policy."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": min_count}}}],
        },
    }


def job_policy(directory: Path, enforcement: str | None) -> Path:
    """The shipped Job policy (same name, so it replaces the built-in one) with ``enforcement``."""
    doc = yaml.safe_load(BATCH_JOB.read_text())
    if enforcement is not None:
        doc["spec"]["enforcement"] = enforcement
    path = directory / f"batch-job-{enforcement}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def warn_mode(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    return PolicySet.load([job_policy(tmp_path_factory.mktemp("warn"), "warn")])


@pytest.fixture(scope="module")
def deny_mode() -> PolicySet:
    return PolicySet.load()


def keys(result: Result) -> list[tuple[str, str]]:
    return [e.key() for e in result.errors]


# ------------------------------------------------------------------------------ the field


@pytest.mark.parametrize(
    ("enforcement", "expected"),
    [
        pytest.param(None, "deny", id="absent: deny, so existing policies keep denying"),
        pytest.param("deny", "deny", id="deny"),
        pytest.param("warn", "warn", id="warn"),
    ],
)
def test_the_policy_field_loads(tmp_path: Path, enforcement: str | None, expected: str) -> None:
    [policy] = PolicySet.load([job_policy(tmp_path, enforcement)], builtin=False).policies
    assert policy.enforcement == expected


def test_the_builtin_policies_deny() -> None:
    assert {p.name: p.enforcement for p in PolicySet.load().policies} == {
        "batch-job": "deny",
        "batch-cronjob": "deny",
    }


def test_an_unknown_enforcement_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = job_policy(tmp_path, "audit")
    with pytest.raises(PolicyError, match=r"batch-job-audit\.yaml: spec\.enforcement: 'audit' is not one of"):
        PolicySet.load([path], builtin=False)


def test_the_flag_the_schema_and_the_model_name_the_same_values() -> None:
    schema = POLICY_SCHEMA["properties"]["spec"]["properties"]["enforcement"]["enum"]
    assert tuple(schema) == ENFORCEMENT_CHOICES == t.get_args(Enforcement)


# --------------------------------------------------------------------------- the override


@pytest.mark.parametrize(
    ("mode", "override", "expected"),
    [
        pytest.param("deny", None, "deny", id="no flag: the policy's own deny"),
        pytest.param("warn", None, "warn", id="no flag: the policy's own warn"),
        pytest.param("deny", "warn", "warn", id="--enforcement warn overrides deny"),
        pytest.param("warn", "deny", "deny", id="--enforcement deny overrides warn"),
    ],
)
def test_with_enforcement_overrides_every_policy(
    tmp_path: Path, mode: str, override: Enforcement | None, expected: str
) -> None:
    policies = PolicySet.load([job_policy(tmp_path, mode)])
    overridden = policies.with_enforcement(override)
    enforcements = {p.name: p.enforcement for p in overridden.policies}
    assert enforcements == {"batch-job": expected, "batch-cronjob": override or "deny"}
    assert (overridden.gates, overridden.notes) == (policies.gates, policies.notes)
    if override is None:
        assert overridden is policies  # nothing to replace: the very set


# ---------------------------------------------------------------------------- the verdict


@pytest.mark.parametrize(
    ("obj", "warn", "status", "is_warned", "errors"),
    [
        pytest.param(job(min_count=10), True, Status.INVALID, True, [(INVALID, MIN)],
                     id="an invalid Job under a warn-mode policy is warned, errors kept"),
        pytest.param(job(min_count=10), False, Status.INVALID, False, [(INVALID, MIN)],
                     id="an invalid Job under a deny policy is denied"),
        pytest.param(job(min_count=8), True, Status.VALID, False, [],
                     id="a valid Job under a warn-mode policy is simply valid"),
        pytest.param(workload(0), True, Status.INVALID, False,
                     [(REQUIRED, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")],
                     id="a hand-written Workload is judged by no policy: denied in warn mode too"),
        pytest.param({"apiVersion": "x.example/v1", "kind": "Other"}, True, Status.SKIPPED, False, [],
                     id="an ungoverned kind stays skipped"),
    ],
)  # fmt: skip
def test_the_verdict_carries_the_judging_policys_enforcement(
    warn_mode: PolicySet,
    deny_mode: PolicySet,
    obj: Json,
    warn: bool,
    status: Status,
    is_warned: bool,
    errors: list[tuple[str, str]],
) -> None:
    policies = warn_mode if warn else deny_mode
    result = validate_object(obj, policies=policies)
    assert (result.status, result.warned, keys(result)) == (status, is_warned, errors)
    # A warned object is admitted, but nothing is compiled from it: it is not "allowed".
    assert result.allowed is (status is not Status.INVALID)


def test_a_reject_verdict_is_never_warned() -> None:
    # `wasp validate --reject Job` judges by no policy: the Job policy's warn mode is not its own.
    rejected = Result.judged("--reject", [forbidden(FieldPath.of("kind"), "rejected by --reject")], [])
    assert (rejected.warned, keys(rejected)) == (False, [(FORBIDDEN, "kind")])


def test_the_verdict_is_the_same_in_both_modes(warn_mode: PolicySet, deny_mode: PolicySet) -> None:
    # Only what is done with the errors changes: the same (type, field) pairs, the same warnings.
    obj = job(parallelism=2, min_count=3)
    judged = [validate_object(obj, policies=p) for p in (warn_mode, deny_mode)]
    assert keys(judged[0]) == keys(judged[1]) == [(INVALID, MIN)]
    assert judged[0].warnings == judged[1].warnings


# ----------------------------------------------------------------------------- the answer


def error(n: int, detail: str = "must be less than or equal to spec.parallelism (8)") -> t.Any:
    return invalid(FieldPath.parse(f"spec.roles[{n}].scheduling.schedulingPolicy.gang.minCount"), 10, detail)


@pytest.mark.parametrize(
    ("errors", "warnings", "expected"),
    [
        pytest.param([error(0)], [], [error(0).error()], id="one error: its denial line"),
        pytest.param(
            [error(0), error(1)], ["a gate is off"], [error(0).error(), error(1).error(), "a gate is off"],
            id="the denial lines first, then the object's own warnings",
        ),
        pytest.param([error(0), error(0)], [], [error(0).error()], id="a repeated line once, as in the denial"),
    ],
)  # fmt: skip
def test_warned_admits_with_the_denial_lines(
    errors: list[t.Any], warnings: list[str], expected: list[str]
) -> None:
    answer = warned("uid-1", errors, warnings)
    assert answer == {"uid": "uid-1", "allowed": True, "warnings": expected}


def test_warned_lines_are_the_denials_messages() -> None:
    errors = [error(0), error(1)]
    message = denied("u", errors)["status"]["message"]
    assert message == "[" + ", ".join(warned("u", errors)["warnings"]) + "]"


def test_warned_stays_inside_the_apiservers_warning_limits() -> None:
    errors = [error(i, "x" * 300) for i in range(150)]
    lines = warned("u", errors)["warnings"]
    assert all(len(line) <= WARNING_RUNES for line in lines)
    assert sum(map(len, lines)) <= WARNINGS_TOTAL_RUNES
    assert lines[0] == errors[0].error()[: WARNING_RUNES - 1] + "…"
    assert 1 < len(lines) < len(errors)  # the first errors are the ones kept


def test_a_policy_replaced_with_its_own_value_is_the_same_policy(warn_mode: PolicySet) -> None:
    policy = warn_mode.for_kind("batch/v1", "Job")
    assert policy is not None
    assert policy.enforced("warn") is policy and policy.enforced(None) is policy
    denying = policy.enforced("deny")
    assert denying.enforcement == "deny" and denying.build_options == policy.build_options
    assert denying.enforced("warn") == policy


# --------------------------------------------- a warned object's pods name groups that are created


TRAINER_POLICY: t.Final = Path(__file__).resolve().parents[2] / "examples" / "trainer" / "policy.yaml"


def _trainer(min_count: int, workers: int = 4) -> Json:
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "resnet", "namespace": "ml", "uid": "uid-resnet"},
        "spec": {"workers": workers, "scheduling": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
                 "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}},
    }  # fmt: skip


def _pod_of(owner: Json) -> Json:
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "controller": True}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml", "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "w", "image": "x"}]}}  # fmt: skip


@pytest.mark.parametrize(
    ("enforcement", "compiled"),
    [
        pytest.param("warn", True, id="warn: admitted, so it gets its groups, as a Job gets its objects"),
        pytest.param("deny", False, id="deny: never admitted, never compiled (FailedWorkloadCompilation)"),
    ],
)
def test_a_warned_object_gets_the_groups_its_stamped_pods_name(enforcement: str, compiled: bool) -> None:
    """minCount 9 for 4 workers is invalid; under warn the Trainer is admitted and its pods
    stamped, so the reconciler must create the PodGroup they name (a pod's schedulingGroup is
    immutable: a name nobody creates holds it forever)."""
    from webhook.governed.desired_groups import converge
    from webhook.governed.stamping import stamp_pod

    policies = PolicySet.load([TRAINER_POLICY]).with_enforcement(t.cast(t.Any, enforcement))
    trainer = _trainer(min_count=9)
    assert validate_object(trainer, policies=policies).warned is (enforcement == "warn")
    created = {o["metadata"]["name"] for o in converge(trainer, policies) if o["kind"] == "PodGroup"}
    assert bool(created) is compiled
    if compiled:
        stamped = stamp_pod(_pod_of(trainer), policies).object
        assert stamped["spec"]["schedulingGroup"]["podGroupName"] in created
