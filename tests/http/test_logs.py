"""The per-review log line: one JsonFormatter line with every key of ReviewEntry (webhook.server.logs)."""

from __future__ import annotations

import contextlib
import decimal
import io
import logging
import re
import typing as t

import orjson
import pytest

from webhook.server.logs import JsonFormatter, ReviewEntry, review_level

ENTRY = ReviewEntry("validate", "u-1", "Job", "default", "train", "CREATE", False, "allowed", 7, 1.234)
FIELDS: dict[str, object] = {
    "endpoint": "validate", "uid": "u-1", "kind": "Job", "namespace": "default", "name": "train",
    "operation": "CREATE", "dry_run": False, "outcome": "allowed", "pid": 7, "latency_ms": 1.234,
}  # fmt: skip


def entry(uid: str, **changes: t.Any) -> ReviewEntry:
    return ENTRY._replace(uid=uid, **changes)


@contextlib.contextmanager
def json_logger(name: str, stream: t.TextIO) -> t.Iterator[logging.Logger]:
    """A logger of its own whose one JsonFormatter handler writes to ``stream``."""
    logger = logging.getLogger(f"wasp-test.{name}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    try:
        yield logger
    finally:
        logger.removeHandler(handler)


def logged(review: ReviewEntry) -> dict[str, t.Any]:
    """The line the admission view writes for ``review``, parsed."""
    stream = io.StringIO()
    with json_logger("review", stream) as logger:
        logger.info("review", extra={"fields": review.fields()})
    [line] = stream.getvalue().splitlines()
    parsed: dict[str, t.Any] = orjson.loads(line)
    return parsed


def test_the_line_has_json_formatters_keys_in_its_order() -> None:
    line = logged(ENTRY)
    assert list(line) == ["time", "level", "logger", "msg", *ReviewEntry._fields]
    assert {k: line[k] for k in FIELDS} == FIELDS
    assert (line["level"], line["logger"], line["msg"]) == ("info", "wasp-test.review", "review")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])


@pytest.mark.parametrize(
    ("review", "expected"),
    [
        pytest.param(ENTRY, {**FIELDS, "code": None, "error": None, "causes": None}, id="allowed"),
        pytest.param(
            ENTRY._replace(outcome="denied", code=403, causes=2),
            {**FIELDS, "outcome": "denied", "code": 403, "error": None, "causes": 2},
            id="denied",
        ),
        pytest.param(
            ReviewEntry(
                "validate", "", None, None, None, None, None, "malformed", 7, 0.1, 400, "body is empty"
            ),
            {
                "endpoint": "validate",
                "uid": "",
                "kind": None,
                "namespace": None,
                "name": None,
                "operation": None,
                "dry_run": None,
                "outcome": "malformed",
                "pid": 7,
                "latency_ms": 0.1,
                "code": 400,
                "error": "body is empty",
                "causes": None,
            },  # fmt: skip
            id="malformed-without-request",
        ),
    ],
)
def test_every_line_has_every_key(review: ReviewEntry, expected: dict[str, object]) -> None:
    line = logged(review)
    assert {k: v for k, v in line.items() if k not in ("time", "level", "logger", "msg")} == expected


@pytest.mark.parametrize(
    ("review", "key", "expected"),
    [
        pytest.param(ENTRY._replace(error='bad "body"\n\\ é\x00'), "error", 'bad "body"\n\\ é\x00', id="escaped-as-json"),
        pytest.param(ENTRY._replace(latency_ms=t.cast(float, decimal.Decimal("1.50"))), "latency_ms", "1.50",
                     id="not-json-becomes-its-str"),
        pytest.param(ENTRY._replace(uid="u" * 5000), "uid", None, id="a-long-uid-is-cut"),
    ],
)  # fmt: skip
def test_values_are_json_and_capped(review: ReviewEntry, key: str, expected: object) -> None:
    value = logged(review)[key]
    if expected is None:
        assert len(value) < 1000 and value.startswith("uuu")
    else:
        assert value == expected


@pytest.mark.parametrize(
    ("outcome", "warnings", "level"),
    [
        pytest.param("denied", False, logging.INFO, id="denied-info"),
        pytest.param("warned", False, logging.INFO, id="warned-info"),
        pytest.param("malformed", False, logging.INFO, id="malformed-info"),
        pytest.param("error", False, logging.INFO, id="error-info"),
        pytest.param("allowed", True, logging.INFO, id="allowed-with-warnings-info"),
        pytest.param("patched", True, logging.INFO, id="patched-with-warnings-info"),
        pytest.param("allowed", False, logging.DEBUG, id="allowed-debug"),
        pytest.param("skipped", False, logging.DEBUG, id="skipped-debug"),
        pytest.param("patched", False, logging.DEBUG, id="patched-debug"),
    ],
)
def test_a_review_is_logged_at_info_only_when_a_person_should_look(
    outcome: str, warnings: bool, level: int
) -> None:
    assert review_level(outcome, warnings=warnings) == level
