"""``WaspWorker``: gunicorn's gthread worker, with every phase a client controls kept out of the threads.

gunicorn's ``ThreadWorker`` hands a connection to a worker thread as soon as it is accepted
(or, kept alive, as soon as it is readable): the thread then waits up to 5 s for a first
byte, does the TLS handshake and reads the request line, headers and body, with no
deadline. Eight clients that send half a request line hold a 2 × 4-thread server.

Here the worker's event loop does all of that itself, non-blocking, each phase with its own
deadline (:class:`ConnectionLimits`): the TLS handshake, the request head from its first
byte, the body from the end of the head, and the idle wait between requests. A thread gets
a connection only once its whole request is buffered (:class:`webhook.server.framing.Framing`
says where it ends); gunicorn's parser and the WSGI app then run as before, reading from
that buffer. So a slow or silent client costs a socket and its bytes, never a thread.

Connections do not stay forever: one older than ``max_age`` (jittered down by up to a
fifth) or past ``max_requests`` gets its next answer with ``Connection: close``, so after a
worker restart clients reconnect and the kernel spreads them over the workers again
(``reuse_port``). At ``max_connections`` the longest-waiting connection that no thread
holds is closed to make room, so idle connections cannot lock newcomers out.

A request that cannot be framed (a bad chunk, conflicting lengths, a body over the limit)
goes to a thread at once with what has arrived, so gunicorn's parser or the admission view
answers it with a 4xx, and the connection closes after that answer; a head past its limit is
answered (431) by the loop itself, as are the deadlines (408). Threads parse from a parser
over the buffered bytes, never from the socket, so no thread ever waits for a client's bytes;
the socket's timeout (``header_timeout``) bounds writing an answer to a client that does not
read it.
"""

from __future__ import annotations

import errno
import logging
import random
import selectors
import socket
import ssl
import time
import typing as t
from functools import partial

from gunicorn import http
from gunicorn import sock as gsock
from gunicorn.workers.gthread import ThreadWorker

from webhook.server import http_errors, metrics
from webhook.server.connections import CUT_REVIEWS, ConnectionLimits, Phase, TConn
from webhook.server.framing import Framing, Progress
from webhook.server.threadside import ThreadSide
from webhook.server.tls import peer_allowed

__all__ = ["CUT_REVIEWS", "ConnectionLimits", "WaspWorker", "worker_class"]

log = logging.getLogger("wasp.connections")

# How long a stopping worker keeps idle connections (a request already on its way is still
# answered, with Connection: close), and how long a closing connection is drained.
STOP_LINGER: t.Final = 2.0
CLOSE_LINGER: t.Final = 1.0
_READ_SIZE: t.Final = 256 * 1024
# Bytes one connection may read per loop turn, so one fast large body cannot starve the others.
_READ_TURN: t.Final = 1 << 20
_TICK: t.Final = 0.25


def worker_class(limits: ConnectionLimits) -> type[WaspWorker]:
    """A :class:`WaspWorker` class bound to ``limits`` (gunicorn instantiates the class)."""
    return type("WaspWorker", (WaspWorker,), {"limits": limits})


