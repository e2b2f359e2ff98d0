"""Hostile and normal clients for the fault suite (loopback only, every loop bounded).

Each misbehaving client is a raw socket held open at one stage of a request: silent TCP, a
partial ClientHello, half a request line, headers without their end, a body sent slowly. The
normal client is the apiserver's: one kept-alive TLS connection, a review per request, the
answer checked (an AdmissionReview with the uid echoed; a 5xx only as an InternalError answer).
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import typing as t
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import orjson

Json = dict[str, t.Any]
HOST: t.Final = "127.0.0.1"


def client_context(ca_file: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False  # the dev certificate names localhost and 127.0.0.1 anyway
    return context


class BadAnswer(AssertionError):
    """An answer the apiserver could not use, or a 5xx that is not an InternalError answer."""


def check_answer(status: int, body: bytes, uid: str | None) -> Json:
    """The decoded AdmissionReview; raises :class:`BadAnswer` for anything else."""
    try:
        answer = orjson.loads(body)
        response = answer["response"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise BadAnswer(f"HTTP {status} without an AdmissionReview body: {body[:300]!r}") from None
    if answer.get("kind") != "AdmissionReview" or answer.get("apiVersion") != "admission.k8s.io/v1":
        raise BadAnswer(f"HTTP {status}: not an AdmissionReview: {body[:300]!r}")
    if status >= 500 and response.get("status", {}).get("reason") != "InternalError":
        raise BadAnswer(f"HTTP {status} that is not an InternalError answer: {body[:300]!r}")
    if uid is not None and response.get("uid") != uid:
        raise BadAnswer(f"HTTP {status}: uid {response.get('uid')!r} is not the request's {uid!r}")
    return t.cast(Json, answer)


class ReviewClient:
    """One kept-alive HTTPS connection, like one of the apiserver's pooled connections."""

    def __init__(self, port: int, ca_file: Path, *, timeout: float = 5.0) -> None:
        self.port, self.ca_file, self.timeout = port, ca_file, timeout
        self.conn: http.client.HTTPSConnection | None = None

    def post(
        self, path: str, body: bytes, *, uid: str | None, headers: dict[str, str] | None = None
    ) -> tuple[int, Json]:
        if self.conn is None:
            # The CA file is read at each connect, as a client whose caBundle was updated would.
            context = client_context(self.ca_file)
            self.conn = http.client.HTTPSConnection(HOST, self.port, context=context, timeout=self.timeout)
        resp: http.client.HTTPResponse | None = None
        try:
            self.conn.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
            resp = self.conn.getresponse()
            data = resp.read()
        except Exception:
            # An answer with "Connection: close" owns the socket (http.client hands it over):
            # closing only the connection would leave it to the collector (a ResourceWarning,
            # an error under this suite's filterwarnings, when a read fails mid-answer).
            if resp is not None:
                resp.close()
            self.close()
            raise
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        return resp.status, check_answer(resp.status, data, uid)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


@dataclass
class LatencyProbe:
    """A normal client in a thread: one review every ``interval`` s until stopped (or ``limit``)."""

    port: int
    ca_file: Path
    body: t.Callable[[str], bytes]
    interval: float = 0.02
    limit: int = 2000
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> LatencyProbe:
        self._thread.start()
        return self

    def stop(self) -> LatencyProbe:
        self._stop.set()
        self._thread.join(30)
        return self

    def _run(self) -> None:
        client = ReviewClient(self.port, self.ca_file, timeout=5.0)
        for _ in range(self.limit):
            if self._stop.is_set():
                break
            uid = str(uuid.uuid4())
            started = time.perf_counter()
            try:
                client.post("/validate", self.body(uid), uid=uid)
            except Exception as exc:  # noqa: BLE001 - every failure is recorded
                self.failures.append(f"{type(exc).__name__}: {exc}")
            else:
                self.latencies.append(time.perf_counter() - started)
            self._stop.wait(self.interval)
        client.close()

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("inf")


# ------------------------------------------------------------------ misbehaving clients


def silent(port: int) -> socket.socket:
    """A TCP connection that never sends a byte."""
    return socket.create_connection((HOST, port), timeout=5)


