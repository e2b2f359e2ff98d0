"""Connection bounds for a ``socketserver`` probe port (``wasp serve``'s and ``wasp reconcile``'s).

A connection gets ``head_timeout`` from its accept to send its request line and headers (one
request per connection: both servers answer HTTP/1.0 and close, so there is no idle keep-alive
to bound), and every read or write on it waits at most that long. At ``max_connections`` the
oldest connection still sending its head is cut to make room, so silent or trickling clients
can neither pile up threads nor keep the kubelet's probes from an answer. The request handler
calls :meth:`Bounded.head_read` once the head is in.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import typing as t
from socketserver import BaseServer

__all__ = ["Bounded", "head_read"]

log = logging.getLogger("wasp.probes")


class Bounded(BaseServer):
    """Mixed in before a threading ``socketserver`` class (``class S(Bounded, ThreadingHTTPServer)``)."""

    daemon_threads = True
    # socketserver's 5 would drop a burst of connects, and a probe behind them would wait for
    # its SYN to be sent again (a second or more).
    request_queue_size = 128
    head_timeout: float = 5.0
    max_connections: int = 64

    def server_activate(self) -> None:
        super().server_activate()
        self._lock = threading.Lock()
        # Connections whose head has not all arrived, with the monotonic time of their accept.
        self._reading: dict[socket.socket, float] = {}
        self._open: set[socket.socket] = set()

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
        # logged once (socketserver would print a traceback to stderr).
        if not isinstance(sys.exc_info()[1], OSError):
            log.exception("internal error on the probe port")


def head_read(server: object, connection: socket.socket) -> None:
    """Called by a handler once its request head is in: the head deadline is met."""
    t.cast(Bounded, server).head_read(connection)


def _cut(request: socket.socket) -> None:
    """End a connection whose thread may be blocked reading it: the read returns at once."""
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already gone
