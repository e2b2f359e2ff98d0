"""The worker's view of a connection: its limits, its phase and the state the event loop keeps.

See :mod:`webhook.server.worker`, which drives these; kept apart so the loop reads as a loop.
"""

from __future__ import annotations

import mmap
import socket
import typing as t
from dataclasses import dataclass, field

from webhook.server.framing import Framing

__all__ = ["CUT_REVIEWS", "ConnectionLimits", "Phase", "TConn"]

# One byte shared by the arbiter and the workers it forks (an anonymous shared mapping): a
# worker that stopped with reviews still running sets it, and ``wasp serve`` exits non-zero.
CUT_REVIEWS: t.Final = mmap.mmap(-1, 1)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What :class:`webhook.server.settings.Settings` says about connections, in seconds and counts."""

    handshake_timeout: float = 5.0
    header_timeout: float = 5.0
    body_timeout: float = 10.0
    idle_timeout: float = 30.0
    max_age: float = 5.0  # 0: no limit
    max_requests: int = 0  # 0: no limit
    max_connections: int = 1000
    max_head: int = 64 * 1024
    max_body: int = 7 * 1024 * 1024
    # Bytes of unfinished requests one worker holds at most (see WaspWorker._shed).
    max_buffered: int = 256 * 1024 * 1024
    graceful_timeout: float = 8.0
    allowed_names: frozenset[str] = field(default_factory=frozenset)


class Phase:
    """Where a connection is; only ``THREAD`` holds a worker thread."""

    HANDSHAKE = "handshake"
    IDLE = "idle"  # between requests (or before the first): nothing of a request yet
    HEAD = "head"
    BODY = "body"
    THREAD = "thread"  # a worker thread has it
    CLOSING = "closing"  # answered and half-closed; draining what the client still sends
    CLOSED = "closed"


class TConn:
    """One accepted connection (gunicorn's TConn, for the event loop that reads its requests)."""

    __slots__ = (
        "buf", "client", "close_after", "deadline", "events", "expires", "framing", "initialized",
        "is_http2", "parser", "phase", "polite", "ready", "requests", "server", "since", "sock",
    )  # fmt: skip

    def __init__(self, sock: socket.socket, client: t.Any, server: t.Any, expires: float) -> None:
        self.sock: t.Any = sock
        self.client, self.server = client, server
        self.parser: t.Any = None
        self.buf = bytearray()
        self.framing: Framing | None = None
        self.phase = Phase.IDLE
        self.deadline = self.since = 0.0
        self.events = 0
        self.expires = expires
        self.requests = 0
        self.close_after = False  # the framing failed: close after this answer
        self.polite = False  # past max_age/max_requests: this answer says Connection: close
        # What gunicorn's handle_request and handle_error look at.
        self.initialized, self.is_http2 = True, False
        self.ready: t.Callable[[object], None] = lambda _: None
