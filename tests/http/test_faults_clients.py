"""The fault suite (issue 17), clients: a real ``wasp serve`` on loopback against slow, idle
and hostile clients and bytes while a normal client measures. Bounded in count and time; any
5xx that is not an InternalError answer fails it (``faults.check_answer``)."""

from __future__ import annotations

import time
import typing as t
import uuid
from pathlib import Path

import orjson
import pytest
from apiserver import build_review
from conftest import (
    DEADLINES,
    FIRST_BYTE_WAIT,
    P99_LIMIT,
    ServerProcess,
    job,
    job_body,
    start_server,
)
from faults import (
    LatencyProbe,
    Pressure,
    ReviewClient,
    closed_by_server,
    partial_head,
    partial_hello,
    partial_line,
    raw_exchange,
    read_answer,
    silent,
    slow_body,
    tls,
)

pytestmark = pytest.mark.slow


# ------------------------------------------------------------------ slow and idle clients

Opener = t.Callable[[ServerProcess], t.Any]
SILENT_CLOSED_BY: t.Final = FIRST_BYTE_WAIT + 2 + 1  # the first-byte wait, --keepalive 2, a margin
HOSTILE: t.Final[list[tuple[Opener, int, bool, float]]] = [
    (lambda s: silent(s.port), 40, False, SILENT_CLOSED_BY),
    (lambda s: partial_hello(s.port, s.ca_file), 16, False, 6),
    (lambda s: partial_line(s.port, s.ca_file), 16, True, 6),
    (lambda s: partial_head(s.port, s.ca_file), 16, True, 6),
    (lambda s: slow_body(s.port, s.ca_file, 6 << 20), 16, True, 6),
]
HOSTILE_IDS: t.Final = [
    "40 silent TCP connections are closed after gunicorn's first-byte wait and --keepalive",
    "16 half ClientHellos are closed at the handshake deadline",
    "16 half request lines get a 408 at the head deadline",
    "16 heads without their blank line get a 408 at the head deadline",
    "16 slow 6 MiB uploads get a 408 at the body deadline",
]


@pytest.mark.parametrize(("opener", "count", "answered", "closed_by"), HOSTILE, ids=HOSTILE_IDS)
def test_slow_clients_do_not_slow_a_normal_client(
    fault_server: ServerProcess, opener: Opener, count: int, answered: bool, closed_by: float
) -> None:
    held = [opener(fault_server) for _ in range(count)]
    opened = time.monotonic()
    try:
        probe = LatencyProbe(fault_server.port, fault_server.ca_file, job_body, limit=150).start()
        time.sleep(1.5)
        readyz = fault_server.get("/readyz")[0]
        probe.stop()
        assert probe.failures == [] and len(probe.latencies) > 20
        assert probe.p99() < P99_LIMIT, probe.p99()
        assert readyz == 200
        for sock in held:
            data = read_answer(sock, max(0.01, closed_by - (time.monotonic() - opened)), until_closed=True)
            if answered:
                assert data.startswith(b"HTTP/1.1 408 "), data[:200]
                assert b'"kind":"AdmissionReview"' in data
        assert time.monotonic() - opened < closed_by, "the deadlines did not close the connections"
    finally:
        for sock in held:
            sock.close()


def test_hundreds_of_idle_and_slow_connections_at_once_leave_reviews_fast(
    fault_server: ServerProcess,
) -> None:
    pressure = Pressure(fault_server.port, fault_server.ca_file, idle=200, slow=60, duration=20).start()
    try:
        probe = LatencyProbe(fault_server.port, fault_server.ca_file, job_body, limit=400).start()
        readyz = []
        for _ in range(10):
            time.sleep(0.5)
            readyz.append(fault_server.get("/readyz")[0])
        probe.stop()
    finally:
        pressure.stop()
    assert probe.failures == [] and len(probe.latencies) > 50
    assert probe.p99() < P99_LIMIT, probe.p99()
    assert readyz == [200] * 10
    assert pressure.closed_by_server > 0, "the deadlines never closed a hostile connection"


