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
