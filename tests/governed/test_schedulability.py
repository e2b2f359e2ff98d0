"""Schedulability (issue 26, docs/schedulability.md): a gang wasp admits is one that can form.

One table per kind of rule, each case an object built from the integration's sample (or a
Job) and the ``(type, field path, rule)`` findings it must get, denials and warnings apart;
controls (satisfiable gangs) must stay clean: no error and no schedulability warning.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.wasp_cli import wasp
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.vocab.errors import PolicyError

Json = dict[str, t.Any]
DATA = Path(__file__).resolve().parents[1] / "integrations" / "data"
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
GANG = f"{AT}.schedulingPolicy.gang"
MIN = f"{GANG}.minCount"
INTEGRATIONS = ["jobset", "leaderworkerset", "mpijob", "raycluster", "rayjob", "trainjob", "volcano-job"]
SAMPLES = {
    "jobset": "jobset/jobset.yaml",
    "lws": "leaderworkerset/lws.yaml",
    "mpijob": "mpijob/mpijob.yaml",
    "raycluster": "raycluster/raycluster.yaml",
    "rayjob": "rayjob/rayjob.yaml",
    "trainjob": "trainjob/trainjob.yaml",
    "volcano": "volcano-job/job.yaml",
}


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(INTEGRATIONS))


def sample(name: str, blocks: object = None, **edits: object) -> Json:
    """The integration's sample with ``blocks`` (``None``: the sample's own) and ``edits``:
    dotted paths (list indices as numbers) set to values (``...``: removed)."""
    obj = yaml.safe_load((DATA / SAMPLES[name]).read_text())
    obj = copy.deepcopy(obj)
    if blocks is not None:
        obj["metadata"].setdefault("annotations", {})[KEY] = json.dumps(blocks)
    for dotted, value in edits.items():
        put(obj, dotted, value)
    return obj


def put(obj: Json, dotted: str, value: object) -> None:
    *parents, last = [int(p) if p.isdigit() else p for p in dotted.split("__")]
    node: t.Any = obj
    for part in parents:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    if value is ...:
        del node[last]
    else:
        node[last] = value


def annotated(obj: Json, *keys: str) -> Json:
    obj["metadata"].setdefault("annotations", {}).update(dict.fromkeys(keys, "kubernetes.io/hostname"))
    return obj


JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
LWS_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def gang(min_count: int | None = None) -> Json:
    return {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}}


def job(blocks: Json | None = None, *, parallelism: int | None = 4, completions: int | None = None,
        template: Json | None = None, kind: str = "Job") -> Json:  # fmt: skip
    spec: Json = {
        "template": template
        or {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if blocks is not None:
        spec["scheduling"] = blocks
    if kind == "CronJob":
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}}  # fmt: skip
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def findings(
    policies: PolicySet, obj: Json, old: Json | None = None
) -> tuple[set[tuple[str, str, str]], list[str]]:
    result = validate_object(obj, old, policies=policies)
    errors = {(e.type.value.removeprefix("FieldValue"), str(e.field), e.origin) for e in result.errors}
    warned = [w for w in result.warnings if "schedulability rule" in w]
    return errors, warned


def rjob(name: str, replicas: int, parallelism: int, **extra: object) -> Json:
    return {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": parallelism, "completions": parallelism,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}, **extra}  # fmt: skip


DEPENDS = [rjob("init", 1, 2), rjob("workers", 3, 2, dependsOn=[{"name": "init", "status": "Complete"}])]
TWO = [rjob("driver", 1, 2), rjob("workers", 3, 2)]
SUBMITTER = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}

DENIED = [
    # --- job-concurrency: at most min(parallelism, completions) pods of a Job at once
    pytest.param(job(gang(3), completions=2), ("Invalid", "spec.scheduling.schedulingPolicy.gang.minCount", "job-concurrency"), id="job minCount above completions"),
    pytest.param(job(gang(), completions=2), ("Invalid", "spec.scheduling.schedulingPolicy.gang", "job-concurrency"), id="job default gang above completions"),
    pytest.param(job(gang(3), completions=2, kind="CronJob"), ("Invalid", "spec.jobTemplate.spec.scheduling.schedulingPolicy.gang.minCount", "job-concurrency"), id="cronjob minCount above completions"),
    # --- blocks-unread: blocks written on a template nobody reads
    pytest.param(job(gang(), template={"metadata": {"annotations": {KEY: "{}"}}, "spec": {"containers": []}}), ("Forbidden", f"spec.template.metadata.annotations[{KEY}]", "blocks-unread"), id="job pod template"),
    pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__template__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.replicatedJobs[0].template.spec.template.metadata.annotations[{KEY}]", "blocks-unread"), id="jobset pod template"),
    pytest.param(sample("lws", spec__leaderWorkerTemplate__workerTemplate__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.leaderWorkerTemplate.workerTemplate.metadata.annotations[{KEY}]", "blocks-unread"), id="lws workerTemplate"),
    pytest.param(sample("lws", spec__leaderWorkerTemplate__leaderTemplate__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations[{KEY}]", "blocks-unread"), id="lws leaderTemplate"),
    pytest.param(sample("raycluster", spec__headGroupSpec__template__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.headGroupSpec.template.metadata.annotations[{KEY}]", "blocks-unread"), id="raycluster head"),
    pytest.param(sample("raycluster", spec__workerGroupSpecs__0__template__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.workerGroupSpecs[0].template.metadata.annotations[{KEY}]", "blocks-unread"), id="raycluster worker group"),
    pytest.param(sample("rayjob", spec__submitterPodTemplate={"metadata": {"annotations": {KEY: "{}"}}, **SUBMITTER}), ("Forbidden", f"spec.submitterPodTemplate.metadata.annotations[{KEY}]", "blocks-unread"), id="rayjob submitter"),
    pytest.param(sample("mpijob", spec__mpiReplicaSpecs__Worker__template__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.mpiReplicaSpecs[Worker].template.metadata.annotations[{KEY}]", "blocks-unread"), id="mpijob worker"),
    pytest.param(sample("volcano", spec__tasks__1__template__metadata={"annotations": {KEY: "{}"}}), ("Forbidden", f"spec.tasks[1].template.metadata.annotations[{KEY}]", "blocks-unread"), id="volcano task"),
    # --- template-names-podgroup: a pod template that names its own PodGroup beside the blocks
    pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__template__spec__schedulingGroup={"podGroupName": "mine"}), ("Forbidden", "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup", "template-names-podgroup"), id="jobset names a podgroup"),
    pytest.param(sample("raycluster", gang(), spec__headGroupSpec__template__spec__schedulingGroup={"podGroupName": "mine"}), ("Forbidden", "spec.headGroupSpec.template.spec.schedulingGroup", "template-names-podgroup"), id="raycluster names a podgroup"),
    # --- sequenced-start: pods that exist only after others are ready
    pytest.param(sample("jobset", gang(), spec__replicatedJobs=DEPENDS), ("Invalid", GANG, "sequenced-start"), id="jobset dependsOn default gang"),
    pytest.param(sample("jobset", gang(3), spec__replicatedJobs=DEPENDS), ("Invalid", MIN, "sequenced-start"), id="jobset dependsOn minCount 3"),
    pytest.param(sample("jobset", gang(), spec__replicatedJobs=TWO, spec__startupPolicy={"startupPolicyOrder": "InOrder"}), ("Invalid", GANG, "sequenced-start"), id="jobset InOrder"),
    pytest.param(annotated(sample("jobset", gang()), JOBSET_EXCLUSIVE), ("Invalid", GANG, "sequenced-start"), id="jobset exclusive-topology"),
    pytest.param(annotated(sample("lws"), LWS_EXCLUSIVE), ("Invalid", GANG, "sequenced-start"), id="lws exclusive-topology"),
    pytest.param(sample("lws", spec__startupPolicy="LeaderReady"), ("Invalid", GANG, "sequenced-start"), id="lws LeaderReady"),
    pytest.param(sample("mpijob", gang(5), spec__launcherCreationPolicy="WaitForWorkersReady"), ("Invalid", MIN, "sequenced-start"), id="mpijob launcher under WaitForWorkersReady"),
    pytest.param(sample("volcano", spec__tasks__1__dependsOn={"name": ["ps"]}), ("Invalid", GANG, "sequenced-start"), id="volcano dependsOn"),
    # --- pods-never-exist: a RayJob on an existing cluster has no Ray pods
    pytest.param(sample("rayjob", gang(1), spec__clusterSelector={"ray.io/cluster": "shared"}), ("Invalid", MIN, "pods-never-exist"), id="rayjob clusterSelector minCount 1"),
    pytest.param(sample("rayjob", gang(), spec__clusterSelector={"ray.io/cluster": "shared"}), ("Invalid", GANG, "pods-never-exist"), id="rayjob clusterSelector default gang"),
    # --- mixed-group: one gang, one scheduler, one priority class
    pytest.param(sample("volcano", spec__tasks__1__template__spec__schedulerName="my-scheduler"), ("Invalid", "spec.tasks[1].template.spec.schedulerName", "mixed-group"), id="volcano two schedulers"),
    pytest.param(sample("lws", spec__leaderWorkerTemplate__leaderTemplate__spec__priorityClassName="high", spec__leaderWorkerTemplate__workerTemplate__spec__priorityClassName="low"), ("Invalid", "spec.leaderWorkerTemplate.workerTemplate.spec.priorityClassName", "mixed-group"), id="lws two priority classes"),
    # --- child-scheduling: a child Job template judged as the cluster judges the Job
    pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__scheduling=gang(5)), ("Forbidden", "spec.replicatedJobs[0].template.spec.scheduling", "child-scheduling"), id="jobset child gang beside the parent's"),
    pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__scheduling=gang(5), metadata__annotations=...), ("Invalid", "spec.replicatedJobs[0].template.spec.scheduling.schedulingPolicy.gang.minCount", "podCount"), id="jobset child minCount above parallelism"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "expected"), DENIED)
def test_an_impossible_gang_is_denied_at_the_users_field(
    policies: PolicySet, obj: Json, expected: tuple[str, str, str]
) -> None:
    errors, _ = findings(policies, obj)
    assert expected in errors, errors


WARNED = [
    pytest.param(sample("volcano", spec__schedulerName=...), "spec.tasks[0].template.spec.schedulerName", id="volcano defaults to the volcano scheduler"),
    pytest.param(sample("volcano", spec__schedulerName="volcano"), "spec.schedulerName", id="volcano spec.schedulerName volcano"),
    pytest.param(job(gang(), template={"spec": {"schedulerName": "other", "containers": []}}), "spec.template.spec.schedulerName", id="job with another scheduler"),
    pytest.param(sample("raycluster", gang(), spec__headGroupSpec__template__spec__schedulerName="yunikorn", spec__workerGroupSpecs__0__template__spec__schedulerName="yunikorn", spec__workerGroupSpecs__1__template__spec__schedulerName="yunikorn"), "spec.headGroupSpec.template.spec.schedulerName", id="raycluster yunikorn"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "path"), WARNED)
def test_a_scheduler_that_may_not_implement_was_is_a_warning(
    policies: PolicySet, obj: Json, path: str
) -> None:
    errors, warned = findings(policies, obj)
    assert not errors
    assert any(w.startswith(f"{path}: Invalid value") and "foreign-scheduler" in w for w in warned), warned


CLEAN = [
    pytest.param(job(gang(2), completions=2), id="job minCount within completions"),
    pytest.param(job(gang(), completions=4), id="job completions = parallelism"),
    pytest.param(job(gang(), completions=8), id="job completions above parallelism"),
    pytest.param(job(gang(), completions=None), id="job work queue"),
    pytest.param(job(gang(3), parallelism=0, completions=2), id="paused job (decision 10)"),
    pytest.param(job(gang(2), completions=2, kind="CronJob"), id="cronjob within"),
    pytest.param(annotated(sample("jobset", gang(3)), JOBSET_EXCLUSIVE), id="jobset exclusive-topology, one pod per Job"),
    pytest.param(annotated(sample("jobset"), JOBSET_EXCLUSIVE, "alpha.jobset.sigs.k8s.io/node-selector"), id="jobset exclusive with node-selector"),
    pytest.param(job(gang(), template={"spec": {"schedulerName": "default-scheduler", "containers": []}}), id="job default-scheduler"),
    pytest.param(sample("jobset", gang(2), spec__replicatedJobs=DEPENDS), id="jobset dependsOn minCount covering the first job"),
    pytest.param(sample("jobset", spec__replicatedJobs=TWO, spec__startupPolicy={"startupPolicyOrder": "AnyOrder"}), id="jobset AnyOrder"),
    pytest.param(sample("jobset", gang(2), spec__replicatedJobs=TWO, spec__startupPolicy={"startupPolicyOrder": "InOrder"}), id="jobset InOrder minCount of the first"),
    pytest.param(sample("lws", spec__startupPolicy="LeaderCreated"), id="lws LeaderCreated"),
    pytest.param(sample("lws", gang(1), spec__startupPolicy="LeaderReady"), id="lws LeaderReady minCount 1"),
    pytest.param(sample("lws", spec__leaderWorkerTemplate__leaderTemplate__spec__priorityClassName="high", spec__leaderWorkerTemplate__workerTemplate__spec__priorityClassName="high"), id="lws one priority class"),
    pytest.param(sample("mpijob", gang(), spec__launcherCreationPolicy="WaitForWorkersReady"), id="mpijob default under WaitForWorkersReady"),
    pytest.param(sample("mpijob", gang()), id="mpijob AtStartup"),
    pytest.param(sample("mpijob", gang(), spec__launcherCreationPolicy="WaitForWorkersReady", spec__mpiReplicaSpecs__Worker=...), id="mpijob WaitForWorkersReady without workers: the launcher at once"),
    pytest.param(sample("volcano"), id="volcano without dependsOn"),
    pytest.param(sample("volcano", gang(1), spec__tasks__1__dependsOn={"name": ["ps"]}), id="volcano dependsOn minCount of the first task"),
    pytest.param(sample("rayjob", gang()), id="rayjob without clusterSelector"),
    pytest.param(sample("rayjob", spec__clusterSelector={"ray.io/cluster": "shared"}, metadata__annotations=...), id="rayjob clusterSelector without blocks"),
    pytest.param(sample("raycluster", gang()), id="raycluster"),
    pytest.param(sample("trainjob", gang()), id="trainjob"),
    pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__scheduling=gang(2), metadata__annotations=...), id="jobset child gang alone, within parallelism"),
]  # fmt: skip


@pytest.mark.parametrize("obj", CLEAN)
def test_a_gang_that_can_form_gets_no_error_and_no_warning(policies: PolicySet, obj: Json) -> None:
    assert findings(policies, obj) == (set(), [])


def test_a_policy_may_turn_a_rule_to_warn_or_off_with_a_reason(tmp_path: Path) -> None:
    doc = yaml.safe_load(Path(integration_paths(["volcano-job"])[0]).read_text())
    obj = sample("volcano", spec__tasks__1__dependsOn={"name": ["ps"]})
    for action, denied, warned in (("deny", 1, 0), ("warn", 0, 1), ("off", 0, 0)):
        doc["spec"]["schedulability"]["rules"] = {
            "sequenced-start": {"action": action, "reason": "we run Volcano"}
        }
        (tmp_path / "v.yaml").write_text(yaml.safe_dump(doc))
        errors, warnings = findings(PolicySet.load([tmp_path / "v.yaml"]), obj)
        assert (len(errors), len(warnings)) == (denied, warned), action


def test_an_object_admitted_before_stays_editable(policies: PolicySet) -> None:
    # On update a finding the stored object had already is a warning, never a denial.
    old = sample("jobset", gang(), spec__replicatedJobs=DEPENDS)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    errors, warned = findings(policies, new, old)
    assert not errors
    assert any("sequenced-start" in w for w in warned)


@pytest.mark.parametrize(
    ("rules", "refused", "warned"),
    [
        pytest.param(None, True, 0, id="default: refused at load"),
        pytest.param({"action": "warn", "reason": "we know"}, False, 1, id="warn: a load warning"),
        pytest.param({"action": "off", "reason": "we know"}, False, 0, id="off"),
    ],
)
def test_delegating_a_leaf_under_a_composite_is_refused_at_load(
    tmp_path: Path, rules: Json | None, refused: bool, warned: int
) -> None:
    # The 1.37 Job controller finds delegated templates among the top-level podGroupTemplates
    # only (getPodGroupTemplateByName); the example's leaves sit under its composite root.
    doc = yaml.safe_load(
        (
            Path(__file__).resolve().parents[2] / "examples" / "jobset-per-replicated-job" / "policy.yaml"
        ).read_text()
    )
    doc["spec"]["stamping"]["childTemplates"][0].update(
        mode="delegate", children={"path": "replicas", "default": 1}
    )
    if rules is not None:
        doc["spec"]["schedulability"] = {"rules": {"delegation-unreachable": rules}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    if refused:
        with pytest.raises(
            PolicyError,
            match=r"spec\.stamping\.childTemplates\[0\]\.mode: delegate: .*getPodGroupTemplateByName",
        ):
            PolicySet.load([tmp_path / "p.yaml"])
    else:
        assert (
            len([w for w in PolicySet.load([tmp_path / "p.yaml"]).warnings if "delegation-unreachable" in w])
            == warned
        )


@pytest.mark.parametrize(
    ("flags", "warned"),
    [
        pytest.param((), True, id="volcano is not a WAS scheduler by default"),
        pytest.param(
            ("--was-schedulers", "default-scheduler,volcano"), False, id="listed with --was-schedulers"
        ),
    ],
)
def test_the_schedulers_that_implement_was_are_a_setting(
    tmp_path: Path, flags: tuple[str, ...], warned: bool
) -> None:
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(sample("volcano", spec__schedulerName="volcano")))
    code, out, _ = wasp(
        "validate", "--integrations", "volcano-job", "-o", "json", *flags, tmp_path / "job.yaml"
    )
    [result] = json.loads(out)["results"]
    assert code == 0 and result["errors"] == []
    assert any("foreign-scheduler" in w for w in result["warnings"]) is warned, result["warnings"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(sample("jobset", gang(), spec__replicatedJobs=["x", {"name": "a", "dependsOn": "b"}]), id="jobset elements of the wrong type"),
        pytest.param(sample("jobset", gang(), spec__startupPolicy="InOrder"), id="jobset startupPolicy a string"),
        pytest.param(sample("volcano", gang(), spec__tasks__1__dependsOn={"name": "ps"}), id="volcano dependsOn.name a string"),
        pytest.param(sample("volcano", gang(), spec__schedulerName=7), id="volcano schedulerName a number"),
        pytest.param(sample("lws", gang(), spec__leaderWorkerTemplate__workerTemplate="x", spec__startupPolicy=["LeaderReady"]), id="lws template a string"),
        pytest.param(sample("rayjob", gang(), spec__clusterSelector="shared"), id="rayjob clusterSelector a string"),
        pytest.param(sample("mpijob", gang(), spec__mpiReplicaSpecs__Worker__replicas="3", spec__launcherCreationPolicy="WaitForWorkersReady"), id="mpijob replicas a string"),
        pytest.param(job(gang(), completions="2"), id="job completions a string"),  # type: ignore[arg-type]
        pytest.param(sample("jobset", spec__replicatedJobs__0__template__spec__scheduling="x"), id="jobset child scheduling a string"),
    ],
)  # fmt: skip
def test_malformed_objects_get_errors_never_a_crash(policies: PolicySet, obj: Json) -> None:
    validate_object(obj, policies=policies)  # returns a verdict; raising fails the test
