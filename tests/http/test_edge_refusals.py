"""The HTTP edge's last gaps (issue 17): deadlines and a connection bound on the probe port,
exactly one ``100 Continue`` and the refusal without the body, a 405 with ``Allow`` for every method
but POST on the admission paths, and a 415 for a body that is not UTF-8 JSON as it stands."""

from __future__ import annotations

import gzip
import threading
import time
import typing as t
import urllib.request

import orjson
import pytest
from conftest import ServerProcess, job_body, start_server
from faults import HOST, closed_by_server, read_answer, silent, tls
from flask.testing import FlaskClient

from webhook.server.probes import ProbeServer, create_probe_app

Json = dict[str, t.Any]


def get(port: int, path: str, timeout: float) -> int:
    with urllib.request.urlopen(f"http://{HOST}:{port}{path}", timeout=timeout) as resp:
        return int(resp.status)


# ------------------------------------------------------------------ the probe port, in-process


@pytest.fixture
def probes() -> t.Iterator[ProbeServer]:
    """A probe server with a 1 s head deadline and room for 8 connections."""
    server = ProbeServer(HOST, 0, create_probe_app(lambda: []), header_timeout=1.0, max_connections=8)
    server.start()
    yield server
    server.stop()


def test_the_probe_port_cuts_a_silent_or_trickling_head_at_its_deadline(probes: ProbeServer) -> None:
    silent_ones = [silent(probes.port) for _ in range(3)]
    trickle = silent(probes.port)
    opened = time.monotonic()
    stop = threading.Event()

    def send_slowly() -> None:  # a byte every 0.2 s: no single read waits past the deadline
        for byte in b"GET /healthz HTTP/1.1\r\nHost: wasp\r\n":
            if stop.wait(0.2):
                return
            try:
                trickle.send(bytes([byte]))
            except OSError:
                return

    sender = threading.Thread(target=send_slowly, daemon=True)
    sender.start()
    try:
        assert get(probes.port, "/healthz", timeout=1.0) == 200
        assert all(closed_by_server(s, timeout=2.5 - (time.monotonic() - opened)) for s in silent_ones)
        assert closed_by_server(trickle, timeout=max(0.1, 2.5 - (time.monotonic() - opened)))
        assert time.monotonic() - opened < 2.5, "the head deadline did not close the connections"
    finally:
        stop.set()
        sender.join(5)
        for sock in [*silent_ones, trickle]:
            sock.close()


def test_at_its_connection_bound_the_probe_port_cuts_the_oldest_waiting_head() -> None:
    server = ProbeServer(HOST, 0, create_probe_app(lambda: []), header_timeout=30.0, max_connections=8)
    server.start()
    held = [silent(server.port) for _ in range(20)]
    try:
        time.sleep(0.3)
        assert get(server.port, "/healthz", timeout=1.0) == 200
        closed = [closed_by_server(sock, timeout=0.1) for sock in held]
        assert all(closed[:12]), closed  # the oldest made room, long before the 30 s deadline
        assert not any(closed[13:]), closed  # the newest are still open (one made room for the GET)
    finally:
        for sock in held:
            sock.close()
        server.stop()


# --------------------------------------------------------------------- a real wasp serve


HEAD_TIMEOUT: t.Final = 2.0


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[ServerProcess]:
    """A 2 s head deadline (the default is 5 s): the probe port takes the main port's."""
    server = start_server(tmp_path_factory.mktemp("edge-server"), "--header-timeout", str(HEAD_TIMEOUT))
    yield server
    assert server.stop() == 0
    assert "Traceback" not in server.stderr()


@pytest.mark.slow
def test_silent_connections_to_the_probe_port_leave_the_probes_answering(edge_server: ServerProcess) -> None:
    held = [silent(edge_server.metrics_port) for _ in range(100)]
    opened = time.monotonic()
    try:
        for path in ("/healthz", "/readyz"):
            assert edge_server.get(path, timeout=2.0)[0] == 200, path
        # At most 64 connections: the oldest of the 100 made room at once.
        assert all(closed_by_server(sock, timeout=0.1) for sock in held[:36])
        deadline = HEAD_TIMEOUT + 1.5
        closed = [
            closed_by_server(sock, timeout=max(0.1, deadline - (time.monotonic() - opened))) for sock in held
        ]
        assert all(closed), closed.count(False)
        assert time.monotonic() - opened < deadline, "the head deadline did not close the connections"
    finally:
        for sock in held:
            sock.close()


def expect_head(method: str, path: str, length: int, *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: wasp", "Content-Type: application/json",
             f"Content-Length: {length}", "Expect: 100-continue", *extra]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


BODY: t.Final = job_body("expect-1")
EXPECT: t.Final[list[tuple[bytes, int]]] = [
    (expect_head("POST", "/validate", 8 << 20), 413),
    (expect_head("POST", "/validate", len(BODY), "Content-Encoding: gzip"), 415),
    (expect_head("POST", "/validate", len(BODY), "Content-Type: application/json; charset=utf-16")
     .replace(b"Content-Type: application/json\r\n", b"", 1), 415),
    (expect_head("PUT", "/validate", len(BODY)), 405),
    (expect_head("OPTIONS", "/mutate", len(BODY)), 405),
]  # fmt: skip
EXPECT_IDS: t.Final = [
    "a declared 8 MiB body gets the 413 without sending it",
    "a gzip body gets the 415 without sending it",
    "a UTF-16 body gets the 415 without sending it",
    "a PUT with a body gets the 405 without sending it",
    "an OPTIONS with a body gets the 405 without sending it",
]


