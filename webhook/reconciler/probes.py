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
import threading
import typing as t
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST

from webhook.probeport.bounded import Bounded, head_read
from webhook.reconciler import metrics

__all__ = ["HEAD_TIMEOUT", "MAX_CONNECTIONS", "ProbeServer"]

log = logging.getLogger("wasp.reconciler")

# Seconds from accept to a complete request head (a kubelet sends it at once).
HEAD_TIMEOUT: t.Final = 5.0
# Open connections at most: a kubelet and a scraper or two need a handful.
MAX_CONNECTIONS: t.Final = 32


class ProbeServer(Bounded, ThreadingHTTPServer):
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
        super().__init__(address, _Handler)
        self.healthy, self.ready = healthy, ready
        self.thread = threading.Thread(target=self.serve_forever, name="probes", daemon=True)

    def start(self) -> ProbeServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: ProbeServer

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # the headers are read too: the head deadline is met
        head_read(self.server, self.connection)
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
