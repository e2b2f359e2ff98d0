"""``wasp reconcile`` against the STAND-IN API server (tests/standin: no kube-apiserver binary
can be obtained here). In every scenario the end state is checked whole: exactly the objects
the governed objects compile to exist, once each, with the compiled specs (no duplicate, none lost)."""

from __future__ import annotations

import time

import pytest

from .conftest import (
    SERVICES,
    TRAINERS,
    converged,
    expected,
    service_body,
    trainer_body,
    wait_converged,
    writes,
)

pytestmark = pytest.mark.slow


def _events(standin, reason: str) -> list[str]:
    return [e["involvedObject"]["name"] for e in standin.objects("v1/events") if e["reason"] == reason]


def test_cold_start_over_existing_objects_then_objects_created_during_the_run(standin, replicas) -> None:
    for i in range(20):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
    for i in range(3):
        standin.create(SERVICES, service_body(f"s{i}"))
    replica = replicas("--no-leader-elect")
    wait_converged(standin, what="cold start")
    assert replica.ready()
    for i in range(10):
        standin.create(TRAINERS, trainer_body(f"late{i}"))
    wait_converged(standin, what="objects created during the run")
    # Writes are exactly the objects created: one create per object, nothing else.
    standin.wait_for(lambda: writes(standin) == len(expected(standin)), timeout=5, what="write count")
    assert sorted(_events(standin, "WorkloadCreated")) == sorted(
        [f"t{i}" for i in range(20)] + [f"s{i}" for i in range(3)] + [f"late{i}" for i in range(10)]
    )


def test_an_unchanged_world_gets_no_write_on_resync(standin, replicas) -> None:
    for i in range(5):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
    replica = replicas("--no-leader-elect", "--resync-period", "1")
    wait_converged(standin, what="convergence")
    time.sleep(0.5)
    before, events = writes(standin), len(standin.objects("v1/events"))
    reconciled = replica.metric("wasp_reconcile_objects_total")
    standin.wait_for(
        lambda: replica.metric("wasp_reconcile_objects_total") >= reconciled + 10, what="two resyncs"
    )
    assert (writes(standin), len(standin.objects("v1/events"))) == (before, events)


def test_elastic_resize_patches_the_template_and_the_pod_group_in_place(standin, replicas) -> None:
    standin.create(TRAINERS, trainer_body("t", workers=4))
    replicas("--no-leader-elect")
    wait_converged(standin, what="creation")
    standin.request("PATCH", f"{TRAINERS}/t", {"spec": {"workers": 7}}, "application/merge-patch+json")
    wait_converged(standin, what="resize")
    group = standin.objects("scheduling.k8s.io/v1beta1/podgroups")[0]
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 7}}
    assert group["metadata"]["generation"] == 2  # patched in place, not recreated
    standin.wait_for(lambda: _events(standin, "GangResized") == ["t"], what="one GangResized event")
    message = next(e["message"] for e in standin.objects("v1/events") if e["reason"] == "GangResized")
    assert "Workload" in message and "PodGroup" in message and "4 → 7" in message


def test_an_invalid_object_is_never_compiled_and_its_event_says_why(standin, replicas) -> None:
    bad = trainer_body("bad", workers=2)
    bad["spec"]["scheduling"]["schedulingPolicy"]["gang"] = {"minCount": 5}
    standin.create(TRAINERS, bad)
    standin.create(TRAINERS, trainer_body("good"))
    replicas("--no-leader-elect")
    standin.wait_for(lambda: "bad" in _events(standin, "FailedWorkloadCompilation"), what="event")
    standin.wait_for(
        lambda: len(standin.objects("scheduling.k8s.io/v1beta1/workloads")) == 1, what="good one"
    )
    message = next(
        e["message"] for e in standin.objects("v1/events") if e["reason"] == "FailedWorkloadCompilation"
    )
    assert "spec.scheduling.schedulingPolicy.gang.minCount" in message


def test_injected_500s_and_dropped_watches_lose_nothing(standin, replicas) -> None:
    standin.fault(500, verb="create", plural="workloads", count=3)
    standin.fault(503, verb="create", plural="podgroups", count=3)
    standin.fault(500, verb="watch", plural="trainers", count=2)
    replicas("--no-leader-elect")
    for i in range(30):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
        if i % 10 == 5:
            standin.drop_watches()
    wait_converged(standin, what="convergence despite faults")


