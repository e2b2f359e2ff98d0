"""Probes and metrics on a separate plain-HTTP port, served from the gunicorn arbiter.

Scraping and kubelet probes never need the serving certificate, and keep working while
workers restart. ``/readyz`` means *serving* (docs/design.md §9.9 C3, §9.10): a worker has
started and the TLS port accepts connections, and the certificate pair is currently valid;
the policies were loaded before any worker started. ``/metrics`` merges every worker's samples.
"""

from __future__ import annotations

import logging
import socket
import threading
import typing as t
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from flask import Flask, Response

from webhook.probeport.bounded import Bounded, head_read
from webhook.server import metrics

__all__ = ["ProbeServer", "create_probe_app", "listening_problems"]

log = logging.getLogger("wasp.probes")


# Open connections on the probe port at most: a kubelet, a scraper or two need a handful.
MAX_PROBE_CONNECTIONS: t.Final = 64


def listening_problems(host: str, port: int, *, timeout: float = 1.0) -> list[str]:
    """[] when the serving port accepts a TCP connection (a worker listens on it).

    Only a connect, no TLS: the kernel completes it whatever the workers are doing, so a
    worker busy with slow reviews is still ready, and the arbiter (which forks) never runs
    OpenSSL for it.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return []
    except OSError as exc:
        return [f"serving port {host}:{port} does not accept connections: {exc}"]


def create_probe_app(readiness: t.Callable[[], list[str]]) -> Flask:
    """``/healthz`` (the process answers), ``/readyz`` (``readiness()`` is empty), ``/metrics``."""
    app = Flask("webhook.server.probes")
    app.add_url_rule("/healthz", "healthz", lambda: Response("ok\n", 200, content_type="text/plain"))
    app.add_url_rule("/readyz", "readyz", lambda: readyz_response(readiness()))

    def metrics_view() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, 200, content_type=content_type)

    app.add_url_rule("/metrics", "metrics", metrics_view)

    @app.after_request
    def server_header(response: Response) -> Response:
        # wsgiref's default names the Python version; nothing here needs to tell.
        response.headers["Server"] = "wasp"
        return response

    return app


def readyz_response(problems: list[str]) -> Response:
    """200 ``ok``, or 503 with one problem per line (what ``kubectl describe pod`` shows)."""
    if problems:
        body = "not ready:\n" + "".join(f"- {p}\n" for p in problems)
        return Response(body, 503, content_type="text/plain")
    return Response("ok\n", 200, content_type="text/plain")


class _ThreadingServer(Bounded, ThreadingMixIn, WSGIServer):
    """One thread per connection, as wsgiref does, each one bounded (webhook.probeport)."""

    allow_reuse_address = True
    max_connections = MAX_PROBE_CONNECTIONS


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    # The Server header names the server, not the Python version it runs on.
    server_version = "wasp"
    sys_version = ""

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers too: the deadline is met
        head_read(self.server, self.connection)
        return parsed

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - stdlib signature
        pass  # probes every few seconds would drown the review log


class ProbeServer:
    """A small threaded WSGI server in a daemon thread; ``stop`` shuts it down."""

    def __init__(
        self, host: str, port: int, app: Flask, *, header_timeout: float = 5.0,
        max_connections: int = MAX_PROBE_CONNECTIONS,
    ) -> None:  # fmt: skip
        """``header_timeout``: the main port's (see _ThreadingServer)."""
        server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
        self._server: _ThreadingServer = make_server(
            host, port, app, server_class=server_class, handler_class=_QuietHandler
        )
        self._server.head_timeout = header_timeout
        self._server.max_connections = max_connections
        self._thread = threading.Thread(target=self._server.serve_forever, name="wasp-probes", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        log.info("probes and metrics listening", extra={"fields": {"port": self.port}})

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
