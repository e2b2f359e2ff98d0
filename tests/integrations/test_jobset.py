"""The jobset integration: JobSet jobset.x-k8s.io/v1alpha2, one gang of every pod of the JobSet
(upstream's own gang example: one PodGroup), reached through the pod template of every child Job.
One PodGroup needs only the GenericWorkload gate (beta, on by default): no alpha gate.

Objects as the JobSet controller makes them (jobset ``pkg/controllers/jobset_controller.go``):
Jobs ``<jobset>-<rjob>-<i>`` owned by the JobSet, the JobSet keys as labels and annotations on
the Job and its pod template; pods as the Job controller makes them (tests/integrations/chain.py).
The per-replicated-job variant is tests/integrations/test_jobset_per_replicated_job.py.
"""

from __future__ import annotations

import copy
import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain, jobset_jobs, running_pods
from tests.integrations.wasp_cli import gang, validated, wasp
from webhook.governed.desired_groups import converge
from webhook.governed.reconcile import Observed, plan
from webhook.governed.validation import validate_object
from webhook.governed.workloads import pod_group_name
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.vocab.gates import DEFAULT_GATES

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data" / "jobset"
POLICY = integration_paths(["jobset"])[0]
KEY = "scheduling.wasp.dev/blocks"
AT = f"metadata.annotations[{KEY}]"
MIN_COUNT = f"{AT}.schedulingPolicy.gang.minCount"


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    # The default gates of 1.37: CompositePodGroup (alpha) is off.
    assert "CompositePodGroup" not in DEFAULT_GATES
    return PolicySet.load([POLICY])


def jobset(*rjobs: t.Mapping[str, object], blocks: object = None) -> Json:
    """A JobSet with replicated jobs ``{name, replicas?, parallelism?, completions?}`` on the
    sample's pod template, and ``blocks`` (an object, or JSON text) in its annotation."""
    sample = yaml.safe_load((DATA / "jobset.yaml").read_text())
    template = sample["spec"]["replicatedJobs"][0]["template"]
    out = copy.deepcopy(sample)
    out["metadata"]["uid"] = "uid-js"
    if blocks is None:
        del out["metadata"]["annotations"]
    else:
        out["metadata"]["annotations"][KEY] = blocks if isinstance(blocks, str) else json.dumps(blocks)
    if rjobs:
        out["spec"]["replicatedJobs"] = []
    for rjob in rjobs:
        tpl = copy.deepcopy(template)
        for field in ("parallelism", "completions"):
            tpl["spec"].pop(field, None)
            if field in rjob:
                tpl["spec"][field] = rjob[field]
        entry = {"name": rjob["name"], "template": tpl}
        if "replicas" in rjob:
            entry["replicas"] = rjob["replicas"]
        out["spec"]["replicatedJobs"].append(entry)
    return out


DRIVER = {"name": "driver", "parallelism": 1, "completions": 1}
WORKERS = {"name": "workers", "replicas": 2, "parallelism": 4, "completions": 4}


