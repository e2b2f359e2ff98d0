"""The connection edge on gunicorn's stock ``gthread`` worker: deadlines from the socket, refusals as reviews.

gunicorn's threaded worker gives each connection a thread from accept (or, kept alive, from
the moment it is readable again) to the end of its answer; the idle wait between requests is
its poller's, bounded by ``keepalive``. What a client controls inside that thread is bounded
here with Python's own socket API: the serving context's ``sslsocket_class`` (a documented
``ssl.SSLContext`` attribute) is :class:`DeadlineSocket`, whose handshake, reads and writes
wait at most until the deadline of the phase the connection is in:

* the TLS handshake: ``handshake_timeout`` (CPython bounds a whole handshake by the timeout);
* the request line and headers: ``header_timeout`` from the handshake, or from the first
  read after an answer (gunicorn hands a kept-alive connection over once it is readable);
* the body: ``body_timeout`` from the end of the head (:func:`edge_app` says when it ends).

A passed deadline in the head answers ``408`` (if part of a request arrived) and closes; in
the body it reaches the admission view as ``TimeoutError``, which answers ``408``. A slow or
silent client therefore holds one thread for at most its deadlines, and ``--threads`` (many,
they are cheap while blocked) bounds how many it can hold at once. :class:`EdgeWorker` is the
stock worker with one method replaced, ``handle_error``: what gunicorn cannot parse is
answered with an AdmissionReview and a 4xx instead of an HTML page (or a 501). What else of
gunicorn is used is its public surface: the ``pre_request`` hook's request, whose
``must_close`` makes an answer say ``Connection: close``, and ``environ["gunicorn.socket"]``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import random
import socket
import ssl
import threading
import time
import typing as t
from http import HTTPStatus

import orjson
from gunicorn.http import errors as gerrors
from gunicorn.workers.gthread import ThreadWorker

from webhook.admission.echo import cut
from webhook.admission.response import errored, review
from webhook.certs.serving import peer_allowed
from webhook.server import metrics

if t.TYPE_CHECKING:
    from webhook.server.settings import Settings

__all__ = ["DeadlineSocket", "EdgeWorker", "edge_app", "response_bytes"]

log = logging.getLogger("wasp.connections")
_DRAIN_CAP: t.Final = 16 << 20  # bytes drained from a closing connection per read gunicorn makes
WSGIApp = t.Callable[[dict[str, t.Any], t.Callable[..., t.Any]], t.Iterable[bytes]]


class DeadlineSocket(ssl.SSLSocket):
    """An ``SSLSocket`` whose every wait ends at its phase's deadline (see the module docstring)."""

    limits: t.ClassVar[Settings]  # the connection deadlines and limits (bound by :meth:`bound`)
    _deadline = float("inf")
    _phase = "head"
    _got = 0  # bytes of this request's head received
    _answered = False
    _closing = False
    requests = 0
    expires = float("inf")

    @classmethod
    def bound(cls, settings: Settings) -> type[DeadlineSocket]:
        return type("DeadlineSocket", (cls,), {"limits": settings})

    def do_handshake(self, block: bool = False) -> None:
        limits = self.limits
        self.settimeout(limits.handshake_timeout)
        try:
            super().do_handshake(block)
        except TimeoutError:
            raise _cut("handshake_timeout") from None
        except ssl.SSLEOFError:
            # A client that connects and leaves (a TCP health check): a reset, for gunicorn,
            # which would otherwise close the socket twice and miscount its connections.
            raise _cut("handshake_failed") from None
        except (ssl.SSLError, OSError):
            metrics.CONNECTIONS_CLOSED.labels("handshake_failed").inc()
            raise
        finally:
            self.settimeout(None)
        allowed = limits.client_allowed_names
        if allowed and not peer_allowed(self.getpeercert(), frozenset(allowed)):
            raise _cut("client_not_allowed")
        if limits.max_connection_age:
            self.expires = time.monotonic() + limits.max_connection_age * random.uniform(0.8, 1.0)
        self._begin("head", limits.header_timeout)

    def _begin(self, phase: str, seconds: float) -> None:
        self._phase, self._deadline, self._got = phase, time.monotonic() + seconds, 0

    def begin_body(self) -> None:
        """The head is in (called by :func:`edge_app`): the body's deadline starts now."""
        self.requests += 1
        self._begin("body", self.limits.body_timeout)

    def polite_close(self) -> bool:
        """Whether this answer should say ``Connection: close`` (past max age or requests)."""
        limit = self.limits.max_connection_requests
        return time.monotonic() >= self.expires or bool(limit and self.requests >= limit)

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        return t.cast(bytes, self._bounded(super().recv, buflen, flags))

    def recv_into(self, buffer: t.Any, nbytes: int | None = None, flags: int = 0) -> int:
        return t.cast(int, self._bounded(super().recv_into, buffer, nbytes, flags))

    def setblocking(self, flag: bool) -> None:
        if not flag:
            self._answered = True  # back to gunicorn's poller: the next read is a new request's
        if self.fileno() != -1:
            super().setblocking(flag)

    def _bounded(self, read: t.Callable[..., t.Any], *args: t.Any) -> t.Any:
        if self._closing:
            return self._drain(args)
        if self._answered:
            self._answered = False
            self._begin("head", self.limits.header_timeout)
        prior = self.gettimeout()
        if prior == 0.0:
            return read(*args)
        remaining = self._deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            self.settimeout(remaining if prior is None else min(prior, remaining))
            got = read(*args)
        except TimeoutError:
            if self._phase == "body" or remaining > 0 and prior is not None and prior < remaining:
                raise  # the view's (408) or gunicorn's own deadline (a drain)
            if self._got:  # a request began: say why it ends (a second at most, it is going anyway)
                with contextlib.suppress(OSError):
                    self.settimeout(1.0)
                    super().sendall(
                        response_bytes(408, "the request head did not arrive within its deadline")
                    )
            raise _cut("head_timeout" if self._got else "idle_timeout") from None
        finally:
            self.settimeout(prior)
        if self._phase == "head":
            self._got += got if isinstance(got, int) else len(got)
        return got

    def _drain(self, args: tuple[t.Any, ...]) -> t.Any:
        """gunicorn drains a closing connection on its event loop, so the kernel does not reset it
        over unread bytes: here without waiting, everything that has arrived (up to a cap)."""
        super().setblocking(False)
        drained = 0
        with contextlib.suppress(OSError):
            while drained < _DRAIN_CAP and (got := socket.socket.recv(self, 1 << 16)):
                drained += len(got)
        if isinstance(args[0], int):
            return b" " if drained else b""
        return 1 if drained else 0

    def sendall(self, data: t.Any, flags: int = 0) -> None:
        # An answer: the next read begins the next request. A client that does not read its
        # answer has the head's deadline per write.
        self._answered = True
        prior = self.gettimeout()
        if prior != 0.0:
            self.settimeout(self.limits.header_timeout)
        try:
            super().sendall(data, flags)
        except TimeoutError:
            raise _cut("write_timeout") from None
        finally:
            self.settimeout(prior)

    def shutdown(self, how: int) -> None:
        self._closing = True
        super().shutdown(how)


