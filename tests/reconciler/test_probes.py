"""The reconciler's probe port is bounded: silent or slow clients are cut, and never keep the
kubelet's ``/healthz`` from an answer."""

from __future__ import annotations

import socket
import typing as t
import urllib.request

import pytest

from webhook.reconciler.probes import ProbeServer


@pytest.fixture
def serve() -> t.Iterator[t.Callable[..., ProbeServer]]:
    started: list[ProbeServer] = []

    def start(**bounds: t.Any) -> ProbeServer:
        server = ProbeServer(("127.0.0.1", 0), lambda: True, lambda: True, **bounds).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def healthz(server: ProbeServer) -> int:
    port = server.server_address[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        return int(answer.status)


def silent(server: ProbeServer) -> socket.socket:
    """A connection that never sends a byte (its reads give up after 5 s)."""
    sock = socket.create_connection(server.server_address[:2], timeout=5)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """The server ended the connection (an empty read or a reset), within the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_silent_clients_at_the_connection_cap_do_not_block_healthz(
    serve: t.Callable[..., ProbeServer],
) -> None:
    server = serve(head_timeout=60, max_connections=4)
    clients = [silent(server) for _ in range(4)]
    assert healthz(server) == 200
    # Room was made by cutting the oldest connection still sending its head.
    assert closed_by_server(clients[0])
    for sock in clients:
        sock.close()


def test_a_silent_client_is_cut_at_the_head_deadline(serve: t.Callable[..., ProbeServer]) -> None:
    server = serve(head_timeout=0.5)
    sock = silent(server)
    assert closed_by_server(sock)
    sock.close()
    assert healthz(server) == 200


def test_a_client_sending_its_head_a_byte_at_a_time_is_cut_at_the_head_deadline(
    serve: t.Callable[..., ProbeServer],
) -> None:
    server = serve(head_timeout=0.5)
    sock = silent(server)
    sock.settimeout(0.2)
    cut = False
    for byte in b"GET /healthz HTTP/1.1\r\nX-Padding: " + b"a" * 50:  # 50 bytes past 0.2 s each: 10 s
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            cut = True
            break
        if closed_by_server(sock):
            cut = True
            break
    sock.close()
    assert cut
