"""``wasp validate`` in process (click's CliRunner): inputs, verdicts, exit codes, options."""

from __future__ import annotations

import json
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import EXAMPLES, Json, Run, dump, job

from webhook.cli.parallel import plan, spans

Runner = t.Callable[..., Run]
Writer = t.Callable[..., Path]

GANG_NO_PARALLELISM = job(parallelism=None, min_count=2)


@dataclass(frozen=True)
class Case:
    id: str
    text: str  # the file content
    code: int
    statuses: list[str]
    errors: list[tuple[str, str]] = field(default_factory=list)  # (type, field) over all results
    args: tuple[str, ...] = ()


CASES = [
    Case("a valid gang Job exits 0", dump(job()), 0, ["valid"]),
    Case(
        "minCount above parallelism is invalid at the minCount field",
        dump(job(min_count=9)),
        1,
        ["invalid"],
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")],
    ),
    Case(
        "an unset parallelism counts as 1 (batch/v1 default, from the policy)",
        dump(GANG_NO_PARALLELISM),
        1,
        ["invalid"],
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")],
    ),
    Case(
        "a kind no policy governs is skipped and exits 0",
        dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        0,
        ["skipped"],
    ),
    Case("an empty file reports nothing and exits 0", "", 0, []),
    Case(
        "a file of comments and empty documents reports nothing",
        "# nothing\n---\n---\n# still nothing\n",
        0,
        [],
    ),
    Case("a mapping without apiVersion/kind is an error and exits 2", "foo: bar\n", 2, ["error"]),
    Case("a scalar document is an error and exits 2", "just a string\n", 2, ["error"]),
    Case(
        "--skip-non-kubernetes skips non-objects and exits 0",
        "foo: bar\n---\n- 1\n",
        0,
        ["skipped", "skipped"],
        args=("--skip-non-kubernetes",),
    ),
    Case(
        "unparsable YAML after a valid document keeps the first verdict and exits 2",
        dump(job()) + "---\na: [1, 2\n",
        2,
        ["valid", "error"],
    ),
    Case(
        "an invalid and an unparsable document: 2 wins over 1",
        dump(job(min_count=9)) + "---\na: b: c\n",
        2,
        ["invalid", "error"],
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")],
    ),
    Case(
        "a v1 List is expanded into its items",
        dump({"apiVersion": "v1", "kind": "List", "items": [job("a"), job("b", min_count=9)]}),
        1,
        ["valid", "invalid"],
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")],
    ),
    Case(
        "any kind ending in List with items is expanded",
        dump({"apiVersion": "batch/v1", "kind": "JobList", "items": [job("a")]}),
        0,
        ["valid"],
    ),
    Case(
        "an explicit parallelism of 0 passes with a warning",
        dump(job(parallelism=0, min_count=3)),
        0,
        ["valid"],
    ),
    Case(
        "--strict fails on a warning",
        dump(job(parallelism=0, min_count=3)),
        1,
        ["valid"],
        args=("--strict",),
    ),
    Case(
        "basic and gang together is invalid at schedulingPolicy",
        dump(job(scheduling={"schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}})),
        1,
        ["invalid"],
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy")],
    ),
    Case(
        "feature gate WorkloadWithJob off drops the block with a warning",
        dump(job(min_count=9)),
        0,
        ["valid"],
        args=("--feature-gates", "WorkloadWithJob=false"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_table(case: Case, run: Runner, write: Writer) -> None:
    path = write("in.yaml", text=case.text)
    result = run("validate", "-o", "json", *case.args, path)
    assert result.code == case.code, result.stderr
    doc = result.json()
    assert [r["status"] for r in doc["results"]] == case.statuses
    got = sorted((e["type"], e["field"]) for r in doc["results"] for e in r["errors"])
    assert got == sorted(case.errors)
    counts = {s: case.statuses.count(s) for s in ("valid", "invalid", "skipped")}
    assert {k: doc["summary"][k] for k in ("valid", "invalid", "skipped", "errors")} == {
        **counts,
        "errors": case.statuses.count("error"),
    }


def test_parse_error_names_file_and_line_on_stdout(run: Runner, write: Writer) -> None:
    path = write("broken.yaml", text="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n")
    result = run("validate", path)
    assert result.code == 2
    assert result.stdout.startswith(f"{path}:5:")  # libyaml stops at end of input, line 5
    assert result.stderr == ""
    doc = run("validate", "-o", "json", path).json()
    [record] = doc["results"]
    assert (record["status"], record["document"], record["line"]) == ("error", 0, 5)


def test_unreadable_and_missing_files_exit_2(run: Runner, tmp_path: Path) -> None:
    result = run("validate", "-o", "json", tmp_path / "nope.yaml")
    assert result.code == 2
    assert result.stderr == ""
    [record] = result.json()["results"]
    assert "nope.yaml" in record["reason"]
    assert (record["status"], record["document"]) == ("error", None)


def test_document_index_and_line_are_reported(run: Runner, write: Writer) -> None:
    path = write(
        "multi.yaml", text="# header\n" + dump(job("a")) + "---\n---\n" + dump(job("b", min_count=9))
    )
    doc = run("validate", "-o", "json", path).json()
    a, b = doc["results"]
    assert (a["document"], a["line"], a["name"], a["namespace"], a["kind"]) == (0, 2, "a", "ml", "Job")
    assert b["document"] == 2
    assert b["line"] > a["line"]
    # The error points at the minCount line itself.
    lines = path.read_text().splitlines()
    assert "minCount: 9" in lines[b["errors"][0]["line"] - 1]


def test_stdin_is_read_with_dash_and_by_default(run: Runner) -> None:
    for args in (("validate", "-o", "json", "-"), ("validate", "-o", "json")):
        result = run(*args, input=dump(job(min_count=9)))
        assert result.code == 1
        assert result.json()["results"][0]["file"] == "<stdin>"


def test_directories_are_walked_recursively_for_yaml_yml_json(
    run: Runner, write: Writer, tmp_path: Path
) -> None:
    write("deploy/a.yaml", job("a"))
    write("deploy/nested/b.yml", job("b", min_count=9))
    write("deploy/nested/c.json", text=json.dumps(job("c")))
    write("deploy/README.md", text="# not a manifest: ignored\n")
    write("deploy/.hidden/d.yaml", text="not: kubernetes\n")
    doc = run("validate", "-o", "json", tmp_path / "deploy").json()
    assert [(Path(r["file"]).name, r["status"]) for r in doc["results"]] == [
        ("a.yaml", "valid"),
        ("b.yml", "invalid"),
        ("c.json", "valid"),
    ]


def test_json_input_has_field_lines_and_the_same_verdict(run: Runner, write: Writer) -> None:
    path = write("job.json", text=json.dumps(job(min_count=9), indent=2))
    [record] = run("validate", "-o", "json", path).json()["results"]
    assert record["status"] == "invalid"
    assert '"minCount": 9' in path.read_text().splitlines()[record["errors"][0]["line"] - 1]


def test_summary_prints_only_the_summary(run: Runner, write: Writer) -> None:
    path = write("in.yaml", job(min_count=9), job("b"))
    text = run("validate", "--summary", path)
    assert text.code == 1
    assert text.stdout.count("\n") == 1 and "1 invalid" in text.stdout
    assert run("validate", "--summary", "-o", "json", path).json() == {
        "summary": {
            "valid": 1,
            "invalid": 1,
            "warned": 0,
            "skipped": 0,
            "errors": 0,
            "warnings": 0,
            "files": 1,
            "unreadable": 0,
        }
    }


def test_text_output_is_file_line_kind_name_and_apimachinery_message(run: Runner, write: Writer) -> None:
    path = write("in.yaml", job(min_count=9))
    result = run("validate", path)
    first = result.stdout.splitlines()[0]
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "minCount: 9" in text)
    assert first.startswith(
        f"{path}:{line}: Job ml/train: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9"
    )
    assert "\033[" not in result.stdout  # not a terminal: no colour


def test_color_always_and_no_color(run: Runner, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write("in.yaml", job(min_count=9))
    assert "\033[31m" in run("validate", "--color", "always", path).stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033[" not in run("validate", path).stdout


def test_warnings_are_marked_in_text(run: Runner, write: Writer) -> None:
    result = run("validate", write("in.yaml", job(parallelism=0, min_count=3)))
    assert ": warning: " in result.stdout


def test_usage_errors_exit_2(run: Runner, write: Writer) -> None:
    path = write("in.yaml", job())
    assert run("validate", "--feature-gates", "NoSuchGate=true", path).code == 2
    assert run("validate", "-o", "yaml", path).code == 2
    assert run("validate", "--policy-only", path).code == 2
    assert run("validate", "--old", "-", "-", input="").code == 2


# --------------------------------------------------------------------------- policies


def trainer(workers: int, min_count: int) -> Json:
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "resnet", "namespace": "ml"},
        "spec": {"workers": workers, "scheduling": {"schedulingPolicy": {"gang": {"minCount": min_count}}}},
    }


def test_policies_add_crd_policies_to_the_builtins(run: Runner, write: Writer) -> None:
    path = write("in.yaml", trainer(2, 4), job(min_count=9))
    without = run("validate", "-o", "json", path).json()
    assert [r["status"] for r in without["results"]] == ["skipped", "invalid"]
    with_policy = run(
        "validate", "-o", "json", "--policies", EXAMPLES / "trainer" / "policy.yaml", path
    ).json()
    assert [r["status"] for r in with_policy["results"]] == ["invalid", "invalid"]


def test_policy_only_drops_the_builtins(run: Runner, write: Writer) -> None:
    path = write("in.yaml", trainer(2, 4), job(min_count=9))
    doc = run(
        "validate", "-o", "json", "--policy-only", "--policies", EXAMPLES / "trainer" / "policy.yaml", path
    ).json()
    assert [r["status"] for r in doc["results"]] == ["invalid", "skipped"]


def test_a_bad_policy_file_exits_2_naming_the_file(run: Runner, write: Writer) -> None:
    bad = write(
        "policy.yaml", {"apiVersion": "wasp.dev/v1alpha1", "kind": "SchedulingIntegration", "spec": {}}
    )
    result = run("validate", "--policies", bad, write("in.yaml", job()))
    assert result.code == 2
    assert str(bad) in result.stderr


# --------------------------------------------------------------------------- --old


OLD_CASES = [
    (
        "raising minCount with parallelism is a valid update",
        job(min_count=4),
        job(min_count=4, parallelism=4),
        0,
        [],
    ),
    (
        "switching gang to basic on update is invalid",
        job(min_count=4),
        job(scheduling={"schedulingPolicy": {"basic": {}}}),
        1,
        [("FieldValueInvalid", "spec.scheduling.schedulingPolicy")],
    ),
    (
        "an old object with another name is not paired (checked as create)",
        job("other", min_count=4),
        job(scheduling={"schedulingPolicy": {"basic": {}}}),
        0,
        [],
    ),
    (
        "an old object in another namespace is not paired",
        job(namespace="other", min_count=4),
        job(scheduling={"schedulingPolicy": {"basic": {}}}),
        0,
        [],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "code", "errors"), [c[1:] for c in OLD_CASES], ids=[c[0] for c in OLD_CASES]
)
def test_old_update_checks(
    old: Json, new: Json, code: int, errors: list[tuple[str, str]], run: Runner, write: Writer
) -> None:
    result = run("validate", "-o", "json", "--old", write("old.yaml", old), write("new.yaml", new))
    assert result.code == code, result.stdout
    assert sorted((e["type"], e["field"]) for r in result.json()["results"] for e in r["errors"]) == errors


def test_old_from_stdin(run: Runner, write: Writer) -> None:
    new = write("new.yaml", job(scheduling={"schedulingPolicy": {"basic": {}}}))
    result = run("validate", "-o", "json", "--old", "-", new, input=dump(job(min_count=4)))
    assert result.code == 1
    assert result.json()["results"][0]["errors"][0]["field"] == "spec.scheduling.schedulingPolicy"


def test_unparsable_old_exits_2(run: Runner, write: Writer) -> None:
    result = run("validate", "--old", write("old.yaml", text="a: [\n"), write("new.yaml", job()))
    assert result.code == 2
    assert "old.yaml" in result.stderr


# --------------------------------------------------------------------------- parallel runs


def test_parallel_and_serial_runs_agree(run: Runner, write: Writer, tmp_path: Path) -> None:
    for i in range(6):
        write(f"many/f{i}.yaml", *(job(f"j{i}-{d}", min_count=9 if d % 3 == 0 else 4) for d in range(5)))
    serial = run("validate", "-o", "json", "-j", "1", tmp_path / "many")
    parallel = run("validate", "-o", "json", "-j", "2", tmp_path / "many")
    assert serial.code == parallel.code == 1
    assert serial.json() == parallel.json()


SPAN_CASES = [
    ("a large file of valid and invalid Jobs", ""),
    ("a parse error in a late span drops the rest of the file", "---\na: [1, 2\n"),
    ("a duplicate key in a late span is an error and the file goes on", "---\na: 1\na: 2\n"),
    ("empty documents and a List keep their document indices", "---\n---\n# nothing\n---\n"),
]


@pytest.mark.parametrize("tail", [c[1] for c in SPAN_CASES], ids=[c[0] for c in SPAN_CASES])
def test_one_large_file_split_over_processes_gives_the_serial_records(
    tail: str, run: Runner, write: Writer
) -> None:
    head = dump(*(job(f"j{d}", min_count=9 if d % 7 == 0 else 4) for d in range(200)))
    more = dump({"apiVersion": "v1", "kind": "List", "items": [job("l1"), job("l2", min_count=9)]})
    body = dump(*(job(f"k{d}") for d in range(200)))
    path = write("big.yaml", text=head + tail + "---\n" + more + "---\n" + body)
    assert len(plan([str(path)], 2)) >= 3  # cut into spans: the tail is in a late one
    serial = run("validate", "-o", "json", "-j", "1", path)
    parallel = run("validate", "-o", "json", "-j", "2", path)
    assert (serial.code, serial.json()) == (parallel.code, parallel.json())
    assert len(serial.json()["results"]) > 200


UNCUT = [
    ("a %YAML directive binds to the next document", "%YAML 1.1\n---\na: 1\n"),
    ("a bare carriage return is a YAML line break", "a: 1\r"),
    ("NEL is a YAML 1.1 line break", "a: 1\x85"),
    ("LS is a YAML 1.1 line break", "a: '1\u2028'\n"),
]


@pytest.mark.parametrize("text", [c[1] for c in UNCUT], ids=[c[0] for c in UNCUT])
def test_files_whose_lines_a_span_would_shift_are_not_cut(text: str) -> None:
    body = "---\nk: v\n" * 4000
    assert spans(body, 1024) is not None
    assert spans(text + body, 1024) is None