def client_hello(ca_file: Path) -> bytes:
    """The bytes of a real ClientHello (from an in-memory handshake)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context(ca_file).wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def partial_hello(port: int, ca_file: Path) -> socket.socket:
    """A TCP connection that sent half a ClientHello."""
    sock = silent(port)
    hello = client_hello(ca_file)
    sock.sendall(hello[: len(hello) // 2])
    return sock


def tls(port: int, ca_file: Path) -> ssl.SSLSocket:
    raw = socket.create_connection((HOST, port), timeout=5)
    return client_context(ca_file).wrap_socket(raw, server_hostname="localhost")


def partial_line(port: int, ca_file: Path) -> ssl.SSLSocket:
    """A TLS connection that sent half a request line."""
    sock = tls(port, ca_file)
    sock.sendall(b"POST /valid")
    return sock


def partial_head(port: int, ca_file: Path) -> ssl.SSLSocket:
    """A TLS connection that sent a request line and some headers, never the blank line."""
    sock = tls(port, ca_file)
    sock.sendall(b"POST /validate HTTP/1.1\r\nHost: wasp\r\nContent-Type: application/json\r\n")
    return sock


def slow_body(port: int, ca_file: Path, size: int) -> ssl.SSLSocket:
    """A TLS connection that declared a ``size``-byte body and sent 1 KiB of it."""
    sock = tls(port, ca_file)
    sock.sendall(
        b"POST /validate HTTP/1.1\r\nHost: wasp\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {size}\r\n\r\n".encode()
        + b" " * 1024
    )
    return sock


def closed_by_server(sock: t.Any, timeout: float = 0.1) -> bool:
    """Whether the server closes ``sock`` within ``timeout`` (a reset counts)."""
    sock.settimeout(timeout)
    try:
        return bool(sock.recv(1) == b"")
    except TimeoutError:
        return False
    except OSError:
        return True


def read_answer(sock: t.Any, timeout: float, *, until_closed: bool = False) -> bytes:
    """What the server sends on ``sock`` until it closes it, a read times out, or (unless
    ``until_closed``) one final answer is whole; interim ``100 Continue`` answers stay in
    the bytes but do not end the read."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if until_closed:
                continue
            head, sep, body = data.replace(b"HTTP/1.1 100 Continue\r\n\r\n", b"").partition(b"\r\n\r\n")
            length = [
                int(v)
                for n, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                if n.lower() == b"content-length"
            ]
            if sep and length and len(body) >= length[0]:
                break
    except (OSError, ssl.SSLError):  # TimeoutError and resets are OSErrors
        pass
    return data


def raw_exchange(port: int, ca_file: Path, data: bytes, *, timeout: float = 5.0) -> tuple[int, bytes, bytes]:
    """Send ``data`` on a fresh TLS connection and read until the server closes it (or one
    whole answer arrived): the HTTP status, the head and the body."""
    sock = tls(port, ca_file)
    sock.settimeout(timeout)
    try:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            None,
        )
        while length is not None and len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    finally:
        sock.close()
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, head, body


class Pressure:
    """Keeps ``idle`` silent TLS connections and ``slow`` slow 6 MiB uploads open against a
    server from one thread, reconnecting each one the server closes, until :meth:`stop` or
    ``duration`` seconds (bounded: at most ``max_connects`` connections in all)."""

    def __init__(
        self, port: int, ca_file: Path, *, idle: int, slow: int, body_size: int = 6 << 20,
        rate: int = 2048, duration: float = 30.0, max_connects: int = 20_000,
    ) -> None:  # fmt: skip
        self.port, self.ca_file = port, ca_file
        self.idle, self.slow, self.body_size, self.rate = idle, slow, body_size, rate
        self.duration, self.max_connects = duration, max_connects
        self.connects = self.closed_by_server = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()

    def start(self) -> Pressure:
        self._thread.start()
        self.ready.wait(60)
        return self

    def stop(self) -> Pressure:
        self._stop.set()
        self._thread.join(30)
        return self

    def _open(self, kind: str) -> ssl.SSLSocket | None:
        if self.connects >= self.max_connects:
            return None
        self.connects += 1
        try:
            sock = (
                tls(self.port, self.ca_file)
                if kind == "idle"
                else slow_body(self.port, self.ca_file, self.body_size)
            )
        except OSError as exc:
            self.errors.append(f"{kind}: {exc}")
            return None
        sock.setblocking(False)
        return sock

    def _run(self) -> None:
        deadline = time.monotonic() + self.duration
        held: list[tuple[str, ssl.SSLSocket | None]] = []
        held += [("idle", self._open("idle")) for _ in range(self.idle)]
        held += [("slow", self._open("slow")) for _ in range(self.slow)]
        self.ready.set()
        per_turn = max(1, self.rate // 4)  # bytes per slow upload per quarter second
        while not self._stop.is_set() and time.monotonic() < deadline:
            for i, (kind, sock) in enumerate(held):
                if sock is None or not _alive(sock) or (kind == "slow" and not _send(sock, b" " * per_turn)):
                    if sock is not None:
                        self.closed_by_server += 1
                        sock.close()
                    held[i] = (kind, self._open(kind))
            self._stop.wait(0.25)
        for _, sock in held:
            if sock is not None:
                sock.close()


def _alive(sock: ssl.SSLSocket) -> bool:
    """False once the server closed (or answered and closed) the connection."""
    try:
        data = sock.recv(4096)
    except (ssl.SSLWantReadError, BlockingIOError):
        return True
    except (OSError, ssl.SSLError):
        return False
    return bool(data)  # b"": closed; an answer (a 408) is followed by the close


def _send(sock: ssl.SSLSocket, data: bytes) -> bool:
    try:
        sock.send(data)
        return True
    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
        return True
    except (OSError, ssl.SSLError):
        return False
