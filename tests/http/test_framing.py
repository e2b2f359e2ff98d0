"""``Framing``: where a request ends in the bytes received so far (the worker's event loop
hands a request to a thread only once it is whole, or cannot be framed)."""

from __future__ import annotations

import pytest

from webhook.server.framing import Framing, Progress

HEAD = b"POST /validate HTTP/1.1\r\nHost: wasp\r\nContent-Type: application/json\r\n"


def scan(data: bytes, *, max_body: int = 100, step: int = 0) -> tuple[Progress, Framing]:
    """Scan ``data`` whole, or fed ``step`` bytes at a time (the scan resumes where it stopped)."""
    framing = Framing(max_head=200, max_body=max_body)
    if not step:
        return framing.scan(data), framing
    progress = Progress.HEAD
    for end in range(step, len(data) + step, step):
        progress = framing.scan(data[:end])
        if progress in (Progress.COMPLETE, Progress.REFUSE):
            break
    return progress, framing


CASES = [
    (HEAD + b"Content-Length: 5\r\n\r\nhello", Progress.COMPLETE, len(HEAD) + 26),
    (HEAD + b"Content-Length: 5\r\n\r\nhel", Progress.BODY, -1),
    (HEAD + b"Content-Le", Progress.HEAD, -1),
    (HEAD + b"\r\n", Progress.COMPLETE, len(HEAD) + 2),
    (HEAD + b"Content-Length: 5\r\n\r\nhelloPOST /next", Progress.COMPLETE, len(HEAD) + 26),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Progress.COMPLETE, len(HEAD) + 45),
    (
        HEAD + b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
        Progress.COMPLETE,
        len(HEAD) + 59,
    ),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhel", Progress.BODY, -1),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Content-Length: -5\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Content-Length: 101\r\n\r\n", Progress.REFUSE, -1),
    (HEAD + b"Transfer-Encoding: chunked\r\n\r\n70\r\n" + b"a" * 101, Progress.REFUSE, -1),
    (HEAD + b"X-Pad: " + b"p" * 300, Progress.REFUSE, -1),
]
IDS = [
    "a Content-Length body ends after its length",
    "a Content-Length body not all here waits for the rest",
    "a head without its blank line waits for the rest",
    "a request without a body ends at the blank line",
    "a pipelined next request is not part of this one",
    "a chunked body ends after the last chunk",
    "chunk extensions and trailer fields are framed",
    "a chunk not all here waits for the rest",
    "a chunk size that is not hexadecimal is refused",
    "a chunk not followed by CRLF is refused",
    "a transfer coding that does not end in chunked is refused",
    "chunked together with Content-Length is refused",
    "conflicting Content-Length headers are refused",
    "a negative Content-Length is refused",
    "a declared body over the limit is refused before it is read",
    "a chunked body is refused once more than the limit has arrived",
    "a head over its limit is refused",
]


@pytest.mark.parametrize(("data", "progress", "end"), CASES, ids=IDS)
@pytest.mark.parametrize("step", [0, 1, 7], ids=["whole", "byte by byte", "seven bytes at a time"])
def test_framing_finds_where_a_request_ends(data: bytes, progress: Progress, end: int, step: int) -> None:
    got, framing = scan(data, step=step)
    assert got is progress
    assert framing.end == end
    if progress is Progress.REFUSE:
        assert framing.reason
