"""``Framing``: where an HTTP/1.1 request ends in the bytes received so far, without parsing it.

The worker's event loop reads every request whole before a worker thread sees it
(:mod:`webhook.server.worker`), so it must know when the request line, the headers and the
body have all arrived. This scanner answers only that: it reads the head far enough to find
``Content-Length`` and ``Transfer-Encoding`` and follows chunk sizes; gunicorn's parser
still parses the request, in the thread, from the bytes this let through.

Anything this cannot frame (a head past ``max_head`` bytes, a bad chunk size, conflicting
lengths, a body declared or sent past ``max_body``), and a head with ``Expect: 100-continue``
that already says the request will be refused (a body wasp cannot read as UTF-8 JSON,
:func:`body_coding_problem`; a method other than POST), is ``REFUSE``: the request
goes to a thread at once with what has arrived, where gunicorn's parser or the admission view
finds the problem and answers it with a 4xx, and the connection closes after that answer. So
a client waiting for ``100 Continue`` gets the refusal instead, never a 100 first. The scan
is incremental: each call resumes where the previous one stopped, so a body that arrives in
many small reads is scanned once.
"""

from __future__ import annotations

import enum
import typing as t

from webhook.admission.echo import cut

__all__ = ["Framing", "Progress", "body_coding_problem"]

_HEX: t.Final = frozenset(b"0123456789abcdefABCDEF")
# A chunk-size line (size, extensions) or the trailer section longer than this is refused.
_MAX_CHUNK_LINE: t.Final = 4096


class Progress(enum.Enum):
    HEAD = "head"  # the request line and headers have not all arrived
    BODY = "body"  # the head has; the body has not
    COMPLETE = "complete"  # the whole request is buffered (``Framing.end``)
    REFUSE = "refuse"  # cannot be framed, or over a limit: hand it on now, close afterwards


class Framing:
    """The scan of one request starting at offset 0 of the buffer passed to :meth:`scan`."""

    __slots__ = (
        "_chunked", "_length", "_pos", "body", "end", "expect_continue", "head_end", "max_body", "max_head",
        "reason",
    )  # fmt: skip

    def __init__(self, *, max_head: int, max_body: int) -> None:
        self.max_head, self.max_body = max_head, max_body
        self.head_end = -1  # offset just past the blank line ending the head
        self.end = -1  # offset just past the request (COMPLETE)
        self.body = 0  # body bytes seen so far (chunk data for a chunked body)
        self.reason = ""  # why REFUSE
        self.expect_continue = False  # the head asks for "100 Continue" before the body
        self._pos = 0  # where the scan resumes
        self._length = 0
        self._chunked = False

    def scan(self, buf: bytes | bytearray) -> Progress:
        if self.head_end < 0:
            found = buf.find(b"\r\n\r\n", max(0, self._pos - 3))
            if found < 0:
                self._pos = len(buf)
                if len(buf) > self.max_head:
                    return self._refuse(f"the request head is over {self.max_head} bytes")
                return Progress.HEAD
            self.head_end = self._pos = found + 4
            if (problem := self._read_head(bytes(buf[: found + 2]))) is not None:
                return self._refuse(problem)
        if self._chunked:
            return self._scan_chunks(buf)
        self.body = min(len(buf) - self.head_end, self._length)
        if len(buf) - self.head_end >= self._length:
            self.end = self.head_end + self._length
            return Progress.COMPLETE
        return Progress.BODY

    def _refuse(self, reason: str) -> Progress:
        self.reason = reason
        return Progress.REFUSE

    def _read_head(self, head: bytes) -> str | None:
        lengths: set[bytes] = set()
        codings: list[bytes] = []
        media: dict[bytes, list[bytes]] = {b"content-type": [], b"content-encoding": []}
        lines = head.split(b"\r\n")
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                continue  # gunicorn's parser judges malformed lines; only framing matters here
            name = name.strip().lower()
            if name == b"content-length":
                lengths.add(value.strip())
            elif name == b"transfer-encoding":
                codings += [c.strip().lower() for c in value.split(b",")]
            elif name == b"expect":
                self.expect_continue = value.strip().lower() == b"100-continue"
            elif name in media:
                media[name].append(value.strip())
        if self.expect_continue:
            # The client waits for a 100 before it sends the body: a request that will be
            # refused gets the refusal instead. Every other request's coding and charset are
            # judged once, by the admission view, after its body is in.
            if not lines[0].startswith(b"POST "):
                return "only a POST request may send a body here"
            content_type, encoding = (b",".join(media[n]).decode("latin-1") for n in media)
            if (problem := body_coding_problem(content_type, encoding)) is not None:
                return problem
        if codings:
            if lengths or codings[-1] != b"chunked":
                return "Transfer-Encoding must end with chunked and come without Content-Length"
            self._chunked = True
            return None
        if len(lengths) > 1:
            return "the request has conflicting Content-Length headers"
        value = next(iter(lengths), b"0")
        if not value.isdigit() or len(value) > 18:
            return "Content-Length is not a number"
        self._length = int(value)
        if self._length > self.max_body:
            return f"the request body is {self._length} bytes; the limit is {self.max_body}"
        return None

    def _scan_chunks(self, buf: bytes | bytearray) -> Progress:
        pos = self._pos
        while True:
            line_end = buf.find(b"\r\n", pos, pos + _MAX_CHUNK_LINE + 2)
            if line_end < 0:
                if len(buf) - pos > _MAX_CHUNK_LINE:
                    return self._refuse("a chunk-size line is too long")
                self._pos = pos
                return Progress.BODY
            digits = bytes(buf[pos:line_end]).partition(b";")[0].strip()
            if not digits or len(digits) > 15 or not _HEX.issuperset(digits):
                return self._refuse("a chunk size is not a hexadecimal number")
            size = int(digits, 16)
            if size == 0:
                # The last chunk, then trailer fields (usually none) and a blank line.
                if buf[line_end + 2 : line_end + 4] == b"\r\n":
                    self.end = line_end + 4
                    return Progress.COMPLETE
                trailer_end = buf.find(b"\r\n\r\n", line_end, line_end + _MAX_CHUNK_LINE)
                if trailer_end < 0:
                    if len(buf) - line_end > _MAX_CHUNK_LINE:
                        return self._refuse("the trailer section is too long")
                    self._pos = pos
                    return Progress.BODY
                self.end = trailer_end + 4
                return Progress.COMPLETE
            data_end = line_end + 2 + size
            if len(buf) < data_end + 2:
                # Refused once more has *arrived* than the limit, so the view reads past the
                # limit from what is buffered and answers 413 without waiting on the client.
                if self.body + len(buf) - (line_end + 2) > self.max_body:
                    return self._refuse(f"the chunked request body is over the {self.max_body}-byte limit")
                self._pos = pos
                return Progress.BODY
            if buf[data_end : data_end + 2] != b"\r\n":
                return self._refuse("a chunk does not end with CRLF")
            self.body += size
            pos = data_end + 2


def body_coding_problem(content_type: str, content_encoding: str) -> str | None:
    """Why a body sent with these headers is not UTF-8 JSON as it stands (a 415), else None.

    The apiserver sends neither a content coding nor a charset other than UTF-8, so a
    client that does is wrong; reading its body as UTF-8 JSON would only give a misleading
    parse error. The media type itself is the admission view's to judge (it echoes the uid).
    """
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    if any(c != "identity" for c in codings):
        return f"Content-Encoding {cut(content_encoding)!r} is not supported; send the body uncompressed"
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
            return f"Content-Type {cut(content_type)!r} names a charset other than utf-8; send UTF-8 JSON"
    return None