# ---------------------------------------------------------------- hostile bytes on the wire

HEAD: t.Final = b"POST /validate HTTP/1.1\r\nHost: wasp\r\nContent-Type: application/json\r\n"
_REVIEW: t.Final = job_body("chunked")
CHUNKED_REVIEW: t.Final = b"%x\r\n%s\r\n0\r\n\r\n" % (len(_REVIEW), _REVIEW)
RAW: t.Final[list[tuple[bytes, int]]] = [
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n", 400),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"1" * 5000 + b"\r\n", 408),
    (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 400),
    (HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + CHUNKED_REVIEW, 400),
    (b"POST /validate HTTP/1.1\nHost: wasp\nContent-Type: application/json\nContent-Length: 2\n\n{}", 400),
    (HEAD + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", 400),
    (HEAD + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400),
    (HEAD + b"Content-Length: x\r\n\r\n", 400),
    (HEAD + b"Content-Length: " + str(8 << 20).encode() + b"\r\n\r\n", 413),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n800000\r\n" + b"a" * (7 << 20) + b"a" * 4096, 413),
    (HEAD + b"X-Pad: " + b"p" * (70 << 10) + b"\r\n\r\n", 431),
    (b"GARBAGE\r\n\r\n", 400),
    (b"POST /validate HTTP/9.9\r\nHost: wasp\r\n\r\n", 400),
    (HEAD + b"Content-Length: 9\r\n\r\n[1, 2, 3]", 400),
    (HEAD + b"Content-Length: 4100\r\n\r\n" + b"[" * 2050 + b"]" * 2050, 400),
]
RAW_IDS: t.Final = [
    "a chunk size that is not hexadecimal is a 400 AdmissionReview",
    "a chunk without its CRLF is a 400 AdmissionReview",
    "an absurd chunk size waits for its data: a 408 AdmissionReview at the body deadline",
    "a transfer coding other than chunked is a 400 AdmissionReview",
    "chunked after another coding is a 400 AdmissionReview, not read as plain chunked",
    "a head with bare-LF line endings is a 400 AdmissionReview at once",
    "chunked together with Content-Length is a 400 AdmissionReview",
    "conflicting Content-Length headers are a 400 AdmissionReview",
    "a Content-Length that is not a number is a 400 AdmissionReview",
    "a declared 8 MiB body is a 413 before it is read",
    "a chunked body past 7 MiB is a 413",
    "a 70 KiB head is a 431 AdmissionReview",
    "a request line that is not HTTP is a 400 AdmissionReview",
    "an unknown HTTP version is a 400 AdmissionReview",
    "a JSON array body is a 400 AdmissionReview",
    "JSON nested 2,050 deep is a 400 AdmissionReview",
]


@pytest.mark.parametrize(("data", "code"), RAW, ids=RAW_IDS)
def test_hostile_bytes_get_a_4xx_admission_review_and_a_closed_connection(
    fault_server: ServerProcess, data: bytes, code: int
) -> None:
    status, head, body = raw_exchange(fault_server.port, fault_server.ca_file, data)
    assert status == code, (head, body[:300])
    answer = orjson.loads(body)
    assert answer["kind"] == "AdmissionReview" and answer["response"]["status"]["code"] == code
    if code in (413, 431) or b"Transfer-Encoding" in data or b"Content-Length: x" in data:
        assert b"Connection: close" in head


def test_a_413_says_connection_close_so_no_next_request_is_lost(fault_server: ServerProcess) -> None:
    sock = tls(fault_server.port, fault_server.ca_file)
    try:
        sock.sendall(
            HEAD + b"Content-Length: " + str((7 << 20) + 1).encode() + b"\r\n\r\n" + b" " * (64 << 10)
        )
        data = read_answer(sock, 3.0, until_closed=True)
    finally:
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in head, head
    assert orjson.loads(body)["response"]["status"]["code"] == 413  # and then the server closed
    uid = str(uuid.uuid4())
    client = ReviewClient(fault_server.port, fault_server.ca_file)
    assert client.post("/validate", job_body(uid), uid=uid)[0] == 200
    client.close()


def test_uploads_past_the_buffer_budget_lose_the_body_that_passes_it_not_the_worker(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--max-buffered-mib", "8", "--workers", "1", *DEADLINES)
    held = []
    try:
        for size in (
            3,
            3,
            4,
        ):  # MiB sent of a declared 6 MiB body: 10 MiB in all, over 8: the third is refused
            sock = slow_body(server.port, server.ca_file, 6 << 20)
            sock.sendall(b" " * ((size << 20) - 1024))
            held.append(sock)
            time.sleep(0.3)
        answers = [read_answer(sock, 1.0, until_closed=True) for sock in held]
        refused = [a for a in answers if a.startswith(b"HTTP/1.1 413 ")]
        assert len(refused) == 1 and b'"kind":"AdmissionReview"' in refused[0], [a[:60] for a in answers]
        uid = str(uuid.uuid4())
        client = ReviewClient(server.port, server.ca_file)
        assert client.post("/validate", job_body(uid), uid=uid)[0] == 200
        client.close()
    finally:
        for sock in held:
            sock.close()
        assert server.stop() == 0


LARGE: t.Final[list[tuple[t.Callable[[], bytes], int]]] = [
    (lambda: orjson.dumps(build_review({**job(min_count=4), "metadata": {
        "name": "big", "annotations": {"example.com/blob": "x" * ((7 << 20) - 4096)}}}, uid="big")), 200),
    (lambda: b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","x":'
        + b"[" * ((7 << 20) // 2 - 200) + b"]" * ((7 << 20) // 2 - 200) + b"}}", 400),
    (lambda: orjson.dumps(build_review({**job(min_count=4), "spec": {"x": list(range(900_000))}}, uid="wide")), 200),
]  # fmt: skip
LARGE_IDS: t.Final = [
    "a valid Job with a 6.9 MiB annotation is answered",
    "7 MiB of nested arrays is a 400",
    "a 900,000-entry list in the object is answered",
]


@pytest.mark.parametrize(("make", "code"), LARGE, ids=LARGE_IDS)
def test_a_body_within_the_size_limit_is_answered(
    fault_server: ServerProcess, make: t.Callable[[], bytes], code: int
) -> None:
    body = make()
    assert len(body) <= 7 << 20
    client = ReviewClient(fault_server.port, fault_server.ca_file, timeout=30)
    status, answer = client.post("/validate", body, uid=None)
    client.close()
    # Answered whole, not cut by a deadline or the memory budget (bench_faults.py times it: < 1 s).
    assert status == code and answer["response"]["uid"] in ("big", "deep", "wide", "")


def test_at_max_connections_a_newcomer_is_served_once_silent_connections_time_out(tmp_path: Path) -> None:
    # gthread stops accepting at --max-connections; the kernel's backlog holds the newcomer
    # until gunicorn's first-byte wait and --keepalive have closed the silent ones.
    server = start_server(
        tmp_path, "--max-connections", "20", "--threads", "8", "--workers", "1", "--keepalive", "2"
    )
    held = [silent(server.port) for _ in range(20)]
    try:
        time.sleep(0.5)
        client = ReviewClient(server.port, server.ca_file, timeout=SILENT_CLOSED_BY + 2)
        uid = str(uuid.uuid4())
        assert client.post("/validate", job_body(uid), uid=uid)[0] == 200
        client.close()
        assert all(closed_by_server(sock, timeout=SILENT_CLOSED_BY) for sock in held)
    finally:
        for sock in held:
            sock.close()
        assert server.stop() == 0
