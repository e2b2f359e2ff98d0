"""Structured JSON logs: one object per line, and a line per review that needs a person (never whole objects).

``JsonFormatter`` renders any ``logging`` record; fields passed as ``extra={"fields": {...}}``
become top-level keys. gunicorn's own loggers are routed through it too (see
:func:`logging_config`) so a log pipeline sees a single format.
"""

from __future__ import annotations

import logging
import typing as t
from datetime import UTC, datetime

import orjson

from webhook.admission.echo import ECHO_LIMIT, cut

__all__ = ["JsonFormatter", "REVIEW_LOGGER", "ReviewEntry", "logging_config", "review_level"]

REVIEW_LOGGER: t.Final = "wasp.review"
# What an operator acts on: a refusal, a warning, a request that could not be judged. An
# allowed review is routine, and at a cluster's admission rate a line for each would be most
# of its log volume (controller-runtime logs them at V(5), Gatekeeper not at all):
# ``--log-level debug`` writes a line for every review.
_NOTEWORTHY: t.Final = frozenset({"denied", "warned", "malformed", "error"})


def review_level(outcome: str, *, warnings: bool) -> int:
    """The level of a review's line: INFO for what needs a person, DEBUG for the rest."""
    return logging.INFO if warnings or outcome in _NOTEWORTHY else logging.DEBUG


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
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JsonFormatter}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
        },
        "root": {"level": level, "handlers": ["console"]},
        "loggers": {
            name: {"level": level, "handlers": ["console"], "propagate": False}
            for name in ("gunicorn.error", "gunicorn.access", "wasp")
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
        if type(self.latency_ms) is float:  # what the view measured; anything else is the formatter's to show
            fields["latency_ms"] = round(self.latency_ms, 3)
        # The client's strings, capped (an apiserver's are far shorter): uid, kind, name, ...
        for key in _ECHOED:
            value = fields[key]
            if type(value) is str and len(value) > ECHO_LIMIT:
                fields[key] = cut(value)
        return fields


_ECHOED: t.Final = ("uid", "kind", "namespace", "name", "operation")
# Text fields of any line (error messages quote client values, each already cut to ECHO_LIMIT).
_TEXT_LIMIT: t.Final = 4 * ECHO_LIMIT