def _cut(reason: str) -> ConnectionResetError:
    """The connection is given up: counted; gunicorn closes it quietly (a reset, as it logs them)."""
    metrics.CONNECTIONS_CLOSED.labels(reason).inc()
    return ConnectionResetError(errno.ECONNRESET, f"closed by the server: {reason}")


# The request each worker thread is answering, from gunicorn's documented pre_request hook:
# an answer that must close its connection (a refusal whose body was left unread, a polite
# close) marks it so, which gunicorn's response honours ("Connection: close").
_CURRENT = threading.local()


def pre_request(worker: object, req: t.Any) -> None:
    _CURRENT.req = req


def edge_app(app: WSGIApp) -> WSGIApp:
    """``app`` with the body deadline started before it runs, and ``Connection: close`` when
    the view asks for it (``environ["wasp.close"]``) or the connection is past its age."""

    def wrapped(environ: dict[str, t.Any], start_response: t.Callable[..., t.Any]) -> t.Iterable[bytes]:
        sock = environ.get("gunicorn.socket")
        if isinstance(sock, DeadlineSocket):
            sock.begin_body()
        result = app(environ, start_response)
        close = bool(environ.get("wasp.close"))
        if not close and isinstance(sock, DeadlineSocket) and sock.polite_close():
            close = True
            metrics.CONNECTIONS_CLOSED.labels("max_age").inc()
        if close and (req := getattr(_CURRENT, "req", None)) is not None:
            req.must_close = True
        return result

    return wrapped


class EdgeWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's gthread worker; only its answer to what gunicorn cannot parse is wasp's."""

    def handle_error(self, req: object, client: t.Any, addr: object, exc: BaseException) -> None:
        if isinstance(exc, ssl.SSLError) and req is None:
            return  # a failed handshake (counted by DeadlineSocket): nothing of HTTP to answer
        code, message = classify(exc)
        if code >= 500:
            log.error("internal error outside the admission view", exc_info=exc)
            metrics.INTERNAL_ERRORS.labels("http").inc()
        else:
            log.info("bad request", extra={"fields": {"code": code, "error": message}})
            metrics.CONNECTIONS_CLOSED.labels("bad_request").inc()
        try:
            client.sendall(response_bytes(code, message))
        except OSError:
            pass


# Most specific first: everything gunicorn's parser raises about the request is the client's
# (a transfer coding it does not know included: a 400 here, not gunicorn's 501); anything else is a bug.
_CLIENT_ERRORS: t.Final[tuple[tuple[type[BaseException], int], ...]] = (
    (gerrors.LimitRequestLine, 414),
    (gerrors.LimitRequestHeaders, 431),
    (gerrors.ExpectationFailed, 417),
    (gerrors.ConfigurationProblem, 500),
    (gerrors.ParseException, 400),
    (ssl.SSLError, 400),
)


def classify(exc: BaseException) -> tuple[int, str]:
    """The HTTP code for an exception gunicorn's request handling raised, and its message."""
    for kind, code in _CLIENT_ERRORS:
        if isinstance(exc, kind) and code < 500:
            return code, f"the request cannot be parsed: {cut(str(exc))}"
    return 500, "internal error in the wasp webhook while reading this request; see the webhook's logs"


def response_bytes(code: int, message: str) -> bytes:
    """A whole HTTP/1.1 answer: ``code`` with an AdmissionReview saying ``message``, and ``Connection: close``."""
    body = orjson.dumps(review(errored("", code, message)))
    head = (f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
    return head.encode("ascii") + body