@pytest.mark.slow
def test_expect_100_continue_gets_exactly_one_100_then_the_answer(edge_server: ServerProcess) -> None:
    sock = tls(edge_server.port, edge_server.ca_file)
    try:
        sock.sendall(expect_head("POST", "/validate", len(BODY)))
        interim = read_answer(sock, timeout=2.0)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim[:200]
        sock.sendall(BODY)
        final = read_answer(sock, timeout=5.0)
        assert final.startswith(b"HTTP/1.1 200 "), final[:200]
        assert orjson.loads(final.partition(b"\r\n\r\n")[2])["response"]["uid"] == "expect-1"
    finally:
        sock.close()


@pytest.mark.slow
@pytest.mark.parametrize(("head", "code"), EXPECT, ids=EXPECT_IDS)
def test_expect_100_continue_gets_the_refusal_before_the_body_is_sent(
    edge_server: ServerProcess, head: bytes, code: int
) -> None:
    """gunicorn sends its one 100 as soon as the head is in (RFC 9110 allows a final answer
    after it); the refusal follows without the client sending its body."""
    sock = tls(edge_server.port, edge_server.ca_file)
    try:
        sock.sendall(head)  # and no body: the client waits for the 100, as curl does
        data = read_answer(sock, timeout=3.0)
    finally:
        sock.close()
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    data = data.removeprefix(interim)
    assert data.startswith(f"HTTP/1.1 {code} ".encode()), data[:300]
    answer_head, _, body = data.partition(b"\r\n\r\n")
    assert interim not in data
    assert (b"Connection: close" in answer_head) is (code == 413), answer_head  # the 413's body is never read
    assert orjson.loads(body)["response"]["status"]["code"] == code


@pytest.mark.slow
def test_a_gzip_body_sent_whole_is_a_415_on_the_wire_and_the_connection_goes_on(
    edge_server: ServerProcess,
) -> None:
    """Its body was read whole, so the next review on the same connection is answered."""
    packed = gzip.compress(BODY)
    plain = expect_head("POST", "/validate", len(BODY)).replace(b"Expect: 100-continue\r\n", b"")
    head = expect_head("POST", "/validate", len(packed), "Content-Encoding: gzip").replace(
        b"Expect: 100-continue\r\n", b""
    )
    sock = tls(edge_server.port, edge_server.ca_file)
    try:
        sock.sendall(head + packed)
        refused = read_answer(sock, timeout=3.0)
        sock.sendall(plain + BODY)
        answered = read_answer(sock, timeout=3.0)
    finally:
        sock.close()
    assert refused.startswith(b"HTTP/1.1 415 "), refused[:300]
    assert answered.startswith(b"HTTP/1.1 200 "), answered[:300]


# -------------------------------------------------------------- methods and codings, in-process


@pytest.mark.parametrize(
    ("method", "path"),
    [("OPTIONS", "/validate"), ("OPTIONS", "/mutate"), ("GET", "/validate"), ("PUT", "/mutate"),
     ("DELETE", "/validate"), ("HEAD", "/mutate")],
    ids=["OPTIONS /validate", "OPTIONS /mutate", "GET /validate", "PUT /mutate", "DELETE /validate",
         "HEAD /mutate"],
)  # fmt: skip
def test_every_method_but_post_on_an_admission_path_is_a_405_with_allow_post(
    client: FlaskClient, method: str, path: str
) -> None:
    resp = client.open(path, method=method)
    assert resp.status_code == 405 and resp.headers["Allow"] == "POST"
    if method != "HEAD":
        answer = orjson.loads(resp.data)
        assert answer["kind"] == "AdmissionReview" and answer["response"]["status"]["code"] == 405


CODINGS: t.Final[list[tuple[dict[str, str], bytes, int, str]]] = [
    ({"Content-Encoding": "gzip"}, gzip.compress(BODY), 415, "Content-Encoding 'gzip'"),
    ({"Content-Encoding": "br"}, BODY, 415, "Content-Encoding 'br'"),
    ({"Content-Encoding": "identity, deflate"}, BODY, 415, "Content-Encoding 'identity, deflate'"),
    ({"Content-Type": "application/json; charset=utf-16"}, BODY.decode().encode("utf-16"), 415, "charset"),
    ({"Content-Type": "application/json; charset=latin-1"}, BODY, 415, "charset"),
    ({"Content-Encoding": "identity"}, BODY, 200, ""),
    ({"Content-Type": "application/json; charset=utf-8"}, BODY, 200, ""),
    ({"Content-Type": 'application/json; charset="UTF-8"'}, BODY, 200, ""),
]
CODING_IDS: t.Final = [
    "a gzip body is a 415",
    "a brotli body is a 415",
    "any coding but identity in a list is a 415",
    "a UTF-16 body is a 415",
    "a latin-1 charset is a 415",
    "the identity coding is accepted",
    "charset utf-8 is accepted",
    "a quoted upper-case UTF-8 charset is accepted",
]


@pytest.mark.parametrize(("headers", "body", "code", "message"), CODINGS, ids=CODING_IDS)
def test_a_body_that_is_not_utf8_json_as_it_stands_is_a_415(
    client: FlaskClient, headers: dict[str, str], body: bytes, code: int, message: str
) -> None:
    resp = client.post("/validate", data=body, headers={"Content-Type": "application/json", **headers})
    answer = orjson.loads(resp.data)
    assert resp.status_code == code, answer
    assert answer["kind"] == "AdmissionReview"
    if code == 415:
        status = answer["response"]["status"]
        assert status["code"] == 415 and message in status["message"] and "\n" not in status["message"]
        assert status["reason"] == "UnsupportedMediaType"
    else:
        assert answer["response"]["uid"] == "expect-1"