def test_a_410_on_resume_relists_and_catches_up(standin, replicas) -> None:
    replica = replicas("--no-leader-elect")
    standin.wait_for(replica.ready, what="ready")
    standin.create(TRAINERS, trainer_body("before"))
    wait_converged(standin, what="first object")
    # Objects change while the watches are down, then the history is compacted: the
    # resumed watches get 410 Gone and must list again to see the gap.
    standin.fault(500, verb="watch", count=1000)
    standin.drop_watches()
    for i in range(5):
        standin.create(TRAINERS, trainer_body(f"gap{i}"))
    standin.compact()
    standin.clear_faults()
    standin.wait_for(lambda: replica.metric("wasp_reconcile_relists_total") >= 1, timeout=30, what="relist")
    wait_converged(standin, what="catch-up after 410")


def test_a_reconciler_restarted_mid_stream_finishes_without_duplicates(standin, replicas) -> None:
    for i in range(400):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
    first = replicas("--no-leader-elect", identity="first")
    standin.wait_for(
        lambda: standin.stats().get("create workloads", 0) >= 5, what="some progress", step=0.005
    )
    first.kill()  # SIGKILL: no cleanup, writes cut anywhere
    assert not converged(standin)
    replicas("--no-leader-elect", identity="second")
    wait_converged(standin, what="the second run")


def test_two_replicas_race_for_the_lease_and_only_the_leader_writes(standin, replicas) -> None:
    a, b = replicas(identity="a"), replicas(identity="b")
    standin.wait_for(lambda: a.ready() and b.ready(), what="both ready")
    standin.wait_for(
        lambda: a.metric("wasp_reconcile_leader") + b.metric("wasp_reconcile_leader") == 1, what="one leader"
    )
    leader, standby = (a, b) if a.metric("wasp_reconcile_leader") == 1 else (b, a)
    for i in range(10):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
    wait_converged(standin, what="the leader's work")
    assert standby.metric("wasp_reconcile_actions_total") == 0
    assert standin.stats()["create workloads"] == 10  # nobody wrote twice
    leader.kill()
    standin.wait_for(lambda: standby.metric("wasp_reconcile_leader") == 1, timeout=15, what="failover")
    for i in range(10, 15):
        standin.create(TRAINERS, trainer_body(f"t{i}"))
    wait_converged(standin, what="the new leader's work")
    lease = standin.objects("coordination.k8s.io/v1/leases")[0]
    assert lease["spec"]["holderIdentity"] == ("b" if leader is a else "a")


def test_a_leader_stopped_by_sigterm_releases_the_lease_and_a_standby_takes_over_at_once(
    standin, replicas
) -> None:
    a = replicas(identity="a")
    standin.wait_for(lambda: a.metric("wasp_reconcile_leader") == 1, what="a leads")
    assert a.stop() == 0  # SIGTERM: the clean way out
    lease = standin.objects("coordination.k8s.io/v1/leases")[0]
    assert lease["spec"].get("holderIdentity") is None  # released, not left to expire
    b = replicas(identity="b")
    standin.wait_for(lambda: b.metric("wasp_reconcile_leader") == 1, timeout=15, what="b leads")
    lease = standin.objects("coordination.k8s.io/v1/leases")[0]
    assert lease["spec"]["holderIdentity"] == "b"


def test_startup_says_which_gate_or_runtime_config_is_missing(tmp_path) -> None:
    from tests.standin import StandIn

    from .conftest import CRDS, Replica

    args = [x for r in CRDS for x in ("--resource", r)]
    with StandIn(
        *args,
        "--hide",
        "scheduling.k8s.io/v1beta1/podgroups",
        "--hide",
        "scheduling.k8s.io/v1alpha3/compositepodgroups",
    ) as server:
        replica = Replica(server, tmp_path, "--no-leader-elect")
        assert replica.proc.wait(timeout=20) == 2
        replica.stop()
        text = replica.log.read_text()
    assert (
        "scheduling.k8s.io/v1beta1 does not serve podgroups: kube-apiserver needs --feature-gates=GenericWorkload=true"
        in text
    )
    assert "scheduling.k8s.io/v1alpha3 does not serve compositepodgroups" in text
    assert "CompositePodGroup=true" in text
