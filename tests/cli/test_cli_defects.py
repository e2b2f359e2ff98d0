"""The defects of issue 18, one test each (each failed before its fix)."""

from __future__ import annotations

import json
import os
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import Run, dump, job

from webhook.cli import checker

Runner = t.Callable[..., Run]
Writer = t.Callable[..., Path]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def test_1_text_output_gives_the_line_of_the_field_not_the_document_index(run: Runner, write: Writer) -> None:
    path = write("invalid.yaml", job("a"), job("b", min_count=9))
    first = run("validate", path).stdout.splitlines()[0]
    assert first.startswith(f"{path}:{line_of(path, 'minCount: 9')}: Job ml/b: ")


DUPLICATE_CASES = [
    (
        "a repeated minCount is refused at the second one",
        "in.yaml",
        dump(job(min_count=9)).replace("minCount: 9", "minCount: 9\n        minCount: 2"),
        "minCount: 2",
    ),
    (
        "a repeated key in JSON is refused at the second one",
        "in.json",
        json.dumps(job(min_count=2), indent=2).replace('"minCount": 2', '"minCount": 9,\n"minCount": 2'),
        '"minCount": 2',
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "needle"), [c[1:] for c in DUPLICATE_CASES], ids=[c[0] for c in DUPLICATE_CASES]
)
def test_2_duplicate_keys_are_refused_at_the_duplicates_line(
    name: str, text: str, needle: str, run: Runner, write: Writer
) -> None:
    path = write(name, text=text)
    result = run("validate", "-o", "json", path)
    assert result.code == 2
    [record] = result.json()["results"]
    assert (record["status"], record["line"]) == ("error", line_of(path, needle))
    assert "duplicate key" in record["reason"] and "minCount" in record["reason"]


