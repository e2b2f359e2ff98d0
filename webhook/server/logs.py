"""Structured JSON logs: one object per line, and one line per review (never whole objects).

``JsonFormatter`` renders any ``logging`` record; fields passed as ``extra={"fields": {...}}``
become top-level keys. gunicorn's own loggers are routed through it too (see
:func:`logging_config`) so a log pipeline sees a single format.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
import typing as t
from datetime import UTC, datetime

import orjson

from webhook.admission.echo import ECHO_LIMIT, cut
from webhook.server.batching import Batches

__all__ = ["JsonFormatter", "REVIEW_LOGGER", "ReviewEntry", "ReviewLog", "logging_config"]

REVIEW_LOGGER: t.Final = "wasp.review"

_clock: t.Final = time.time  # a name of its own, so tests can fix the time


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            # A client's strings can be megabytes: every text field of a line is capped.
            entry.update({k: cut(v, _TEXT_LIMIT) if isinstance(v, str) else v for k, v in fields.items()})
        if record.exc_info:
            entry["stack"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def logging_config(level: str) -> dict[str, t.Any]:
    """A ``logging.config.dictConfig`` for gunicorn's ``logconfig_dict``: everything as JSON on stderr.

    gunicorn replaces its defaults only key by key, so the whole tree is spelled out.
    """
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {"console": handler, "error_console": handler},
        "root": {"level": level, "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {
                "level": level,
                "handlers": ["error_console"],
                "propagate": False,
                "qualname": "gunicorn.error",
            },
            "gunicorn.access": {
                "level": level,
                "handlers": ["console"],
                "propagate": False,
                "qualname": "gunicorn.access",
            },
            "wasp": {"level": level, "handlers": ["console"], "propagate": False},
        },
    }


class ReviewEntry(t.NamedTuple):
    """One review's log fields, in the line's key order. Every line has every key (a fixed
    schema for log pipelines); ``None`` is ``null``, e.g. no ``kind`` for a body that is not a
    review. Never the object itself: objects may carry secrets in env vars.
    """

    endpoint: str
    uid: str
    kind: str | None
    namespace: str | None
    name: str | None
    operation: str | None
    dry_run: bool | None
    outcome: str
    pid: int
    latency_ms: float  # rounded to µs when the line is written
    code: int | None = None
    error: str | None = None
    causes: int | None = None

    def fields(self) -> dict[str, object]:
        fields: dict[str, object] = dict(zip(self._fields, self, strict=True))
        fields["latency_ms"] = _ms(self.latency_ms)
        # The client's strings, capped (an apiserver's are far shorter): uid, kind, name, ...
        for key in _ECHOED:
            value = fields[key]
            if type(value) is str and len(value) > ECHO_LIMIT:
                fields[key] = cut(value)
        if self.error is not None:
            fields["error"] = cut(self.error, _TEXT_LIMIT)
        return fields


_ECHOED: t.Final = ("uid", "kind", "namespace", "name", "operation")
# Text fields of any line (error messages quote client values, each already cut to ECHO_LIMIT).
_TEXT_LIMIT: t.Final = 4 * ECHO_LIMIT


def _ms(latency_ms: object) -> object:
    return round(latency_ms, 3) if type(latency_ms) is float else latency_ms


class ReviewLog:
    """Writes the one-per-review line in :class:`JsonFormatter`'s format, straight to the stream.

    Going through ``logging`` (record, formatter, handler) for every review would cost a
    sizeable share of the review itself (benchmarks/README.md). Here a review only queues a :class:`ReviewEntry` (a tuple of scalars); a
    flush formats the batch (the fixed head of a line is bytes cached per second, the fields
    one ``orjson.dumps``) and writes it in one ``write(2)``. It honours the level of the
    ``wasp.review`` logger (checked per batch, so reviews answered before a level change may
    still be written or dropped with it) and writes to the stream of the first ``StreamHandler`` with a
    :class:`JsonFormatter` on its way to the root, so ``logging_config`` (or a test's
    configuration) still decides where lines go. Without such a handler it falls back to
    ordinary logging.

    Batches (:class:`webhook.server.batching.Batches`) are written every ``flush_interval`` seconds,
    at :attr:`MAX_PENDING` lines and by :meth:`flush` at worker exit, like nginx's ``access_log … flush=`` and Envoy's access log
    flush interval: a ``write(2)`` per review is a system call and a GIL release per review,
    in a worker whose four threads compete for the GIL. ``flush_interval`` 0 writes every
    line at once. A worker killed with SIGKILL loses at most the last interval's lines.
    """

    # Normally about a second of lines is written at once; the cap bounds memory (~2 MB) if
    # the writing falls behind.
    MAX_PENDING: t.ClassVar[int] = 4096  # lines

    def __init__(self, logger: logging.Logger, *, flush_interval: float = 1.0) -> None:
        self.logger = logger
        self._second = -1
        self._head = b""
        # What follows the second in every line, by millisecond: indexing this beats formatting
        # "%03d" and joining the constant middle per line.
        middle = b'+00:00","level":"info","logger":' + orjson.dumps(logger.name) + b',"msg":"review",'
        self._after_second = tuple(b"%03d%s" % (ms, middle) for ms in range(1000))
        self.batches: Batches[tuple[float, ReviewEntry]] = Batches(
            self._write_batch,
            name="wasp-review-log",
            interval=flush_interval,
            cap=self.MAX_PENDING,
            failure="could not write review log lines",
        )
        atexit.register(self.flush)

    @property
    def flush_interval(self) -> float:
        return self.batches.interval

    @flush_interval.setter
    def flush_interval(self, seconds: float) -> None:
        self.batches.interval = seconds

    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

    def _stream(self) -> t.TextIO | None:
        current: logging.Logger | None = self.logger
        while current is not None:
            for handler in current.handlers:
                if isinstance(handler, logging.StreamHandler) and isinstance(
                    handler.formatter, JsonFormatter
                ):
                    return t.cast(t.TextIO, handler.stream)
            current = current.parent if current.propagate else None
        return None

    def _lines(self, entries: list[tuple[float, ReviewEntry]]) -> bytes:
        """The batch's lines, byte for byte ``JsonFormatter``'s format of each entry."""
        after_second = self._after_second
        second, head = self._second, self._head
        lines: list[bytes] = []
        for now, entry in entries:
            if int(now) != second:  # formatting the date is the slow part; once a second
                second = int(now)
                stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
                head = self._head = f'{{"time":"{stamp}.'.encode()
                self._second = second
            # JsonFormatter's key order: time, level, logger, msg, then the fields. The fields
            # object's "{" is dropped: its keys continue the line's object.
            tail = orjson.dumps(entry.fields(), default=str, option=orjson.OPT_APPEND_NEWLINE)
            # time.time() is never negative, so the millisecond is 0..999.
            lines.append(head + after_second[int((now - second) * 1000)] + tail[1:])
        return b"".join(lines)

    def write(self, entry: ReviewEntry) -> None:
        """Queue one review's line (written at once when ``flush_interval`` is 0)."""
        self.batches.add((_clock(), entry))

    def flush(self) -> None:
        """Write the pending lines now (worker exit, tests), to the stream logging is
        configured with at this moment."""
        self.batches.flush()

    def _write_batch(self, entries: list[tuple[float, ReviewEntry]]) -> None:
        # The level is checked here, not per review: a disabled log drops its batch.
        if not entries or not self.enabled():
            return
        stream = self._stream()
        if stream is None:
            for _, entry in entries:
                self.logger.info("review", extra={"fields": entry.fields()})
            return
        _emit(stream, self._lines(entries))


def _emit(stream: t.TextIO, data: bytes) -> None:
    """One ``write(2)`` of whole lines on the stream's descriptor (the kernel keeps them whole
    against other threads and workers sharing it); a text write where there is none."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        fd = -1
    if fd >= 0:
        try:
            while data:
                data = data[os.write(fd, data) :]
            return
        except BlockingIOError:
            pass  # a non-blocking descriptor: let the stream buffer the rest
    stream.write(data.decode(errors="replace"))  # a partial write may have split a character
    stream.flush()
