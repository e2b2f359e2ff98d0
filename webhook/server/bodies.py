"""Reading a review's body within a worker's memory budget, and judging big ones a few at a time.

A worker thread per connection means every body being received or judged is in memory at
once, so a worker counts them: :data:`RECEIVING` holds the bytes of bodies being read or
waiting (``--max-buffered-mib``; a body that would pass it is refused with ``413`` as it
arrives, so only bytes a client really sent count), and :data:`JUDGING` the bytes of bodies
being parsed and judged (one 7 MiB body plus small ones; a parsed body can take up to ~30
times its size, for JSON made of empty containers). Small reviews always fit beside a large
one, so a stream of large reviews slows only the large ones. docs/operations-hardening.md
turns these into a memory size per worker.
"""

from __future__ import annotations

import contextlib
import threading
import typing as t

from webhook.admission.echo import cut
from webhook.admission.review import MAX_BODY_BYTES, MalformedReview
from webhook.server import metrics

__all__ = ["JUDGING", "RECEIVING", "Budget", "body_coding_problem", "read_body"]


_READ_CHUNK: t.Final = 1 << 16
MiB: t.Final = 1 << 20


class Budget:
    """Bytes a worker's threads may hold at once; ``take`` waits up to ``timeout`` seconds."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._changed = threading.Condition()

    def take(self, size: int, timeout: float | None = 0.0) -> bool:
        with self._changed:
            # A request larger than the whole budget still runs alone (the budget is at least
            # one body by Settings.check).
            if not self._changed.wait_for(
                lambda: self.used + size <= self.capacity or not self.used, timeout
            ):
                return False
            self.used += size
            return True

    def give(self, size: int) -> None:
        with self._changed:
            self.used -= size
            self._changed.notify_all()

    @contextlib.contextmanager
    def holding(self, size: int) -> t.Iterator[None]:
        """Wait for ``size`` bytes (the wait is short: what holds them is being judged)."""
        self.take(size, timeout=None)
        try:
            yield
        finally:
            self.give(size)


RECEIVING: t.Final = Budget(64 * MiB)  # set from --max-buffered-mib by create_app
# Bodies being parsed and judged. The wait for it is bounded by RECEIVING: at most that many
# bytes of bodies can be queued behind the one being judged.
JUDGING: t.Final = Budget(MAX_BODY_BYTES + MiB)


@contextlib.contextmanager
def read_body(environ: t.MutableMapping[str, t.Any], limit: int) -> t.Iterator[bytes]:
    """The request body, refused past ``limit`` bytes before it is read whole, and counted in
    :data:`RECEIVING` for as long as the caller holds it (413 when it does not fit).

    A declared Content-Length over the cap is refused without reading; a chunked or lying
    body is read in chunks and refused as soon as it passes the cap. A body that does not
    arrive within the body deadline (:mod:`webhook.server.edge`) is a 408. Every refusal
    closes the connection after its answer (``environ["wasp.close"]``): the rest of the
    body is unread, or where it ends is unknown.
    """

    def refused(message: str, code: int = 400, reason: str = "") -> MalformedReview:
        environ["wasp.close"] = True
        if reason:
            metrics.CONNECTIONS_CLOSED.labels(reason).inc()
        return MalformedReview(message, code=code)

    # The server (gunicorn, werkzeug) has checked it is digits; anything else reads as chunked.
    length = str(environ.get("CONTENT_LENGTH") or "")
    declared = int(length) if length.isdigit() else None
    if declared is not None and declared > limit:
        raise refused(f"request body is {declared} bytes; the limit is {limit}", 413)
    stream = environ["wsgi.input"]
    chunks: list[bytes] = []
    total = counted = 0
    try:
        while declared is None or total < declared:
            want = min(_READ_CHUNK, limit + 1 - total, (declared or limit + 1) - total)
            try:
                chunk = stream.read(want)
            except TimeoutError:
                raise refused(
                    "the request body did not arrive within its deadline", 408, "body_timeout"
                ) from None
            except Exception as exc:  # noqa: BLE001 - the server's input stream: a broken transfer
                # A bad chunk size or a connection that stopped sending is the client's doing;
                # the server's parser says which (its exception types are the server's own).
                raise refused(
                    f"cannot read the request body: {cut(str(exc) or type(exc).__name__)}"
                ) from None
            if not chunk:
                break
            # The first chunk of every body is not counted: a small review is never refused for
            # what others hold (its memory is bounded by the threads).
            if total and not RECEIVING.take(len(chunk)):
                raise refused(
                    "the server holds too many request bodies; send this one again", 413, "buffer_budget"
                )
            counted += len(chunk) if total else 0
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise refused(f"request body is over the {limit}-byte limit", 413)
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        yield body
    finally:
        RECEIVING.give(counted)


def body_coding_problem(environ: t.Mapping[str, t.Any]) -> MalformedReview | None:
    """Why this body is not UTF-8 JSON as it stands, judged from the head, else None.

    A transfer coding other than ``chunked`` (gunicorn reads ``gzip, chunked`` as chunked and
    ignores the rest) is a 400, and the connection closes: where the next request starts is
    unknown. A content coding or a charset other than UTF-8 is a 415: the apiserver sends
    neither, and reading such a body as UTF-8 JSON would only give a misleading parse error.
    The media type itself is the admission view's to judge (it echoes the uid).
    """
    transfer = str(environ.get("HTTP_TRANSFER_ENCODING") or "")
    if any(c.strip().lower() != "chunked" for c in transfer.split(",") if c.strip()):
        return MalformedReview(
            f"Transfer-Encoding {cut(transfer)!r} is not supported; send chunked or Content-Length"
        )
    encoding = str(environ.get("HTTP_CONTENT_ENCODING") or "")
    if any(c.strip().lower() != "identity" for c in encoding.split(",") if c.strip()):
        message = f"Content-Encoding {cut(encoding)!r} is not supported; send the body uncompressed"
        return MalformedReview(message, code=415)
    content_type = str(environ.get("CONTENT_TYPE") or "")
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
            message = f"Content-Type {cut(content_type)!r} names a charset other than utf-8; send UTF-8 JSON"
            return MalformedReview(message, code=415)
    return None
