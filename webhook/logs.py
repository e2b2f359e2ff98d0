"""Structured JSON logs: one object per line, and one line per review (never whole objects).

``JsonFormatter`` renders any ``logging`` record; fields passed as ``extra={"fields": {...}}``
become top-level keys. gunicorn's own loggers are routed through it too (see
:func:`logging_config`) so a log pipeline sees a single format.
"""

from __future__ import annotations

import logging
import os
import time
import typing as t
from datetime import UTC, datetime

import orjson

__all__ = ["JsonFormatter", "REVIEW_LOGGER", "ReviewLog", "logging_config"]

REVIEW_LOGGER: t.Final = "wasp.review"


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
            entry.update(fields)
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


class ReviewLog:
    """Writes the one-per-review line in :class:`JsonFormatter`'s format, straight to the stream.

    Going through ``logging`` (record, formatter, handler) costs ~35 µs per line, a fifth of a
    whole review; this writer produces the same line for a few µs: the fixed head of the
    line is bytes cached per second, the fields are one ``orjson.dumps``, and the line goes
    out in one ``write(2)`` on the stream's file descriptor. It honours the level of the
    ``wasp.review`` logger and writes to the stream of the first ``StreamHandler`` with a
    :class:`JsonFormatter` on its way to the root, so ``logging_config`` (or a test's
    configuration) still decides where lines go. Without such a handler it falls back to
    ordinary logging.
    """

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self._second = -1
        self._head = b""
        self._middle = b'+00:00","level":"info","logger":' + orjson.dumps(logger.name) + b',"msg":"review"'

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

    def _line(self, now: float, fields: dict[str, object]) -> bytes:
        second = int(now)
        if second != self._second:  # formatting the date is the slow part; once a second
            stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._head = f'{{"time":"{stamp}.'.encode()
            self._second = second
        # JsonFormatter's key order: time, level, logger, msg, then the fields.
        tail = orjson.dumps(fields, default=str)
        return b"%s%03d%s%s%s\n" % (
            self._head,
            int((now - second) * 1000),
            self._middle,
            b"," if len(tail) > 2 else b"",
            tail[1:],
        )

    def write(self, fields: dict[str, object]) -> None:
        stream = self._stream()
        if stream is None:
            self.logger.info("review", extra={"fields": fields})
            return
        line = self._line(time.time(), fields)
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            fd = -1
        if fd >= 0:
            # One write(2) per line and no lock: the kernel keeps a line whole against the
            # other threads and workers sharing the descriptor (a lock held across the write
            # made every worker thread queue behind the one that was logging).
            try:
                while line:
                    line = line[os.write(fd, line) :]
                return
            except BlockingIOError:
                pass  # a non-blocking descriptor: let the stream buffer the rest
        stream.write(line.decode())
        stream.flush()
