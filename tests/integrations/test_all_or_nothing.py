"""All or nothing, for every integration, through the controller-chain replay (docs/decisions.md §30).

Each integration's controller chain is replayed (tests/integrations/chain.py, the builders of
each integration's own tests) while wasp's webhook restarts or is down at one step:

* a restart (``failurePolicy: Fail``, the default: a create during the restart is refused and
  the controller retries it afterwards, against a webhook whose caches listed again): every pod
  lands in a group;
* the first pod or child made while wasp was down under ``Ignore`` (or before wasp governed the
  kind, or before the gate was on: the object is the same outsider): nothing of the workload is
  grouped afterwards, so no gang is half-grouped;
* an outage in the middle under ``Ignore``: what was stamped before it stays (a pod's group is
  immutable), nothing made after the first outsider is stamped;
* a Workload someone else made names the object (its controller manages WAS natively, or
  decision 21's fallback): nothing is stamped.
"""

from __future__ import annotations

import copy
import typing as t

import pytest

from tests.integrations import test_jobset as js
from tests.integrations import test_leaderworkerset as lws
from tests.integrations import test_mpijob as mpi
from tests.integrations import test_raycluster as rc
from tests.integrations import test_rayjob as rj
from tests.integrations import test_trainjob as tj
from tests.integrations import test_volcano_job as vc
from tests.integrations.chain import Chain, jobset_jobs, running_pods
from tests.integrations.wasp_cli import gang
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths

Json = dict[str, t.Any]


def _jobset(chain: Chain) -> None:
    for job in jobset_jobs(chain, chain.create(js.jobset(js.DRIVER, js.WORKERS, blocks=gang()))):
        chain.job_pods(job, running_pods(job))


def _trainjob(chain: Chain) -> None:
    tj.replay(chain, tj.trainjob({"schedulingPolicy": {"gang": {}}}), 4)


def _rayjob(chain: Chain) -> None:
    rj.replay(chain, rj.rayjob())


def _raycluster(chain: Chain) -> None:
    rc.ray_pods(chain, chain.create(rc.raycluster(gang())))


def _mpijob(chain: Chain) -> None:
    mpi.replay(chain, chain.create(mpi.mpijob(gang(), workers=3)), 3)


def _volcano(chain: Chain) -> None:
    job = chain.create(vc.vcjob(gang(), replicas=(1, 3)))
    meta = job["metadata"]
    for task in job["spec"]["tasks"]:
        for i in range(task["replicas"]):
            labels = {"volcano.sh/job-name": meta["name"], "volcano.sh/task-spec": task["name"],
                      "volcano.sh/task-index": str(i)}  # fmt: skip
            chain.pod(task["template"], name=f"{meta['name']}-{task['name']}-{i}", by=job, labels=labels)


def _lws(chain: Chain) -> None:
    lws._replay(chain, chain.create(lws.lws(gang(), replicas=2, size=3)))


def _lws_policies() -> PolicySet:
    policies = PolicySet.load(integration_paths(["leaderworkerset"]))
    return lws.watched(policies, lws.lws(gang(), replicas=2, size=3))


# integration -> (policies, replay, pods outside the gang on purpose)
REPLAYS: dict[str, tuple[t.Callable[[], PolicySet], t.Callable[[Chain], None], tuple[str, ...]]] = {
    "jobset": (lambda: PolicySet.load(integration_paths(["jobset"])), _jobset, ()),
    "trainjob": (lambda: tj.policies(), _trainjob, tuple(tj.INITIALIZERS)),
    "trainjob+jobset": (lambda: tj.policies("trainjob", "jobset"), _trainjob, tuple(tj.INITIALIZERS)),
    "rayjob": (lambda: rj.policies(), _rayjob, tuple(rj.SUBMITTER)),
    "raycluster": (lambda: PolicySet.load(integration_paths(["raycluster"])), _raycluster, ()),
    "mpijob": (lambda: PolicySet.load(integration_paths(["mpijob"])), _mpijob, ()),
    "volcano-job": (lambda: PolicySet.load(integration_paths(["volcano-job"])), _volcano, ()),
    "leaderworkerset": (_lws_policies, _lws, ()),
}


def _run(name: str, down: t.Container[int] = (), foreign: t.Sequence[Json] = ()) -> Chain:
    make, replay, _ = REPLAYS[name]
    chain = Chain(make())
    chain.down = down
    chain.foreign = list(foreign)
    replay(chain)
    return chain


