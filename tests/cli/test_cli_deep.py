"""Deeply nested documents through the installed ``wasp validate``: a verdict or an input error
at the document, in every format, never an internal error (RecursionError) or cut output.

libyaml refuses YAML nested deeper than 1,000 levels itself; JSON sources get the same bound
(:data:`webhook.manifests.loader.MAX_DEPTH`), and everything up to it is judged.
"""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import pytest
from conftest import Run

from webhook.manifests.loader import MAX_DEPTH

RunWasp = t.Callable[..., Run]
HEAD = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: deep\n"


def flow(levels: int) -> str:
    """A flow mapping ``{a: {a: ... 1}}`` of ``levels`` nested mappings."""
    return "{a: " * levels + "1" + "}" * levels


def block(levels: int, indent: int) -> str:
    lines = [" " * (indent + 2 * i) + "a:" for i in range(levels)]
    return "\n" + "\n".join(lines) + "\n" + " " * (indent + 2 * levels) + "b: 1"


def json_job(levels_under_parallelism: int) -> str:
    # The Job is level 1, spec level 2: the value adds its own levels below.
    value = '{"a":' * levels_under_parallelism + "1" + "}" * levels_under_parallelism
    return (
        '{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"deep"},"spec":{"parallelism":'
        + value
        + "}}"
    )


# (file name, text, exit code, (error type, field) of the first error or None)
CASES = [
    pytest.param(
        "labels.yaml", HEAD + "  labels: " + flow(980), 0, None, id="yaml-flow-980-levels-in-labels"
    ),
    pytest.param(
        "labels-block.yaml", HEAD + "  labels:" + block(980, 4), 0, None, id="yaml-block-980-levels"
    ),
    pytest.param(
        "parallelism.yaml",
        HEAD + "spec:\n  parallelism: " + flow(990),
        1,
        ("FieldValueTypeInvalid", "spec.parallelism"),
        id="yaml-990-levels-as-a-bad-value",
    ),
    pytest.param(
        "unknown.yaml",
        HEAD + "spec:\n  scheduling:\n    x: " + flow(990),
        1,
        ("FieldValueForbidden", "spec.scheduling.x"),
        id="yaml-990-levels-unknown-block-field",
    ),
    pytest.param(
        "list.yaml",
        HEAD + "spec:\n  scheduling:\n    schedulingPolicy:\n      gang: " + "[" * 990 + "1" + "]" * 990,
        1,
        ("FieldValueTypeInvalid", "spec.scheduling.schedulingPolicy.gang"),
        id="yaml-990-levels-of-lists-in-a-block",
    ),
    pytest.param(
        "too-deep.yaml", HEAD + "  labels: " + flow(1200), 2, None, id="yaml-deeper-than-libyaml-allows"
    ),
    pytest.param(
        "at-bound.json",
        json_job(MAX_DEPTH - 2),
        1,
        ("FieldValueTypeInvalid", "spec.parallelism"),
        id="json-exactly-the-bound",
    ),
    pytest.param("past-bound.json", json_job(MAX_DEPTH - 1), 2, None, id="json-one-level-past-the-bound"),
    pytest.param("far-past.json", json_job(50_000), 2, None, id="json-far-past-the-interpreter-limit"),
]


@pytest.mark.parametrize(("name", "text", "code", "first_error"), CASES)
@pytest.mark.parametrize("fmt", ["json", "text", "junit", "sarif"])
def test_deep_documents_get_a_verdict_in_every_format(
    run_wasp: RunWasp,
    tmp_path: Path,
    name: str,
    text: str,
    code: int,
    first_error: tuple[str, str] | None,
    fmt: str,
) -> None:
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    result = run_wasp("validate", "-o", fmt, path)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr[-500:]
    assert result.code == code, result.stderr[-500:]
    if fmt != "json":
        return
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * MAX_DEPTH)  # a bad value is shown whole, as deep as it is
    try:
        doc = json.loads(result.stdout)  # the whole output, not cut by a crash
    finally:
        sys.setrecursionlimit(limit)
    (record,) = doc["results"]
    if code == 2:
        assert record["status"] == "error"
        assert "nest" in record["reason"]
    elif first_error is not None:
        err = record["errors"][0]
        assert (err["type"], err["field"]) == first_error
