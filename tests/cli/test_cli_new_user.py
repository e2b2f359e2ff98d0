"""What a new user met (issue 25, smaller items), through the installed ``wasp``: lines for
locations everywhere, one stream for records, generated names, messages that show their value.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from conftest import Json, Run, dump, job

RunWasp = t.Callable[..., Run]
Writer = t.Callable[..., Path]


def _line_of(path: Path, text: str, nth: int = 1) -> int:
    """The 1-based line of the ``nth`` line of ``path`` that contains ``text``."""
    found = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return found[nth - 1]


def test_compile_sources_are_file_and_line(write: Writer, run_wasp: RunWasp) -> None:
    path = write("jobs.yaml", text="# two Jobs\n" + dump(job("a")) + "---\n" + dump(job("b")))
    result = run_wasp("compile", "--uid", "u", path)
    assert result.code == 0, result.stderr
    sources = list(
        dict.fromkeys(line for line in result.stdout.splitlines() if line.startswith("# Source: "))
    )
    assert sources == [
        f"# Source: {path}:{_line_of(path, 'apiVersion: batch/v1', 1)}: Job ml/a",
        f"# Source: {path}:{_line_of(path, 'apiVersion: batch/v1', 2)}: Job ml/b",
    ]


def test_compile_errors_point_at_the_field_line_as_validate_does(write: Writer, run_wasp: RunWasp) -> None:
    path = write("jobs.yaml", text=dump(job("a")) + "---\n" + dump(job("bad", min_count=9)))
    compiled = run_wasp("compile", "--uid", "u", path)
    validated = run_wasp("validate", path)
    assert (compiled.code, validated.code) == (1, 1)
    where = (
        f"{path}:{_line_of(path, 'minCount: 9')}: Job ml/bad: spec.scheduling.schedulingPolicy.gang.minCount"
    )
    assert [line for line in compiled.stderr.splitlines() if "minCount" in line][0].startswith(
        f"wasp: {where}"
    )
    assert validated.stdout.startswith(where)


def _unnamed() -> Json:
    doc = job()
    doc["metadata"] = {"generateName": "train-", "namespace": "ml"}
    return doc


@pytest.mark.parametrize("fmt", ["text", "json", "github", "tap"])
def test_a_generate_name_object_is_named_as_judged(fmt: str, write: Writer, run_wasp: RunWasp) -> None:
    bad = _unnamed()
    bad["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 9
    result = run_wasp("validate", "-o", fmt, write("job.yaml", bad))
    assert result.code == 1
    assert "ml/train-xxxxx" in result.stdout or '"name": "train-xxxxx"' in result.stdout
    assert "<unnamed>" not in result.stdout


def test_a_generate_name_object_gets_no_old_note(write: Writer, run_wasp: RunWasp) -> None:
    """The apiserver always creates it: no previous version to miss."""
    path = write("job.yaml", _unnamed())
    result = run_wasp("validate", "-o", "json", "--old", path, path)
    [record] = result.json()["results"]
    assert (record["operation"], record["notes"]) == ("CREATE", [])


BROKEN_INPUTS = [
    pytest.param("bad.yaml", "a: {b: c\n", id="a document that does not parse"),
    pytest.param("list.yaml", "- 1\n- 2\n", id="a document that is not an object"),
    pytest.param("dup.yaml", "a: 1\na: 2\n", id="a repeated key"),
    pytest.param("missing.yaml", None, id="a file that does not exist"),
]


@pytest.mark.parametrize(("name", "text"), BROKEN_INPUTS)
def test_text_records_go_to_stdout_only(
    name: str, text: str | None, tmp_path: Path, run_wasp: RunWasp
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    good = tmp_path / "good.yaml"
    good.write_text(dump(job(min_count=9)), encoding="utf-8")
    result = run_wasp("validate", path, good)
    assert result.code == 2
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{path}:" if text is not None else f"{path}: error: ")
    assert ": error: " in lines[0]
    assert lines[1].startswith(f"{good}:")


def test_a_blocks_annotation_that_is_not_json_shows_its_value(write: Writer, run_wasp: RunWasp) -> None:
    raw = '{"schedulingPolicy": {gang: {}}}'
    doc = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "annotations": {"scheduling.wasp.dev/blocks": raw}},
        "spec": {"replicatedJobs": []},
    }
    result = run_wasp("validate", "--integrations", "jobset", "-o", "json", write("js.yaml", doc))
    [error] = result.json()["results"][0]["errors"]
    assert (error["type"], error["field"], error["badValue"]) == (
        "FieldValueInvalid",
        "metadata.annotations[scheduling.wasp.dev/blocks]",
        raw,
    )
    assert "column 23" in error["detail"]  # where in the value decoding stopped: at `gang`