# --- the policy and the CLI ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(jobset(blocks=gang(6)), [], id="the upstream gang example: 3 x 2 = 6"),
        pytest.param(jobset(blocks=gang()), [], id="a gang whose minCount follows the pods"),
        pytest.param(jobset(), [], id="no blocks"),
        pytest.param(jobset(DRIVER, WORKERS, blocks=gang(9)), [], id="a driver and 2 x 4 workers: 9"),
        pytest.param(
            jobset(blocks=gang(7)),
            [("FieldValueInvalid", MIN_COUNT)],
            id="a gang larger than 3 x 2 pods",
        ),
        pytest.param(
            jobset(DRIVER, WORKERS, blocks=gang(10)),
            [("FieldValueInvalid", MIN_COUNT)],
            id="a gang larger than every replicated job's pods together",
        ),
        pytest.param(
            jobset({"name": "workers", "replicas": 3, "parallelism": 4, "completions": 2}, blocks=gang(7)),
            [("FieldValueInvalid", MIN_COUNT)],
            id="completions below parallelism: 3 x 2 pods run at once",
        ),
        pytest.param(
            jobset({"name": "workers", "replicas": 3}, blocks=gang(4)),
            [("FieldValueInvalid", MIN_COUNT)],
            id="parallelism defaults to 1: 3 pods",
        ),
        pytest.param(
            jobset(blocks='{"schedulingPolicy": {"gang": {"minCount": 6}},}'),
            [("FieldValueInvalid", AT)],
            id="a JSON syntax error names the annotation",
        ),
        pytest.param(
            jobset(blocks={**gang(6), "priority": 1}),
            [("FieldValueForbidden", f"{AT}.priority")],
            id="an unknown block is forbidden inside the annotation",
        ),
        pytest.param(
            jobset(blocks={"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}),
            [("FieldValueInvalid", f"{AT}.disruptionMode")],
            id="basic with disruption mode all",
        ),
        pytest.param(
            jobset(blocks=gang(0)),
            [("FieldValueInvalid", MIN_COUNT)],
            id="a gang of zero pods",
        ),
    ],
)
def test_validate_reports_mistakes_at_the_users_field(tmp_path: Path, obj: Json, expected: list) -> None:
    assert validated(tmp_path, obj, "--integrations", "jobset") == (expected, 1 if expected else 0)


@pytest.mark.parametrize(
    ("obj", "pods"),
    [
        pytest.param(jobset(blocks=gang()), 6, id="upstream's example: 3 Jobs of 2 pods"),
        pytest.param(jobset(DRIVER, WORKERS, blocks=gang()), 9, id="a driver and 2 x 4 workers"),
        pytest.param(
            jobset({"name": "workers", "parallelism": 4, "completions": 2}, blocks=gang()),
            2,
            id="replicas default to 1, and completions bound the pods running at once",
        ),
        pytest.param(
            jobset({"name": "workers", "replicas": 0}, DRIVER, blocks=gang()),
            1,
            id="a replicated job of 0 replicas counts no pods",
        ),
    ],
)
def test_compile_min_count_is_the_pod_count_without_any_alpha_gate(
    tmp_path: Path, policies: PolicySet, obj: Json, pods: int
) -> None:
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, err = wasp("compile", "--integrations", "jobset", "-o", "json", path)
    assert code == 0, err
    workload, group = json.loads(out)["items"]
    assert (workload["kind"], group["kind"]) == ("Workload", "PodGroup")
    assert [tpl["name"] for tpl in workload["spec"]["podGroupTemplates"]] == ["gang-jobset"]
    assert "compositePodGroupTemplates" not in workload["spec"]
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": pods}}
    # The real pod count, as the JobSet and Job controllers make the pods.
    chain = Chain(policies)
    for job in jobset_jobs(chain, chain.create(obj)):
        chain.job_pods(job, running_pods(job))
    assert len(chain.check()) == pods


def test_the_pod_group_takes_the_first_replicated_jobs_priority_class(tmp_path: Path) -> None:
    obj = jobset(DRIVER, WORKERS, blocks=gang())
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, err = wasp("compile", "--integrations", "jobset", "-o", "json", path)
    assert code == 0, err
    assert [i["spec"].get("priorityClassName") for i in json.loads(out)["items"]] == [None, "high"]


# --- the replay ---------------------------------------------------------------------------------


def test_every_pod_of_every_job_lands_in_the_one_pod_group_the_reconciler_creates(
    policies: PolicySet,
) -> None:
    chain = Chain(policies)
    stored = chain.create(jobset(DRIVER, WORKERS, blocks=gang(9)))
    # The reconciler, with 1.37's default gates, creates the Workload and its one PodGroup.
    assert [w.kind for w in plan(stored, policies, Observed()).writes] == ["Workload"]
    jobs = jobset_jobs(chain, stored)
    assert [j["metadata"]["name"] for j in jobs] == ["gang-jobset-driver-0", "gang-jobset-workers-0",
                                                     "gang-jobset-workers-1"]  # fmt: skip
    for job in jobs:
        chain.job_pods(job, running_pods(job))
    landings = chain.check()
    expected = pod_group_name("gang-jobset", "uid-js", "gang-jobset")
    assert chain.desired() == {expected}
    assert (len(landings), {p.group for p in landings}) == (9, {expected})


