"""The pure judgements behind audit and doctor: one governed object against what is observed,
foreign gangs and their native equivalent, and doctor's verdict per gathered fact."""

from __future__ import annotations

import copy
import typing as t
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.reconciler.worlds import policies, trainer
from webhook.doctor.checks import Endpoint, Facts, checks
from webhook.governed import foreign_gangs
from webhook.governed.drift import judge, judge_pod
from webhook.governed.reconcile import Observed
from webhook.governed.workloads import compile_object

Json = dict[str, t.Any]
POLICIES = policies()


def compiled(obj: Json) -> tuple[Json, list[Json]]:
    policy = POLICIES.for_object(obj)
    assert policy is not None
    out = compile_object(policy, obj, uid=obj["metadata"]["uid"])
    return copy.deepcopy(out.workload), copy.deepcopy(out.pod_groups)


def observed(workloads: list[Json], groups: list[Json], unstamped: int = 0) -> Observed:
    every = {(o["kind"], o["metadata"]["name"]): o for o in [*workloads, *groups]}
    return Observed(workloads, groups, lambda kind, name: every.get((kind, name)), unstamped)


def in_sync(obj: Json) -> Observed:
    workload, groups = compiled(obj)
    return observed([workload], groups)


def drifted(obj: Json) -> Observed:
    workload, groups = compiled(obj)
    groups[0]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 7
    return observed([workload], groups)


def workload_drift(obj: Json) -> Observed:
    workload, groups = compiled(obj)
    workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 7
    return observed([workload], groups)


def taken(obj: Json) -> Observed:
    workload, _ = compiled(obj)
    workload["metadata"].pop("ownerReferences")
    return Observed((), (), lambda kind, name: workload if kind == "Workload" else None)


def extra(obj: Json) -> Observed:
    workload, groups = compiled(obj)
    stray = copy.deepcopy(groups[0])
    stray["metadata"]["name"], stray["spec"]["workloadRef"]["templateName"] = "stray", "gone"
    return observed([workload], [*groups, stray])


GOOD = trainer("t", uid="u-1")
JUDGE = [
    pytest.param(GOOD, in_sync, [], id="in-sync"),
    pytest.param(GOOD, lambda o: observed([], []), [("Missing", "Workload", ""), ("Missing", "PodGroup", "")], id="missing"),
    pytest.param(GOOD, drifted, [("MinCountDrift", "PodGroup", "spec.schedulingPolicy.gang.minCount")], id="group-drift"),
    pytest.param(GOOD, workload_drift,
                 [("MinCountDrift", "Workload", "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")], id="workload-drift"),
    pytest.param(GOOD, taken, [("NameTaken", "Trainer", "")], id="name-taken"),
    pytest.param(GOOD, extra, [("Extra", "PodGroup", "")], id="extra"),
    pytest.param(GOOD, lambda o: observed([], [], unstamped=2), [("StartedWithoutGroups", "Trainer", "")], id="unstamped-pods"),
    pytest.param(trainer("t", uid="u-1", min_count=-1), lambda o: observed([], []),
                 [("FieldValueInvalid", "Trainer", "spec.scheduling.schedulingPolicy.gang.minCount")], id="invalid"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "world", "expected"), JUDGE)
def test_judge_reports_the_plans_writes_and_reports_as_findings(obj, world, expected) -> None:
    found = judge(obj, POLICIES, world(obj))
    assert [(f.type, f.object["kind"], f.path) for f in found] == expected


