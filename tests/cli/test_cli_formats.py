"""Every output format: pinned golden output, and read back by the format's own tools.

The golden input (``golden/input``: valid, invalid, warning, skipped, not an object, a JSON
List, unparsable YAML) is validated from inside ``golden/`` so paths are relative. Set
``WASP_UPDATE_GOLDEN=1`` to rewrite the expected files after a deliberate change; the diff
is then the review.

``data/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 schema, vendored unchanged from
oasis-tcs/sarif-spec ``sarif-2.1/schema/sarif-schema-2.1.0.json`` (commit e058381).
"""

from __future__ import annotations

import json
import os
import re
import typing as t
from importlib.metadata import version
from pathlib import Path

import jsonschema
import junitparser
import pytest
from conftest import Run

from webhook.cli.reporters import REPORTERS

Runner = t.Callable[..., Run]
GOLDEN: t.Final = Path(__file__).parent / "golden"
SARIF_SCHEMA: t.Final = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SUFFIX: t.Final = {
    "text": "txt",
    "json": "json",
    "junit": "xml",
    "github": "txt",
    "sarif": "sarif",
    "tap": "tap",
}


def normalize(fmt: str, text: str) -> str:
    """Take out what changes between runs: JUnit times and the tool's version."""
    text = re.sub(r'time="[0-9.]+"', 'time="T"', text)
    return text.replace(f'"version": "{version("wasp")}"', '"version": "VERSION"')


def golden_run(run: Runner, monkeypatch: pytest.MonkeyPatch, *args: str) -> Run:
    monkeypatch.chdir(GOLDEN)
    return run("validate", "-j", "1", *args, "input")


def test_every_format_has_a_golden_file() -> None:
    assert set(SUFFIX) == set(REPORTERS)


@pytest.mark.parametrize("fmt", sorted(SUFFIX))
def test_golden_output(fmt: str, run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    result = golden_run(run, monkeypatch, "-o", fmt)
    assert result.code == 2  # an unparsable file and a non-object are in the input
    expected = GOLDEN / f"expected.{fmt}.{SUFFIX[fmt]}"
    got = normalize(fmt, result.stdout)
    if os.environ.get("WASP_UPDATE_GOLDEN"):
        expected.write_text(got, encoding="utf-8")
    assert got == expected.read_text(encoding="utf-8")


def test_sarif_validates_against_the_sarif_2_1_0_schema(run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(golden_run(run, monkeypatch, "-o", "sarif").stdout)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(doc)
    [sarif_run] = doc["runs"]
    rules = [r["id"] for r in sarif_run["tool"]["driver"]["rules"]]
    found = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["level"])
        for r in sarif_run["results"]
    }
    assert ("FieldValueInvalid", "input/jobs.yaml", "error") in found
    assert ("Warning", "input/jobs.yaml", "warning") in found
    assert ("InputError", "input/broken.yaml", "error") in found
    assert all(r["ruleId"] == rules[r["ruleIndex"]] for r in sarif_run["results"])
    assert sarif_run["invocations"] == [{"executionSuccessful": False, "exitCode": 2}]


def test_junit_reads_back_with_a_junit_parser(
    run: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = tmp_path / "report.xml"
    report.write_text(golden_run(run, monkeypatch, "-o", "junit").stdout, encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(report))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"input/broken.yaml", "input/jobs.yaml", "input/list.json", "input/notk8s.yaml"}
    jobs = suites["input/jobs.yaml"]
    assert (jobs.tests, jobs.failures, jobs.errors, jobs.skipped) == (4, 1, 0, 1)
    verdicts = {case.name: tuple(type(r).__name__ for r in case.result) for s in xml for case in s}
    assert verdicts["Job ml/bad (input/jobs.yaml:20)"] == ("Failure",)
    assert verdicts["ConfigMap settings (input/jobs.yaml:57)"] == ("Skipped",)
    assert verdicts["Job ml/ok (input/jobs.yaml:2)"] == ()
    [bad] = [c for c in jobs if c.name.startswith("Job ml/bad")]
    [failure] = bad.result
    assert "spec.scheduling.schedulingPolicy.gang.minCount" in (failure.text or "")
    assert bad.classname == "Job" and bad.time >= 0


def test_tap_is_well_formed(run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = golden_run(run, monkeypatch, "-o", "tap").stdout.splitlines()
    assert lines[0] == "TAP version 13"
    points = [line for line in lines if re.match(r"(not )?ok \d+ ", line)]
    assert lines[-2] == f"1..{len(points)}"
    numbers = [int(re.match(r"(?:not )?ok (\d+)", p).group(1)) for p in points]  # type: ignore[union-attr]
    assert numbers == list(range(1, len(points) + 1))
    assert sum(p.startswith("not ok") for p in points) == 4  # 2 invalid, 2 that cannot be judged
    assert sum("# SKIP" in p for p in points) == 1


def test_json_results_stream_as_one_document(run: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(golden_run(run, monkeypatch, "-o", "json").stdout)
    assert [r["status"] for r in doc["results"]] == [
        "error", "valid", "invalid", "valid", "skipped", "invalid", "error",
    ]  # fmt: skip


# ------------------------------------------- a manifest's control characters never reach the outputs raw


def _hostile(write: t.Callable[..., Path]) -> Path:
    """A Job named with a control character and an ANSI escape, and an invalid gang."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "tr\u0001ain\u001b[2Jx", "namespace": "ml"},
           "spec": {"parallelism": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 9}}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}  # fmt: skip
    return write("ctl.json", text=json.dumps(job))


@pytest.mark.parametrize("fmt", ["text", "github", "tap", "junit"])
def test_control_characters_are_shown_escaped(
    fmt: str, run: Runner, write: t.Callable[..., Path], tmp_path: Path
) -> None:
    """Raw, \\x01 makes a JUnit report ill-formed XML (XML 1.0 forbids it) and ESC sequences move
    a CI log's terminal; they are shown as \\xNN."""
    result = run("validate", "-o", fmt, _hostile(write))
    assert result.code == 1
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", result.stdout)
    assert "tr\\x01ain\\x1b[2Jx" in result.stdout
    if fmt == "junit":
        report = tmp_path / "r.xml"
        report.write_text(result.stdout, encoding="utf-8")
        [suite] = list(junitparser.JUnitXml.fromfile(str(report)))
        assert suite.failures == 1


def test_json_keeps_the_name_as_it_is(run: Runner, write: t.Callable[..., Path]) -> None:
    [record] = run("validate", "-o", "json", _hostile(write)).json()["results"]
    assert record["name"] == "tr\u0001ain\u001b[2Jx"


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(["b.out", "b.out"], id="the same name"),
        pytest.param(["b.out", "./sub/../b.out"], id="the same file spelled differently"),
    ],
)
def test_two_outputs_to_one_file_are_a_usage_error(
    files: list[str],
    run: Runner,
    write: t.Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    result = run("validate", "-o", f"json={files[0]}", "-o", f"junit={files[1]}", _hostile(write))
    assert result.code == 2
    assert "two -o write to one file" in result.stderr