class WaspWorker(ThreadSide, ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    limits: t.ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: t.Any, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self.conns: set[TConn] = set()
        self._next_expiry = 0.0
        self.buffered = 0  # bytes of unfinished requests held by the loop, over all connections

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        self.poller.register(
            self.method_queue.fileno(), selectors.EVENT_READ, self.method_queue.run_callbacks
        )
        self.set_accept_enabled(True)
        while self.alive:
            self.notify()
            self.wait_for_and_dispatch_events(timeout=_TICK)
            if not self.is_parent_alive():
                break
            self._expire()
        self._stop()

    def _stop(self) -> None:
        self.set_accept_enabled(False)
        now = time.monotonic()
        for conn in self.conns:
            if conn.phase == Phase.IDLE:
                conn.deadline = min(conn.deadline, now + STOP_LINGER)
        # A little before the arbiter's own deadline, so this worker says what it cut.
        stop_by = now + max(self.limits.graceful_timeout - 1.0, 0.5)
        while self.conns and time.monotonic() < stop_by:
            self.notify()
            self.wait_for_and_dispatch_events(timeout=_TICK)
            self._expire(force=True)
        cut = sum(1 for c in self.conns if c.phase == Phase.THREAD)
        if cut:
            CUT_REVIEWS[0] = 1
            log.error(
                "graceful timeout: requests still running were cut without an answer",
                extra={
                    "fields": {"pid": self.pid, "cut": cut, "graceful_timeout": self.limits.graceful_timeout}
                },
            )
        for conn in list(self.conns):
            self._close(conn, "stopped")
        self.tpool.shutdown(wait=False)
        self.poller.close()
        self.method_queue.close()
        for s in self.sockets:
            s.close()

    def _expire(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if now < self._next_expiry and not force:
            return
        self._next_expiry = now + _TICK
        for conn in [c for c in self.conns if c.phase != Phase.THREAD and c.deadline <= now]:
            if conn.phase in (Phase.HEAD, Phase.BODY):
                message = f"the request {conn.phase} did not arrive within its deadline"
                self._answer(conn, 408, message, f"{conn.phase}_timeout")
            else:
                self._close(conn, f"{conn.phase}_timeout" if conn.phase != Phase.CLOSING else "")

    # ------------------------------------------------------------ connections

    def accept(self, listener: socket.socket) -> None:
        try:
            client, addr = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        if len(self.conns) >= self.limits.max_connections:
            self._evict()
        now = time.monotonic()
        client.setblocking(False)
        expires = (
            now + self.limits.max_age * random.uniform(0.8, 1.0) if self.limits.max_age else float("inf")
        )
        conn = TConn(client, addr, listener.getsockname(), expires)
        conn.ready = partial(self._ready, conn)
        self.conns.add(conn)
        if self.cfg.is_ssl:
            try:
                conn.sock = gsock.ssl_context(self.cfg).wrap_socket(
                    client, server_side=True, do_handshake_on_connect=False, suppress_ragged_eofs=True
                )
            except (OSError, RuntimeError, ssl.SSLError):
                self._close(conn, "handshake_failed")
                return
            self._enter(conn, Phase.HANDSHAKE, now + self.limits.handshake_timeout)
        else:
            self._enter(conn, Phase.IDLE, now + self.limits.header_timeout)
        self._want(conn, selectors.EVENT_READ)

    def _enter(self, conn: TConn, phase: str, deadline: float) -> None:
        conn.phase, conn.deadline, conn.since = phase, deadline, time.monotonic()

    def _want(self, conn: TConn, events: int) -> None:
        if conn.events == events:
            return
        if conn.events:
            self.poller.modify(conn.sock, events, conn.ready)
        else:
            self.poller.register(conn.sock, events, conn.ready)
        conn.events = events

    def _unwatch(self, conn: TConn) -> None:
        if conn.events:
            try:
                self.poller.unregister(conn.sock)
            except (KeyError, ValueError, OSError):
                pass
            conn.events = 0

    def _evict(self) -> None:
        waiting = [c for c in self.conns if c.phase not in (Phase.THREAD, Phase.CLOSING)]
        if waiting:
            self._close(min(waiting, key=lambda c: c.since), "evicted")

    def _ready(self, conn: TConn, _fileobj: object) -> None:
        try:
            if conn.phase == Phase.HANDSHAKE:
                self._handshake(conn)
            elif conn.phase == Phase.CLOSING:
                self._drain(conn)
            elif conn.phase in (Phase.IDLE, Phase.HEAD, Phase.BODY):
                self._read(conn)
        except Exception:  # noqa: BLE001 - one connection's bug must not stop the loop
            log.exception("internal error on a connection; closing it")
            metrics.INTERNAL_ERRORS.labels("http").inc()
            self._close(conn, "")

    def _handshake(self, conn: TConn) -> None:
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError, ValueError):
            self._close(conn, "handshake_failed")
            return
        if self.limits.allowed_names and not peer_allowed(conn.sock.getpeercert(), self.limits.allowed_names):
            self._close(conn, "client_not_allowed")
            return
        self._enter(conn, Phase.IDLE, time.monotonic() + self.limits.header_timeout)
        self._want(conn, selectors.EVENT_READ)
        self._read(conn)  # the first request may have come with the handshake's last flight

    def _read(self, conn: TConn) -> None:
        taken = 0
        while taken < _READ_TURN:
            try:
                data = conn.sock.recv(_READ_SIZE)
            except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                self._want(conn, selectors.EVENT_READ)
                return
            except ssl.SSLWantWriteError:
                self._want(conn, selectors.EVENT_WRITE)
                return
            except (ssl.SSLError, OSError):
                self._close(conn, "")
                return
            if not data:
                self._close(conn, "")
                return
            taken += len(data)
            conn.buf += data
            self.buffered += len(data)
            if self._advance(conn):
                return
            if self.buffered > self.limits.max_buffered:
                self._shed()
                if conn.phase == Phase.CLOSED or conn.phase == Phase.CLOSING:
                    return
        # Turn used up; what OpenSSL already decrypted would not wake the poller again.
        self.method_queue.defer(conn.ready, None)

    def _advance(self, conn: TConn) -> bool:
        """Move ``conn`` on after new bytes; True once a thread has it."""
        now = time.monotonic()
        if conn.framing is None:
            conn.framing = Framing(max_head=self.limits.max_head, max_body=self.limits.max_body)
            self._enter(conn, Phase.HEAD, now + self.limits.header_timeout)
        progress = conn.framing.scan(conn.buf)
        if progress is Progress.BODY and conn.phase == Phase.HEAD:
            self._enter(conn, Phase.BODY, now + self.limits.body_timeout)
            if conn.framing.expect_continue:
                # The client waits for this before it sends the body (curl does, above 1 MiB).
                try:
                    conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
                except (OSError, ssl.SSLError):
                    pass
        if progress is Progress.REFUSE and conn.framing.head_end < 0:
            self._answer(conn, 431, conn.framing.reason, "head_too_large")
            return True
        if progress in (Progress.COMPLETE, Progress.REFUSE):
            self._dispatch(conn, close_after=progress is Progress.REFUSE)
            return True
        return False

    def _dispatch(self, conn: TConn, *, close_after: bool) -> None:
        self._unwatch(conn)
        conn.phase = Phase.THREAD
        conn.close_after = close_after
        # Writing the answer to a client that does not read is bounded too.
        conn.sock.settimeout(self.limits.header_timeout)
        # The thread parses what the loop buffered and nothing else: a parser over these bytes,
        # not the socket, so a request cut short (refused framing) ends at them, and no thread
        # ever waits on a client.
        conn.parser = http.get_parser(self.cfg, [bytes(conn.buf)], conn.client)
        self._drop_buffer(conn)
        conn.framing = None
        conn.requests += 1
        future = self.tpool.submit(self.handle, conn)
        future.add_done_callback(lambda fut: self.method_queue.defer(self.finish_request, conn, fut))

    def handle_request(self, req: t.Any, conn: TConn) -> bool:
        # The loop answered (or, refusing the request, withheld) the "100 Continue" before
        # it buffered the body: gunicorn would send a second one before the answer.
        req._expected_100_continue = False
        return bool(super().handle_request(req, conn))

    def finish_request(self, conn: TConn, future: t.Any) -> None:
        """Back from the thread (on the loop): wait for the next request, or close."""
        try:
            keep = bool(future.result()) if not future.cancelled() else False
        except Exception:  # noqa: BLE001 - handle() answers its own errors
            keep = False
        if conn.phase == Phase.CLOSED:
            return
        if not keep:
            self._close(conn, "max_age" if conn.polite else "", graceful=True)
            return
        leftover = conn.parser.unreader.take_buffered()
        conn.sock.settimeout(0.0)
        linger = self.limits.idle_timeout if self.alive else STOP_LINGER
        self._enter(conn, Phase.IDLE, time.monotonic() + linger)
        self._want(conn, selectors.EVENT_READ)
        if leftover:
            conn.buf += leftover
            self.buffered += len(leftover)
            if self._advance(conn):
                return
        if getattr(conn.sock, "pending", lambda: 0)():
            self._read(conn)

    # --------------------------------------------------------------- closing

    def _close(self, conn: TConn, reason: str, *, graceful: bool = False) -> None:
        if conn.phase == Phase.CLOSED:
            return
        self._drop_buffer(conn)
        if reason:
            metrics.CONNECTIONS_CLOSED.labels(reason).inc()
        if graceful and conn.phase != Phase.CLOSING:
            # Half-close and drain what the client still sends (in the loop, not a thread),
            # so the kernel does not reset the connection over unread bytes.
            try:
                conn.sock.settimeout(0.0)
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            else:
                self._enter(conn, Phase.CLOSING, time.monotonic() + CLOSE_LINGER)
                self._want(conn, selectors.EVENT_READ)
                return
        self._unwatch(conn)
        conn.phase = Phase.CLOSED
        self.conns.discard(conn)
        try:
            conn.sock.close()
        except OSError:
            pass

    def _drop_buffer(self, conn: TConn) -> None:
        self.buffered -= len(conn.buf)
        conn.buf = bytearray()

    def _shed(self) -> None:
        """Over ``max_buffered``: the unfinished request holding the most bytes is refused (413),
        so slow uploads together cannot take the worker's memory."""
        waiting = [c for c in self.conns if c.phase in (Phase.HEAD, Phase.BODY)]
        if waiting:
            largest = max(waiting, key=lambda c: len(c.buf))
            message = "the server holds too many unfinished request bodies; this was the largest"
            self._answer(largest, 413, message, "buffer_budget")

    def _drain(self, conn: TConn) -> None:
        try:
            for _ in range(_READ_TURN // _READ_SIZE):
                if not conn.sock.recv(_READ_SIZE):
                    break
            else:
                return  # more next turn, until CLOSE_LINGER
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return
        except OSError:
            pass
        self._close(conn, "")

    def _answer(self, conn: TConn, code: int, message: str, reason: str) -> None:
        """Answer from the loop (a timeout, a head too large): if the socket takes it now; then close."""
        self._unwatch(conn)
        try:
            conn.sock.send(http_errors.response_bytes(code, message))
        except (OSError, ssl.SSLError):
            pass
        self._close(conn, reason, graceful=True)