def _members(chain: Chain) -> list[int]:
    """Creation indices of the pods and child objects wasp stamps at their admission (the
    root, 0, apart)."""
    return [
        i for i, obj in enumerate(chain.objects)
        if i > 0 and chain.patched[f"{obj['kind']}/{obj['metadata']['name']}"]
    ]  # fmt: skip


def _grouped(chain: Chain, exempt: tuple[str, ...]) -> list[str]:
    return [
        p.pod for p in chain.landings() if p.group is not None and not p.pod.startswith(exempt or ("\0",))
    ]


@pytest.mark.parametrize("name", REPLAYS)
def test_a_restart_under_fail_groups_every_pod(name: str) -> None:
    """Creates refused while the webhook restarts are retried afterwards: the same replay, each
    admission against caches listed afresh; every pod lands in a group nobody forgets."""
    chain = _run(name)
    chain.check(left_alone={p: "outside the gang on purpose" for p in REPLAYS[name][2]})
    assert chain.half_grouped(REPLAYS[name][2]) == {}
    assert _grouped(chain, REPLAYS[name][2])


@pytest.mark.parametrize("name", REPLAYS)
def test_a_first_member_made_while_wasp_was_down_leaves_the_whole_workload_ungrouped(name: str) -> None:
    """The first pod or child made without wasp (down under Ignore, not installed yet, the gate
    off) is an outsider: none of the workload's later pods is stamped."""
    first = _members(_run(name))[0]
    chain = _run(name, down={first})
    assert chain.half_grouped(REPLAYS[name][2]) == {}
    assert _grouped(chain, REPLAYS[name][2]) == []


@pytest.mark.parametrize("name", REPLAYS)
def test_an_outage_in_the_middle_stamps_nothing_after_the_first_outsider(name: str) -> None:
    """What was stamped before the outage keeps its group (immutable); the reconciler reports
    the gang that cannot form (PodsOutsideGroup). Nothing wasp admits afterwards is stamped."""
    members = _members(_run(name))
    down = members[len(members) // 2]
    chain = _run(name, down={down})
    later = [f"{o['kind']}/{o['metadata']['name']}" for o in chain.objects[down + 1 :]]
    assert [k for k in later if chain.patched[k]] == []
    if down != members[-1]:  # later members were left alone, and told why
        assert any("outside" in w for k in later for w in chain.warnings[k])


@pytest.mark.parametrize("name", REPLAYS)
def test_a_workload_someone_else_made_stops_all_stamping(name: str) -> None:
    """A Workload naming the root, controlled by it, that wasp did not create: its controller
    manages WAS natively (or someone made it so: decision 21). Nothing is stamped."""
    root = _run(name).objects[0]
    group = root["apiVersion"].rpartition("/")[0]
    owner = {"apiVersion": root["apiVersion"], "kind": root["kind"], "name": root["metadata"]["name"],
             "uid": root["metadata"]["uid"], "controller": True}  # fmt: skip
    foreign = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
               "metadata": {"name": "native", "namespace": root["metadata"].get("namespace", "default"),
                            "ownerReferences": [owner]},
               "spec": {"controllerRef": {"apiGroup": group, "kind": root["kind"], "name": root["metadata"]["name"]}}}  # fmt: skip
    chain = _run(name, foreign=[foreign])
    assert _grouped(chain, ()) == []
    ours = _run(name)._planned()[0]  # the Workloads the reconciler makes: a control
    assert ours and _grouped(_run(name, foreign=ours), REPLAYS[name][2])
    byo = {**foreign, "metadata": {**foreign["metadata"], "ownerReferences": []}}
    assert _grouped(_run(name, foreign=[byo]), REPLAYS[name][2])  # bring-your-own (spec row 61): a control


@pytest.mark.parametrize("name", REPLAYS)
def test_wasps_own_workload_of_another_structure_stops_stamping(name: str) -> None:
    """Decision 21 with wasp's own Workload (a policy changed under it): the reconciler creates
    no group (UnsupportedWorkloadStructure), so no pod is stamped for one."""
    ours = copy.deepcopy(_run(name)._planned()[0])
    for workload in ours:
        for template in workload["spec"].get("podGroupTemplates", []):
            template["name"] = "renamed"
    assert _grouped(_run(name, foreign=ours), ()) == []
