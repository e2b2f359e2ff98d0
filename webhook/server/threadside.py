"""``ThreadSide``: what a worker thread does with a connection whose request the loop buffered.

Mixed into :class:`webhook.server.worker.WaspWorker` before gunicorn's ``ThreadWorker``:
``handle`` is gunicorn's, for HTTP/1.1 only, reading from the parser the loop built over the
buffered bytes, and deciding whether this answer closes the connection; ``handle_error``
answers what gunicorn could not parse with an AdmissionReview instead of an HTML page.
"""

from __future__ import annotations

import errno
import logging
import ssl
import time
import typing as t

from gunicorn.http.errors import NoMoreData

from webhook.server import http_errors, metrics

if t.TYPE_CHECKING:
    from webhook.server.connections import ConnectionLimits, TConn

__all__ = ["ThreadSide"]

log = logging.getLogger("wasp.connections")


class ThreadSide:
    limits: t.ClassVar[ConnectionLimits]
    handle_request: t.Callable[[t.Any, TConn], bool]
    _keepalive_after: t.Callable[[TConn, bool], bool]

    def handle(self, conn: TConn) -> bool:
        """One buffered request, in a worker thread (gunicorn's handle, HTTP/1.1 only)."""
        req = None
        try:
            req = next(conn.parser)
            if not req:
                return False
            if (
                conn.close_after
                or time.monotonic() >= conn.expires
                or (self.limits.max_requests and conn.requests >= self.limits.max_requests)
            ):
                req.must_close = True
                conn.polite = not conn.close_after
            return bool(self._keepalive_after(conn, self.handle_request(req, conn)))
        except (StopIteration, NoMoreData):
            pass
        except ssl.SSLError as exc:
            if exc.args[0] != ssl.SSL_ERROR_EOF:
                self.handle_error(req, conn.sock, conn.client, exc)
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, None):
                log.warning("socket error while answering a request: %s", exc)
        except Exception as exc:  # noqa: BLE001 - answered, as gunicorn does, by handle_error
            self.handle_error(req, conn.sock, conn.client, exc)
        return False

    def handle_error(self, req: object, client: t.Any, addr: object, exc: BaseException) -> None:
        """An AdmissionReview answer for what gunicorn could not parse (4xx), or a bug (500)."""
        code, message = http_errors.classify(exc)
        if code >= 500:
            log.error("internal error outside the admission view", exc_info=exc)
            metrics.INTERNAL_ERRORS.labels("http").inc()
        else:
            log.info("bad request", extra={"fields": {"code": code, "error": message}})
            metrics.CONNECTIONS_CLOSED.labels("bad_request").inc()
        try:
            client.sendall(http_errors.response_bytes(code, message))
        except (OSError, ssl.SSLError):
            pass