NOT_MANIFESTS = [
    (
        "a Helm template",
        "t.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    ),
    ("a GitLab CI file with !reference", "ci.yml", "test:\n  script:\n    - !reference [.setup, script]\n"),
    (
        "a CloudFormation template with !Ref",
        "cf.yaml",
        "Resources:\n  B:\n    Properties:\n      Name: !Ref N\n",
    ),
    ("JSON with comments", "tsconfig.json", '{\n  // comment\n  "a": 1\n}\n'),
]


@pytest.mark.parametrize(("name", "text"), [c[1:] for c in NOT_MANIFESTS], ids=[c[0] for c in NOT_MANIFESTS])
def test_3_the_hook_skips_files_that_are_not_manifests_and_says_so_with_v(
    name: str, text: str, run: Runner, write: Writer
) -> None:
    path = write(name, text=text)
    assert run("validate", path).code == 2  # without the flag: input that cannot be judged
    result = run("validate", "--skip-non-kubernetes", "-v", path)
    assert result.code == 0, result.stdout + result.stderr
    assert f"{path}" in result.stdout and "skipped (not a Kubernetes manifest" in result.stdout


AFTER_A_TEMPLATE = [
    pytest.param("x: {{ .Values.x }}\n", id="a Helm template document"),
    pytest.param("ref: !Ref Bucket\n", id="a tagged document"),
]


@pytest.mark.parametrize("broken", AFTER_A_TEMPLATE)
def test_3_a_document_that_is_not_a_manifest_hides_none_after_it(
    broken: str, run: Runner, write: Writer
) -> None:
    """Skipped, the document ends only itself: reading goes on at the next `---`, so an invalid
    Job after it still fails the hook (it passed, exit 0, judged by nobody)."""
    text = "---\n".join([dump(job("a")), broken, dump(job("b", min_count=9)), dump(job("c"))])
    path = write("mixed.yaml", text=text)
    result = run("validate", "-o", "json", "--skip-non-kubernetes", path)
    assert result.code == 1, result.stdout
    rows = [(r["document"], r["status"], r["name"]) for r in result.json()["results"]]
    assert rows == [(0, "valid", "a"), (1, "skipped", None), (2, "invalid", "b"), (3, "valid", "c")]
    [bad] = [r for r in result.json()["results"] if r["name"] == "b"]
    assert text.splitlines()[bad["errors"][0]["line"] - 1].strip().startswith("minCount: 9")


def test_3_include_and_exclude_choose_the_files(run: Runner, write: Writer, tmp_path: Path) -> None:
    write("repo/deploy/a.yaml", job("a"))
    write("repo/charts/x/templates/t.yaml", text="a: {{ b }}\n")
    write("repo/deploy/b.yml", job("b", min_count=9))
    root = tmp_path / "repo"
    excluded = run("validate", "-o", "json", "--exclude", "templates", root).json()
    assert [Path(r["file"]).name for r in excluded["results"]] == ["a.yaml", "b.yml"]
    included = run("validate", "-o", "json", "--include", "*.yaml", "--exclude", "charts/*", root).json()
    assert [Path(r["file"]).name for r in included["results"]] == ["a.yaml"]


def refuse_listing(monkeypatch: pytest.MonkeyPatch, locked: Path) -> None:
    """Make ``locked`` (created here) a directory that cannot be listed: root reads any mode,
    so listing it is refused the way EACCES does."""
    locked.mkdir(parents=True)
    real_scandir = os.scandir

    def scandir(path: t.Any = ".") -> t.Any:
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(locked))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_4_an_unreadable_directory_exits_2(
    run: Runner, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("deploy/ok.yaml", job())
    refuse_listing(monkeypatch, tmp_path / "deploy" / "locked")
    result = run("validate", "-o", "json", tmp_path / "deploy")
    assert result.code == 2
    reasons = [r["reason"] for r in result.json()["results"] if r["status"] == "error"]
    assert any("locked" in r and "Permission denied" in r for r in reasons)
    assert result.stderr == ""  # a record goes to the outputs only (docs/cli.md)
    assert result.json()["summary"]["unreadable"] == 1


def test_4_an_unreadable_directory_keeps_its_place_in_the_output(
    run: Runner, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its error comes where its files would have (it came before every record)."""
    for name in ("a.yaml", "b-c/x.yaml", "c/z.yaml"):
        write(f"deploy/{name}", job(name.split("/")[0].split(".")[0]))
    refuse_listing(monkeypatch, tmp_path / "deploy" / "b")
    result = run("validate", "-o", "json", tmp_path / "other.yaml", tmp_path / "deploy")
    assert result.code == 2
    rows = [(Path(r["file"]).relative_to(tmp_path).as_posix(), r["status"]) for r in result.json()["results"]]
    assert rows == [
        ("other.yaml", "error"),  # missing: read in its place, as before
        ("deploy/a.yaml", "valid"),
        ("deploy/b-c/x.yaml", "valid"),
        ("deploy/b", "error"),  # "deploy/b/..." sorts after "deploy/b-c/..."
        ("deploy/c/z.yaml", "valid"),
    ]


CHART_TEMPLATES = [
    pytest.param("chart/templates/job.yaml", "skipped", id="a quoted template in a chart"),
    pytest.param("chart/templates/sub/job.yaml", "skipped", id="in a subdirectory of templates"),
    pytest.param("not-a-chart/templates/job.yaml", "invalid", id="templates without a Chart.yaml"),
    pytest.param("chart/job.yaml", "invalid", id="beside the chart's templates"),
]


@pytest.mark.parametrize(("where", "status"), CHART_TEMPLATES)
def test_3_the_hook_skips_chart_templates_even_when_they_parse(
    where: str, status: str, run: Runner, write: Writer, tmp_path: Path
) -> None:
    """Quoted actions are valid YAML: the Job's minCount was judged (and refused) as written."""
    write("chart/Chart.yaml", text="apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    text = dump(job("x", min_count=2)).replace("minCount: 2", 'minCount: "{{ .Values.minCount }}"')
    path = write(where, text=text)
    assert run("validate", "-o", "json", path).json()["results"][0]["status"] == "invalid"
    result = run("validate", "-o", "json", "--skip-non-kubernetes", tmp_path)
    [record] = [r for r in result.json()["results"] if r["file"] == str(path)]
    assert record["status"] == status
    if status == "skipped":
        assert "Helm chart template" in record["reason"]
        assert result.code == 0, result.stdout


def test_4_a_missing_file_is_not_counted_as_an_object(run: Runner, tmp_path: Path) -> None:
    result = run("validate", "-o", "json", tmp_path / "nope.yaml")
    assert result.code == 2
    summary = result.json()["summary"]
    assert (summary["valid"], summary["invalid"], summary["errors"], summary["unreadable"]) == (0, 0, 0, 1)
    assert "0 objects" in run("validate", tmp_path / "nope.yaml").stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [((), 0), (("--fail-on-empty",), 2)],
    ids=["nothing found passes by default", "--fail-on-empty exits 2 when nothing is found"],
)
def test_5_zero_objects_say_nothing_was_checked(args: tuple[str, ...], code: int, run: Runner) -> None:
    result = run("validate", *args, "-", input="")
    assert result.code == code
    assert "nothing checked" in result.stdout.splitlines()[-1]


def test_6_json_inputs_are_annotated_at_the_fields_line(run: Runner, write: Writer) -> None:
    path = write("job.json", text=json.dumps(job(min_count=9), indent=2))
    [annotation] = [
        x for x in run("validate", "-o", "github", path).stdout.splitlines() if x.startswith("::error")
    ]
    props = dict(p.split("=", 1) for p in annotation[len("::error ") :].split("::", 1)[0].split(","))
    assert int(props["line"]) == line_of(path, '"minCount": 9')


def test_7_junit_has_time_file_a_dotless_classname_and_bodies(run: Runner, write: Writer) -> None:
    path = write("a.b.yaml", job("bad", min_count=9), text=None)
    path.write_text(dump(job("bad", min_count=9)) + "---\nfoo: bar\n")
    root = ET.fromstring(run("validate", "-o", "junit", path).stdout.split("\n", 1)[1])
    invalid, error = root.findall("./testsuite/testcase")
    for case in (invalid, error):
        assert case.get("file") == str(path) and float(case.get("time", "x")) >= 0
        assert "." not in (case.get("classname") or ".")
    failure, problem = invalid.find("failure"), error.find("error")
    assert failure is not None and "spec.scheduling.schedulingPolicy.gang.minCount" in (failure.text or "")
    assert problem is not None and "apiVersion" in (problem.text or "")


def test_8_an_internal_crash_exits_2_with_one_line(
    run: Runner, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> t.NoReturn:
        raise RuntimeError("boom")

    monkeypatch.setattr(checker, "validate_object", boom)
    result = run("validate", "-j", "1", write("in.yaml", job()))
    assert result.code == 2
    assert result.stderr.splitlines() == ["wasp: internal error: RuntimeError: boom"]


@pytest.mark.parametrize("output", ["text", "json", "github", "junit", "sarif", "tap"])
def test_8_output_never_fails_on_the_terminals_encoding(
    output: str, run_wasp: t.Callable[..., Run], write: Writer
) -> None:
    path = write("in.yaml", job("tränïng", min_count=9))
    result = run_wasp("validate", "-o", output, path, env={"PYTHONIOENCODING": "ascii"})
    assert result.code == 1, result.stderr
    assert "Traceback" not in result.stderr
    if output in ("json", "sarif"):
        assert "tränïng" in json.dumps(json.loads(result.stdout), ensure_ascii=False)


def test_9_forbidden_errors_have_a_null_bad_value_and_results_say_the_operation(
    run: Runner, write: Writer
) -> None:
    forbidden = job(scheduling={"schedulingPolicy": {"gang": {"minCount": 2}}, "unknownField": 1})
    path = write("in.yaml", forbidden)
    result = run("validate", "-o", "json", path).json()
    [record] = result["results"]
    assert record["operation"] == "CREATE"
    kinds = {e["type"]: e["badValue"] for e in record["errors"]}
    assert kinds.get("FieldValueForbidden", "absent") is None, kinds
    updated = run("validate", "-o", "json", "--old", write("old.yaml", job()), write("new.yaml", job()))
    assert updated.json()["results"][0]["operation"] == "UPDATE"


def test_10_symlinked_directories_are_followed_once(run: Runner, write: Writer, tmp_path: Path) -> None:
    write("real/job.yaml", job(min_count=9))
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "deploy" / "linked" / "loop").symlink_to(tmp_path / "deploy", target_is_directory=True)
    result = run("validate", "-o", "json", tmp_path / "deploy")
    assert result.code == 1
    assert [Path(r["file"]).name for r in result.json()["results"]] == ["job.yaml"]


def test_10_a_tab_indentation_error_mentions_the_tab(run: Runner, write: Writer) -> None:
    result = run("validate", write("in.yaml", text="apiVersion: v1\nkind: ConfigMap\ndata:\n\tk: v\n"))
    assert result.code == 2
    assert "tab" in result.stdout and ":4:1: error:" in result.stdout
