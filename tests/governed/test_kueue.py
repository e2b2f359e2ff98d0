"""Yield to Kueue (docs/coexistence.md): an object carrying Kueue's queue-name label keeps Kueue's
gang defaults, whichever of the two mutating webhooks runs first; wasp still validates it, still
stamps its pods (the groups exist across Kueue's suspend and admission), and ``wasp audit`` still
reports a Kueue pod group beside wasp's gang."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from webhook.governed import foreign_gangs
from webhook.governed.defaulting import default_object
from webhook.governed.mutation import mutate_object
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet, load_policy_file
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
REPO = Path(__file__).resolve().parents[2]
IMPLICIT_GANG = REPO / "examples" / "policies" / "batch-job-implicit-gang.yaml"
QUEUE = "kueue.x-k8s.io/queue-name"
GATES = FeatureGates({"GenericWorkload": True, "WorkloadWithJob": True})


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet([load_policy_file(IMPLICIT_GANG)], gates=GATES)


def job(
    *, labels: Json | None = None, scheduling: Json | None = None, annotations: Json | None = None
) -> Json:
    spec: Json = {"completionMode": "Indexed", "parallelism": 4, "completions": 4, "suspend": True,
                  "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}  # fmt: skip
    if scheduling is not None:
        spec["scheduling"] = scheduling
    meta: Json = {
        "name": "train",
        "namespace": "ml",
        "labels": labels or {},
        "annotations": annotations or {},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


KUEUE_GANG = {"schedulingPolicy": {"gang": {}}}  # Kueue's GangSchedulingByDefault (kueue#14091)
MINE = {"schedulingPolicy": {"gang": {"minCount": 2}}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(job(), KUEUE_GANG, id="control: no queue: wasp's default applies"),
        pytest.param(job(labels={QUEUE: "team-a"}), None, id="queued, wasp first: left for Kueue to default"),
        pytest.param(
            job(
                labels={QUEUE: "team-a"},
                scheduling=KUEUE_GANG,
                annotations={"kueue.x-k8s.io/gang-defaulted": "true"},
            ),
            KUEUE_GANG,
            id="queued, Kueue first: Kueue's value kept",
        ),  # fmt: skip
        pytest.param(
            job(labels={QUEUE: "team-a"}, scheduling=MINE), MINE, id="queued, the user's own gang kept"
        ),
        pytest.param(job(labels={QUEUE: ""}), None, id="queued with an empty queue name: still Kueue's"),
    ],
)
def test_wasp_defaulting_yields_to_kueue(policies: PolicySet, obj: Json, expected: Json | None) -> None:
    result = mutate_object(obj, policies, operation="CREATE")
    assert result.object["spec"].get("scheduling") == expected
    assert default_object(result.object, policies).roots == ()  # idempotent, in either order


def test_a_queued_job_is_still_validated(policies: PolicySet) -> None:
    bad = job(labels={QUEUE: "team-a"}, scheduling={"schedulingPolicy": {"gang": {"minCount": 9}}})
    verdict = validate_object(bad, policies=policies)
    assert not verdict.allowed
    assert [(e.type.value, str(e.field)) for e in verdict.errors] == [
        ("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")
    ]


def test_a_kueue_pod_group_is_still_reported_as_a_second_gang_system() -> None:
    pod = {"metadata": {"labels": {"kueue.x-k8s.io/pod-group-name": "g", QUEUE: "team-a"},
                        "annotations": {"kueue.x-k8s.io/pod-group-total-count": "4"}},
           "spec": {"schedulingGroup": {"podGroupName": "train-pg"}}}  # fmt: skip
    assert foreign_gangs.memberships(pod) == [("kueue", "g")]
    assert foreign_gangs.from_kueue("ml", "g", "4").native == {"schedulingPolicy": {"gang": {"minCount": 4}}}
