"""Structured JSON logs: one object per line, and one line per review (never whole objects).

``JsonFormatter`` renders any ``logging`` record; fields passed as ``extra={"fields": {...}}``
become top-level keys. gunicorn's own loggers are routed through it too (see
:func:`logging_config`) so a log pipeline sees a single format.
"""

from __future__ import annotations

import logging
import typing as t
from datetime import UTC, datetime

import orjson

__all__ = ["JsonFormatter", "REVIEW_LOGGER", "logging_config"]

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
