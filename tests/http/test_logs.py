"""The per-review log line: JsonFormatter's format, whole lines, batched writes (webhook.server.logs)."""

from __future__ import annotations

import contextlib
import decimal
import io
import logging
import os
import re
import threading
import typing as t
from pathlib import Path

import orjson
import pytest

from webhook.server import logs
from webhook.server.logs import JsonFormatter, ReviewEntry, ReviewLog

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


@pytest.fixture
def review_log(tmp_path: Path) -> t.Iterator[tuple[ReviewLog, Path]]:
    """A ReviewLog whose JSON handler writes to a real file (a real file descriptor)."""
    path = tmp_path / "out.log"
    with path.open("w") as stream, json_logger(tmp_path.name, stream) as logger:
        yield ReviewLog(logger, flush_interval=3600), path
        logger.setLevel(logging.INFO)


def lines(path: Path) -> list[dict[str, t.Any]]:
    return [orjson.loads(line) for line in path.read_text().splitlines()]


def test_the_line_has_json_formatters_keys_in_its_order(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    log.write(ENTRY)
    log.flush()
    [line] = lines(path)
    assert list(line) == ["time", "level", "logger", "msg", *ReviewEntry._fields]
    assert {k: line[k] for k in FIELDS} == FIELDS
    assert (line["level"], line["logger"], line["msg"]) == ("info", log.logger.name, "review")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])
    # The same keys JsonFormatter gives a logging record carrying these fields.
    record = logging.LogRecord(log.logger.name, logging.INFO, __file__, 1, "review", None, None)
    record.fields = ENTRY.fields()
    assert list(orjson.loads(JsonFormatter().format(record))) == list(line)


