"""A throttled API server is waited for as long as it asks (``Retry-After``), as client-go does.

The stand-in answers 429 the way the apiserver's max-in-flight and priority-and-fairness filters
do (text, ``Retry-After: <seconds>``); the test records the delay the worker asks its queue for,
instead of timing anything.
"""

from __future__ import annotations

import threading
import typing as t
from pathlib import Path

import pytest
from urllib3 import HTTPHeaderDict

from tests.standin import StandIn
from webhook.kube.api import MAX_RETRY_AFTER, Api, ApiException, connect, retry_after
from webhook.reconciler.controller import Options, Reconciler
from webhook.reconciler.leader import Fence
from webhook.reconciler.workqueue import WorkQueue

from .conftest import TRAINERS, trainer_body
from .worlds import policies


class RecordingQueue(WorkQueue[t.Any]):
    """Records each delay asked for, and retries at once (nothing here waits for a clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.delays: list[float] = []
        self.asked = threading.Event()

    def add_after(self, key: t.Any, delay: float) -> None:
        self.delays.append(delay)
        self.asked.set()
        super().add_after(key, 0)


def test_a_429_is_retried_no_sooner_than_its_retry_after(standin: StandIn, tmp_path: Path) -> None:
    standin.request("POST", TRAINERS, trainer_body("throttled"))
    standin.fault(429, verb="create", plural="workloads", count=1, retry_after=7)
    r = Reconciler(Api(connect(standin.kubeconfig(tmp_path / "kubeconfig.json"))), policies(),
                   Fence(always_open=True), Options(workers=1))  # fmt: skip
    queue = RecordingQueue()
    r.queue = queue
    r.start()
    try:
        assert queue.asked.wait(20), "the worker never retried the throttled create"
    finally:
        r.stop()
    assert queue.delays[0] >= 7


def _exc(status: int, retry: str | None) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.headers = HTTPHeaderDict({"Retry-After": retry} if retry is not None else {})
    return exc


@pytest.mark.parametrize(
    ("exc", "seconds"),
    [
        pytest.param(_exc(429, "7"), 7.0, id="429 with Retry-After seconds"),
        pytest.param(_exc(503, " 2 "), 2.0, id="503 with Retry-After seconds"),
        pytest.param(_exc(429, "3600"), MAX_RETRY_AFTER, id="an hour is capped"),
        pytest.param(
            _exc(429, "Wed, 21 Oct 2026 07:28:00 GMT"), 0.0, id="the HTTP-date form is not honoured"
        ),
        pytest.param(_exc(429, None), 0.0, id="429 without Retry-After"),
        pytest.param(_exc(409, "5"), 0.0, id="control: a 409 names no wait"),
        pytest.param(_exc(429, "-4"), 0.0, id="a negative value is no wait"),
        pytest.param(ValueError("x"), 0.0, id="control: not an API answer"),
    ],
)
def test_retry_after(exc: BaseException, seconds: float) -> None:
    assert retry_after(exc) == seconds