def test_a_stamped_child_job_passes_the_built_in_job_policy(policies: PolicySet) -> None:
    chain = Chain(policies)
    for job in jobset_jobs(chain, chain.create(jobset(DRIVER, WORKERS, blocks=gang()))):
        # Stamped with the JobSet's group, and nothing in the Job's spec.scheduling.
        assert "scheduling" not in job["spec"]
        assert job["spec"]["template"]["spec"]["schedulingGroup"] == {
            "podGroupName": pod_group_name("gang-jobset", "uid-js", "gang-jobset")
        }
        verdict = validate_object(job, policies=policies)
        assert (verdict.allowed, verdict.errors) == (True, ())
        # The Job belongs to the JobSet: the reconciler makes it no Workload of its own.
        assert plan(job, policies, Observed()).writes == ()


def test_a_jobset_without_blocks_still_gets_one_group_for_all_its_pods(policies: PolicySet) -> None:
    chain = Chain(policies)
    for job in jobset_jobs(chain, chain.create(jobset(DRIVER, WORKERS))):
        chain.job_pods(job, running_pods(job))
    assert len({p.group for p in chain.check()}) == 1


# --- a replicated job's own annotation (the per-replicated-job example's) ------------------------


def _with_rjob_blocks(obj: Json, blocks: object) -> Json:
    obj["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {KEY: json.dumps(blocks)}}
    return obj


def _both_rjobs_with_blocks() -> Json:
    obj = jobset(DRIVER, WORKERS)
    for rjob in obj["spec"]["replicatedJobs"]:
        rjob["template"]["metadata"] = {"annotations": {KEY: json.dumps(gang(1))}}
    return obj


def _rjob_blocks_at(i: int) -> str:
    return f"spec.replicatedJobs[{i}].template.metadata.annotations[{KEY}]"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            _with_rjob_blocks(jobset(), gang(6)),
            [("FieldValueForbidden", _rjob_blocks_at(0))],
            id="blocks on a replicated job are refused at their own field, not ignored",
        ),
        pytest.param(
            _with_rjob_blocks(jobset(blocks=gang(6)), gang(1)),
            [("FieldValueForbidden", _rjob_blocks_at(0))],
            id="beside the JobSet's own blocks too",
        ),
        pytest.param(
            _both_rjobs_with_blocks(),
            [("FieldValueForbidden", _rjob_blocks_at(0)), ("FieldValueForbidden", _rjob_blocks_at(1))],
            id="every replicated job that has them",
        ),
    ],
)
def test_a_replicated_jobs_annotation_is_refused_at_its_field(
    tmp_path: Path, obj: Json, expected: list[tuple[str, str]]
) -> None:
    assert validated(tmp_path, obj, "--integrations", "jobset") == (expected, 1)


def test_a_refused_field_the_stored_jobset_already_has_is_let_through_on_update(policies: PolicySet) -> None:
    # Ratcheting, as for every rule: a JobSet stored before the policy refused the field can
    # still be updated (its other fields), and a new value is refused.
    old = _with_rjob_blocks(jobset(), gang(6))
    assert validate_object(copy.deepcopy(old), old, policies=policies).errors == ()
    changed = _with_rjob_blocks(jobset(), gang(5))
    assert [(e.type.value, str(e.path)) for e in validate_object(changed, old, policies=policies).errors] == [
        ("FieldValueForbidden", _rjob_blocks_at(0))
    ]


def plan_objects(obj: Json, policies: PolicySet) -> list[Json]:
    """The Workload and groups the reconciler creates for ``obj``, from nothing."""
    return converge(obj, policies)