def test_lines_wait_for_the_interval_or_a_flush(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    for i in range(3):
        log.write(entry(f"u-{i}"))
    assert path.read_text() == ""
    log.flush()
    assert [line["uid"] for line in lines(path)] == ["u-0", "u-1", "u-2"]
    log.flush()  # nothing pending: nothing written twice
    assert len(lines(path)) == 3


@pytest.mark.parametrize(
    ("level", "written"),
    [
        pytest.param(logging.INFO, 2, id="info-writes"),
        pytest.param(logging.WARNING, 0, id="warning-drops"),
        pytest.param(logging.ERROR, 0, id="error-drops"),
    ],
)
def test_the_level_decides_whether_a_batch_is_written(
    review_log: tuple[ReviewLog, Path], level: int, written: int
) -> None:
    log, path = review_log
    log.write(entry("u-0"))
    log.write(entry("u-1", latency_ms=0.12345678))
    log.logger.setLevel(level)  # `wasp serve --log-level warning`: no review lines
    log.flush()
    assert len(lines(path)) == written
    if written:
        assert lines(path)[1]["latency_ms"] == 0.123  # rounded to the µs when written


def test_interval_zero_writes_each_line_at_once(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    log.flush_interval = 0
    log.write(ENTRY)
    assert len(lines(path)) == 1


def test_a_full_buffer_is_written_without_waiting(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    log.batches.cap = 4
    for i in range(10):
        log.write(entry(f"u-{i}"))
    written = lines(path)
    assert len(written) == 8  # two full batches of 4; two lines still pending
    log.flush()
    assert [line["uid"] for line in lines(path)] == [f"u-{i}" for i in range(10)]


def test_the_flusher_thread_writes_within_the_interval(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    log.flush_interval = 0.05
    log.write(ENTRY)
    for _ in range(100):
        if path.read_text():
            break
        threading.Event().wait(0.02)
    assert len(lines(path)) == 1


def test_concurrent_writers_never_interleave_lines(review_log: tuple[ReviewLog, Path]) -> None:
    log, path = review_log
    log.batches.cap = 16

    def writer(n: int) -> None:
        for i in range(300):
            log.write(entry(f"{n}-{i}", name="x" * (i % 50)))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log.flush()
    uids = [line["uid"] for line in lines(path)]  # every line parses: none was torn
    assert sorted(uids) == sorted(f"{n}-{i}" for n in range(8) for i in range(300))
    for n in range(8):  # each thread's lines keep their order
        mine = [u for u in uids if u.startswith(f"{n}-")]
        assert mine == [f"{n}-{i}" for i in range(300)]


def test_a_stream_without_a_descriptor_gets_text() -> None:
    stream = io.StringIO()
    with json_logger("stringio", stream) as logger:
        ReviewLog(logger, flush_interval=0).write(ENTRY)
    assert orjson.loads(stream.getvalue())["uid"] == "u-1"


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
def test_every_line_has_every_key(
    review_log: tuple[ReviewLog, Path], review: ReviewEntry, expected: dict[str, object]
) -> None:
    log, path = review_log
    log.write(review)
    log.flush()
    [line] = lines(path)
    assert {k: v for k, v in line.items() if k not in ("time", "level", "logger", "msg")} == expected


def test_a_broken_log_pipe_never_fails_the_review(caplog: pytest.LogCaptureFixture) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: every write fails with EPIPE
    with os.fdopen(write_end, "w") as stream, json_logger("broken-pipe", stream) as logger:
        with caplog.at_level(logging.ERROR, logger="wasp"):
            ReviewLog(logger, flush_interval=0).write(ENTRY)  # must not raise
        assert [r.exc_info[0] for r in caplog.records if r.exc_info] == [BrokenPipeError]


# The line's head at 2023-11-14T22:13:20 UTC (1_700_000_000), for a logger "wasp-test.exact-bytes".
EXACT_HEAD = (
    '{"time":"2023-11-14T22:13:20.%s+00:00","level":"info","logger":"wasp-test.exact-bytes","msg":"review",'
)
ENTRY_JSON = (
    '"endpoint":"validate","uid":"u-1","kind":"Job","namespace":"default","name":"train",'
    '"operation":"CREATE","dry_run":false,"outcome":"allowed","pid":7,"latency_ms":1.234'
)


@pytest.mark.parametrize(
    ("now", "review", "expected"),
    [
        pytest.param(
            1_700_000_000.25,
            ENTRY,
            EXACT_HEAD % "250" + ENTRY_JSON + ',"code":null,"error":null,"causes":null}',
            id="allowed",
        ),
        pytest.param(
            1_700_000_000.0005,
            ENTRY._replace(outcome="denied", code=403, causes=2),
            EXACT_HEAD % "000"
            + ENTRY_JSON.replace('"allowed"', '"denied"')
            + ',"code":403,"error":null,"causes":2}',
            id="denied-millisecond-truncated",
        ),
        pytest.param(
            1_700_000_000.999,
            ReviewEntry(
                "mutate", "", None, None, None, None, True, "malformed", 7, 0.1, 400, 'bad "body"\n\\ é\x00'
            ),
            EXACT_HEAD % "999"
            + '"endpoint":"mutate","uid":"","kind":null,"namespace":null,"name":null,"operation":null,'
            + '"dry_run":true,"outcome":"malformed","pid":7,"latency_ms":0.1,"code":400,'
            + '"error":"bad \\"body\\"\\n\\\\ é\\u0000","causes":null}',
            id="error-escaped-as-json",
        ),
        pytest.param(
            1_700_000_000.25,
            ENTRY._replace(latency_ms=t.cast(float, decimal.Decimal("1.50"))),
            EXACT_HEAD % "250"
            + ENTRY_JSON.replace("1.234", '"1.50"')
            + ',"code":null,"error":null,"causes":null}',
            id="not-json-becomes-its-str",
        ),
    ],
)
def test_the_exact_bytes_of_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, now: float, review: ReviewEntry, expected: str
) -> None:
    monkeypatch.setattr(logs, "_clock", lambda: now)
    path = tmp_path / "out.log"
    with path.open("w") as stream, json_logger("exact-bytes", stream) as logger:
        log = ReviewLog(logger, flush_interval=3600)
        log.write(review)
        log.flush()
    assert path.read_bytes() == (expected + "\n").encode()