@pytest.mark.parametrize(("obj", "world"), [("missing", observed([], [])), ("invalid", observed([], []))])
def test_judge_validates_each_object_once(obj: str, world: Observed, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan is handed the verdict the findings come from: the object is not judged twice
    (it was, once for the findings and once inside the plan, in each of its two rounds)."""
    import webhook.governed.drift as audit
    import webhook.governed.reconcile as reconcile

    calls: list[object] = []

    def counted(*args: t.Any, **kwargs: t.Any) -> t.Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    real = audit.validate_object
    monkeypatch.setattr(audit, "validate_object", counted)
    monkeypatch.setattr(reconcile, "validate_object", counted)
    subject = trainer() if obj == "missing" else trainer(min_count=9)
    found = judge(subject, POLICIES, world)
    assert len(calls) == 1
    expected = "Missing" if obj == "missing" else "FieldValueInvalid"
    assert expected in {f.type for f in found}


def test_a_kind_no_policy_governs_is_not_judged() -> None:
    assert (
        judge({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, POLICIES, Observed())
        == []
    )


@pytest.mark.parametrize(
    ("group", "exists", "expected"),
    [
        pytest.param("pg", True, [], id="exists"),
        pytest.param("pg", False, [("PodGroupNotFound", "spec.schedulingGroup.podGroupName")], id="missing"),
        pytest.param("", False, [], id="no-group"),
    ],
)
def test_judge_pod(group: str, exists: bool, expected: list[tuple[str, str]]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"schedulingGroup": {"podGroupName": group}} if group else {}}  # fmt: skip
    assert [(f.type, f.path) for f in judge_pod(pod, lambda ns, name: exists)] == expected


GANGS = [
    pytest.param("volcano", {"minMember": 4, "priorityClassName": "high", "queue": "q", "minResources": {"cpu": "4"}},
                 {"schedulingPolicy": {"gang": {"minCount": 4}}, "priorityClassName": "high"}, {"queue", "minResources"},
                 id="volcano"),
    pytest.param("volcano", {"minMember": 2, "minTaskMember": {"ps": 1}}, {"schedulingPolicy": {"gang": {"minCount": 2}}},
                 {"minTaskMember"}, id="volcano-task-minimum"),
    pytest.param("scheduler-plugins", {"minMember": "3", "scheduleTimeoutSeconds": 10},
                 {"schedulingPolicy": {"gang": {"minCount": 3}}}, {"scheduleTimeoutSeconds"}, id="coscheduling"),
    pytest.param("scheduler-plugins", {}, {"schedulingPolicy": {"basic": {}}}, {"minMember"}, id="no-min-member"),
    pytest.param("volcano", "not a spec", {"schedulingPolicy": {"basic": {}}}, {"minMember"}, id="malformed-spec"),
]  # fmt: skip


@pytest.mark.parametrize(("system", "spec", "native", "untranslated"), GANGS)
def test_foreign_pod_groups_translate_to_building_blocks(system, spec, native, untranslated) -> None:
    gang = foreign_gangs.from_pod_group(system, {"metadata": {"name": "g", "namespace": "ml"}, "spec": spec})
    assert (gang.native, set(gang.untranslated)) == (native, untranslated)


@pytest.mark.parametrize(
    ("total", "native"),
    [pytest.param("3", {"schedulingPolicy": {"gang": {"minCount": 3}}}, id="count"),
     pytest.param(None, {"schedulingPolicy": {"basic": {}}}, id="absent")],
)  # fmt: skip
def test_kueue_groups_translate_their_total_count(total, native) -> None:
    assert foreign_gangs.from_kueue("ml", "g", total).native == native


def test_pods_say_which_foreign_gangs_they_are_in() -> None:
    pod = {"metadata": {"labels": {"kueue.x-k8s.io/pod-group-name": "k", "scheduling.x-k8s.io/pod-group": "c"},
                        "annotations": {"scheduling.k8s.io/group-name": "v"}}}  # fmt: skip
    assert foreign_gangs.memberships(pod) == [("volcano", "v"), ("scheduler-plugins", "c"), ("kueue", "k")]


NOW = datetime(2026, 12, 1, tzinfo=UTC)
SERVED = {
    "scheduling.k8s.io/v1beta1": frozenset({"workloads", "podgroups"}),
    "scheduling.k8s.io/v1alpha3": None,
}
LEASE = {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-11-30T23:59:55Z"}}
FACTS = [
    pytest.param({"version": {"major": "1", "minor": "37+"}}, "server-version", "pass", id="version-with-plus"),
    pytest.param({"version": {"major": "1", "minor": "36"}}, "server-version", "fail", id="old-version"),
    pytest.param({"version": {"nonsense": 1}}, "server-version", "fail", id="unparsable-version"),
    pytest.param({}, "api/compositepodgroups", "warn", id="optional-api-missing"),
    pytest.param({"kept": {"WorkloadWithJob": False}}, "gate/WorkloadWithJob", "warn", id="field-dropped"),
    pytest.param({"kept": {"WorkloadWithJob": True}}, "gate/WorkloadWithJob", "pass", id="field-kept"),
    pytest.param({"validating": None}, "webhook/validating", "fail", id="no-configuration"),
    pytest.param({"validating": {"metadata": {"name": "v"}, "webhooks": [{"name": "h", "clientConfig": {"caBundle": "%%%"}}]}},
                 "ca-bundle/validating", "fail", id="cabundle-not-base64"),
    pytest.param({"lease": LEASE}, "lease", "pass", id="fresh-lease"),
    pytest.param({"lease": {"spec": {**LEASE["spec"], "renewTime": "2026-11-30T23:00:00Z"}}}, "lease", "fail", id="stale-lease"),
    pytest.param({"lease": {"spec": {"leaseDurationSeconds": 15}}}, "lease", "fail", id="no-holder"),
    pytest.param({"service": {}, "endpoints": [Endpoint("10.0.0.1", 443, False)]}, "service", "fail", id="none-ready"),
    pytest.param({"service": {}, "endpoints": [Endpoint("10.0.0.1", 443, True)]}, "service", "pass", id="one-ready"),
]  # fmt: skip


@pytest.mark.parametrize(("facts", "check", "verdict"), FACTS)
def test_each_verdict_is_a_function_of_the_facts(facts: Json, check: str, verdict: str) -> None:
    found = {
        c.id: c
        for c in checks(
            Facts(**{"now": NOW, "version": {"major": "1", "minor": "37"}, "served": SERVED, **facts})
        )
    }
    assert found[check].verdict == verdict
    assert found[check].verdict == "pass" or found[check].fix


def test_no_answer_from_the_server_is_one_failing_check() -> None:
    assert [(c.id, c.verdict) for c in checks(Facts(now=NOW))] == [("server-version", "fail")]


def test_doctor_expects_what_charts_wasp_sets() -> None:
    """The chart's defaults are the settings doctor checks: a chart change must change both."""
    import yaml

    from webhook.doctor.install import Expected

    root = Path(__file__).resolve().parents[2] / "charts/wasp"
    hooks = yaml.safe_load((root / "values.yaml").read_text())["webhooks"]
    expected = Expected()
    # failurePolicy "" is Fail outside warn mode (wasp.failurePolicy in templates/_helpers.tpl).
    assert (hooks["failurePolicy"], hooks["validatingTimeoutSeconds"], hooks["mutatingTimeoutSeconds"]) == (
        "", expected.validating_timeout, expected.mutating_timeout)  # fmt: skip
    assert set(expected.failure_policy.values()) == {"Fail"}
    template = (root / "templates/validatingwebhookconfiguration.yaml").read_text()
    assert f"- name: {expected.validating_condition}" in template
    assert '{{ include "wasp.fullname" . }}-reconciler' in (root / "templates/_helpers.tpl").read_text()
