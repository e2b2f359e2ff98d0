"""The work queue's contract: level-based, coalesced, one worker per key, backoff on failure."""

from __future__ import annotations

import threading
import time

from webhook.reconciler.workqueue import WorkQueue


def test_a_key_added_twice_while_waiting_is_queued_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert [q.get(0)[0], q.get(0)[0]] == ["a", "b"]
    assert q.get(0) is None


def test_a_key_added_while_processed_comes_back_after_done_and_never_runs_twice_at_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    key, _ = q.get(0)
    q.add("a")  # a change arrives while a worker works on "a"
    assert q.get(0) is None  # not handed to a second worker
    q.done(key)
    assert q.get(0)[0] == "a"  # the change is not lost


def test_failures_back_off_exponentially_and_forget_resets() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.01, max_delay=0.04)
    assert [q.add_rate_limited("a") for _ in range(4)] == [0.01, 0.02, 0.04, 0.04]
    q.forget("a")
    assert q.add_rate_limited("a") == 0.01


def test_a_delayed_key_arrives_after_its_delay() -> None:
    q: WorkQueue[str] = WorkQueue()
    start = time.monotonic()
    q.add_after("a", 0.05)
    assert q.get(1.0)[0] == "a"
    assert time.monotonic() - start >= 0.05


def test_shutdown_wakes_a_waiting_worker() -> None:
    q: WorkQueue[str] = WorkQueue()
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.shutdown()
    worker.join(2)
    assert got == [None]


def test_the_fence_closes_once_a_renewal_is_older_than_the_renew_deadline() -> None:
    from webhook.reconciler.leader import Fence

    fence = Fence(renew_deadline=0.05)
    assert not fence.may_write()  # a follower never writes
    fence.renewed()
    assert fence.may_write()
    time.sleep(0.06)
    assert not fence.may_write()  # cut off from the API server: stop at once, before the Lease expires
    fence.renewed()
    fence.lost()
    assert not fence.may_write()
    assert Fence(always_open=True).may_write()  # --no-leader-elect


def test_resync_keys_wait_behind_changes_and_a_change_promotes_a_resync_key() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in ("r1", "r2", "r3"):
        q.add(key, resync=True)
    q.add("new")
    q.add("r3")  # a real change to a key the resync queued
    order = []
    while (item := q.get(0)) is not None:
        order.append(item[0])
        q.done(item[0])
    assert order == ["new", "r3", "r1", "r2"]
    assert len(q) == 0
