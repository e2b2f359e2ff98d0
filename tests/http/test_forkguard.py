"""A fork of the arbiter must never cut through the probe's TLS work (webhook.server.forkguard):
a worker forked mid-handshake inherits OpenSSL's locks held and hangs in every handshake."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import typing as t

import pytest

from webhook.server import probes
from webhook.server.forkguard import ForkGuard

HOLD: t.Final = 0.4  # seconds a section is held open while the test forks


def fork_and_reap(child: t.Callable[[], None] = lambda: None, *, deadline: float = 5.0) -> tuple[float, int]:
    """Fork; the child runs ``child`` and exits 0 (1 if it raised). Returns how long ``fork()``
    took in the parent and the child's exit status (-1: still running at ``deadline``, killed)."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            child()
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    took = time.monotonic() - started
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return took, os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return took, -1


Section = t.Callable[[threading.Event, threading.Event], None]


def hold_open(section: Section) -> threading.Thread:
    """Run ``section(inside, leave)`` in a thread; return once it has set ``inside``, with a
    timer that sets ``leave`` after HOLD seconds."""
    inside, leave = threading.Event(), threading.Event()
    thread = threading.Thread(target=section, args=(inside, leave))
    thread.start()
    assert inside.wait(5)
    threading.Timer(HOLD, leave.set).start()
    return thread


def test_a_fork_waits_for_a_running_section() -> None:
    guard = ForkGuard()

    def section(inside: threading.Event, leave: threading.Event) -> None:
        with guard.section():
            inside.set()
            leave.wait(5)

    thread = hold_open(section)
    took, status = fork_and_reap()
    thread.join()
    assert status == 0
    assert took >= HOLD * 0.8, "fork() went through a running section"


def test_a_fork_is_not_starved_by_sections_that_keep_coming() -> None:
    guard = ForkGuard()
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            with guard.section():
                time.sleep(0.001)

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(10):
            took, status = fork_and_reap()
            assert status == 0
            assert took < 2.0
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def test_the_child_starts_with_no_section_running() -> None:
    guard = ForkGuard()

    def child() -> None:
        with guard.section():
            pass

    _, status = fork_and_reap(child, deadline=3.0)
    assert status == 0, "the child could not enter a section (the guard's lock came over held)"


def test_the_readiness_probe_tls_work_runs_inside_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    # serving_problems stands blocked in its connection (as it would mid-handshake): a fork
    # of the process must wait for it.
    def section(inside: threading.Event, leave: threading.Event) -> None:
        def connect(*_: object, **__: object) -> socket.socket:
            inside.set()
            leave.wait(5)
            raise ConnectionRefusedError("refused")

        monkeypatch.setattr(probes.socket, "create_connection", connect)
        assert probes.serving_problems("127.0.0.1", 9) != []

    thread = hold_open(section)
    took, status = fork_and_reap()
    thread.join()
    assert status == 0
    assert took >= HOLD * 0.8, "the arbiter could fork in the middle of the probe's TLS work"
