"""``/healthz``, ``/readyz`` and ``/metrics`` on a plain-HTTP port (stdlib server, a thread per connection).

* ``/healthz``: the loop's threads are alive (a restart helps otherwise);
* ``/readyz``: every informer has listed once (the caches can be trusted); a standby
  replica is ready too, since it is ready to take the Lease;
* ``/metrics``: :mod:`webhook.reconciler.metrics` in the Prometheus text format.

The port is bounded like the webhook's probe port: a connection has ``head_timeout`` from its
accept to send its request head (one request per connection: HTTP/1.0, so no idle keep-alive),
and every read or write waits at most that long. At ``max_connections`` the oldest connection
still sending its head is cut to make room, so silent or slow clients can neither pile up
threads nor keep the kubelet's probes from an answer.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import typing as t
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST

from webhook.reconciler import metrics

__all__ = ["HEAD_TIMEOUT", "MAX_CONNECTIONS", "ProbeServer"]

log = logging.getLogger("wasp.reconciler")

# Seconds from accept to a complete request head (a kubelet sends it at once).
HEAD_TIMEOUT: t.Final = 5.0
# Open connections at most: a kubelet and a scraper or two need a handful.
MAX_CONNECTIONS: t.Final = 32


class ProbeServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's 5 would drop a burst of connects, and a probe behind them would wait for
    # its SYN to be sent again (a second or more).
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        healthy: t.Callable[[], bool],
        ready: t.Callable[[], bool],
        *,
        head_timeout: float = HEAD_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.head_timeout, self.max_connections = head_timeout, max_connections
        self._lock = threading.Lock()
        # Connections whose head has not all arrived, with the monotonic time of their accept.
        self._reading: dict[socket.socket, float] = {}
        self._open: set[socket.socket] = set()
        super().__init__(address, _Handler)
        self.healthy, self.ready = healthy, ready
        self.thread = threading.Thread(target=self.serve_forever, name="probes", daemon=True)

    def start(self) -> ProbeServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()

    def process_request(self, request: t.Any, client_address: t.Any) -> None:
        with self._lock:
            if len(self._open) >= self.max_connections:
                if not self._reading:
                    request.close()  # every connection is being answered: refuse, do not queue
                    return
                oldest = min(self._reading, key=self._reading.__getitem__)
                del self._reading[oldest]
                _cut(oldest)  # its thread ends, and shutdown_request forgets it
            self._open.add(request)
            self._reading[request] = time.monotonic()
        request.settimeout(self.head_timeout)
        super().process_request(request, client_address)

    def head_read(self, request: socket.socket) -> None:
        with self._lock:
            self._reading.pop(request, None)

    def shutdown_request(self, request: t.Any) -> None:
        with self._lock:
            self._reading.pop(request, None)
            self._open.discard(request)
        super().shutdown_request(request)

    def service_actions(self) -> None:
        """Between accepts (every poll interval): cut heads past their deadline, so a client
        sending a byte now and then cannot stretch its connection past ``head_timeout``."""
        late = time.monotonic() - self.head_timeout
        with self._lock:
            for request in [r for r, since in self._reading.items() if since <= late]:
                del self._reading[request]
                _cut(request)

    def handle_error(self, request: t.Any, client_address: t.Any) -> None:
        # A client that timed out, was cut or went away is the client's doing; anything else is
        # logged (socketserver would print a traceback to stderr).
        if not isinstance(sys.exc_info()[1], OSError):
            log.exception("internal error on the probe port")


def _cut(request: socket.socket) -> None:
    """End a connection whose thread may be blocked reading it: the read returns at once."""
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already gone


class _Handler(BaseHTTPRequestHandler):
    server: ProbeServer

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the headers are read too: the head deadline is met
        self.server.head_read(self.connection)
        return parsed

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - the base class's name
        pass  # probes every few seconds would drown the log

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, metrics.exposition(), CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/readyz"):
            ok = self.server.healthy() if path == "/healthz" else self.server.ready()
            self._answer(200 if ok else 503, b"ok\n" if ok else b"not ready\n", "text/plain")
        else:
            self._answer(404, b"not found\n", "text/plain")

    def _answer(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
