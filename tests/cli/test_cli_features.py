"""The CI conventions of issue 18: several outputs, --skip/--reject, --exit-on-error, the
warnings' exit code and the directory form of --old."""

from __future__ import annotations

import json
import shutil
import subprocess
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, Run, job

Runner = t.Callable[..., Run]
Writer = t.Callable[..., Path]

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}


def test_several_outputs_in_one_run(run: Runner, write: Writer, tmp_path: Path) -> None:
    path = write("in.yaml", job("ok"), job("bad", min_count=9))
    junit, sarif = tmp_path / "out" / "report.xml", tmp_path / "report.sarif"
    junit.parent.mkdir()
    result = run("validate", "-o", f"junit={junit}", "-o", f"sarif={sarif}", "-o", "json", path)
    assert result.code == 1
    assert [r["status"] for r in result.json()["results"]] == ["valid", "invalid"]
    assert len(ET.parse(junit).getroot().findall("./testsuite/testcase")) == 2
    assert [r["ruleId"] for r in json.loads(sarif.read_text())["runs"][0]["results"]] == ["FieldValueInvalid"]


OUTPUT_USAGE = [
    ("two outputs on stdout are a usage error", ("-o", "text", "-o", "json")),
    ("an unknown format is a usage error", ("-o", "yaml",)),
    ("a format with '=' and no file is a usage error", ("-o", "json=",)),
]  # fmt: skip


@pytest.mark.parametrize("args", [c[1] for c in OUTPUT_USAGE], ids=[c[0] for c in OUTPUT_USAGE])
def test_output_usage_errors_exit_2(args: tuple[str, ...], run: Runner, write: Writer) -> None:
    assert run("validate", *args, write("in.yaml", job())).code == 2


def test_an_output_file_that_cannot_be_written_exits_2(run: Runner, write: Writer, tmp_path: Path) -> None:
    result = run("validate", "-o", f"json={tmp_path / 'no' / 'such' / 'dir.json'}", write("in.yaml", job()))
    assert result.code == 2 and "cannot write" in result.stderr


KIND_CASES = [
    ("--skip by kind skips an invalid Job", ("--skip", "Job"), 0, ["skipped", "skipped"], []),
    ("--skip by apiVersion/Kind", ("--skip", "batch/v1/Job"), 0, ["skipped", "skipped"], []),
    (
        "--reject makes a kind invalid at its kind field",
        ("--reject", "ConfigMap,Secret"),
        1,
        ["invalid", "invalid"],
        [
            ("FieldValueForbidden", "kind"),
            ("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("args", "code", "statuses", "errors"), [c[1:] for c in KIND_CASES], ids=[c[0] for c in KIND_CASES]
)
def test_skip_and_reject_kinds(
    args: tuple[str, ...],
    code: int,
    statuses: list[str],
    errors: list[tuple[str, str]],
    run: Runner,
    write: Writer,
) -> None:
    result = run("validate", "-o", "json", *args, write("in.yaml", job(min_count=9), CONFIGMAP))
    assert result.code == code
    doc = result.json()
    assert [r["status"] for r in doc["results"]] == statuses
    assert sorted((e["type"], e["field"]) for r in doc["results"] for e in r["errors"]) == errors


@pytest.mark.parametrize(
    ("args", "count", "code"),
    [((), 3, 1), (("--exit-on-error",), 1, 1)],
    ids=["without the flag every object is checked", "--exit-on-error stops at the first invalid object"],
)
def test_exit_on_error(args: tuple[str, ...], count: int, code: int, run: Runner, write: Writer) -> None:
    path = write("in.yaml", job("a", min_count=9), job("b"), job("c", min_count=9))
    result = run("validate", "-o", "json", "-j", "1", *args, path)
    assert result.code == code
    assert len(result.json()["results"]) == count


def test_exit_on_error_counts_only_the_files_it_read(run: Runner, write: Writer) -> None:
    """The outputs and the summary cover what was checked (docs/cli.md)."""
    paths = [write(f"f{i}.yaml", job(f"j{i}", min_count=9 if i == 1 else 4)) for i in range(5)]
    summary = run("validate", "-o", "json", "-j", "1", "--exit-on-error", *paths).json()["summary"]
    assert (summary["files"], summary["valid"], summary["invalid"]) == (2, 1, 1)


WARNING_CODES = [
    ("a warning exits 0 by default", (), 0),
    ("--strict makes a warning exit 1", ("--strict",), 1),
    ("--warning-exit-code chooses the code", ("--warning-exit-code", "3"), 3),
]


@pytest.mark.parametrize(("args", "code"), [c[1:] for c in WARNING_CODES], ids=[c[0] for c in WARNING_CODES])
def test_the_warnings_exit_code(args: tuple[str, ...], code: int, run: Runner, write: Writer) -> None:
    assert run("validate", *args, write("in.yaml", job(parallelism=0, min_count=3))).code == code


def test_exit_on_error_stops_the_worker_processes(run: Runner, write: Writer, tmp_path: Path) -> None:
    for i in range(8):
        write(f"many/f{i}.yaml", *(job(f"j{i}-{d}", min_count=9 if i == 1 else 4) for d in range(3)))
    result = run("validate", "-o", "json", "-j", "2", "--exit-on-error", tmp_path / "many")
    assert result.code == 1
    assert [r["status"] for r in result.json()["results"]] == ["valid"] * 3 + ["invalid"]


def test_an_invalid_object_beats_the_warnings_code(run: Runner, write: Writer) -> None:
    path = write("in.yaml", job("w", parallelism=0, min_count=3), job("bad", min_count=9))
    assert run("validate", "--warning-exit-code", "3", path).code == 1


# --------------------------------------------------------------------------- --old DIR

GANG = job(min_count=4)
BASIC = job(scheduling={"schedulingPolicy": {"basic": {}}})

OLD_DIR_CASES = [
    ("--old base/ pairs base/FILE with FILE", "base", "deploy", 1, ["UPDATE"]),
    ("--old base/deploy pairs by the path under the PATH directory", "base/deploy", "deploy", 1, ["UPDATE"]),
    ("a file with no counterpart is a create", "base", "other", 0, ["CREATE"]),
]


@pytest.mark.parametrize(
    ("old", "path", "code", "operations"), [c[1:] for c in OLD_DIR_CASES], ids=[c[0] for c in OLD_DIR_CASES]
)
def test_old_directory_pairs_files_by_path(
    old: str,
    path: str,
    code: int,
    operations: list[str],
    run: Runner,
    write: Writer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write("base/deploy/job.yaml", GANG)
    write("deploy/job.yaml", BASIC)  # gang -> basic: refused as an update
    write("other/job.yaml", BASIC)
    monkeypatch.chdir(tmp_path)
    result = run("validate", "-o", "json", "--old", old, path)
    assert result.code == code, result.stdout
    assert [r["operation"] for r in result.json()["results"]] == operations


def test_old_directory_pairs_objects_within_the_paired_file_only(
    run: Runner, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("base/deploy/a.yaml", GANG)  # the same object, but in another file
    write("deploy/b.yaml", BASIC)
    monkeypatch.chdir(tmp_path)
    result = run("validate", "-o", "json", "--old", "base", "deploy")
    assert (result.code, result.json()["results"][0]["operation"]) == (0, "CREATE")


@pytest.mark.parametrize(
    ("flags", "noted"),
    [
        pytest.param([], True, id="a warning on the new file's objects, which are judged as created"),
        pytest.param(
            ["--skip-non-kubernetes"], False, id="--skip-non-kubernetes: the base file is just not read"
        ),
    ],
)
def test_a_base_file_that_does_not_parse_leaves_the_new_file_judged(
    flags: list[str], noted: bool, run: Runner, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The change may be the fix of that very file: its check must be able to pass."""
    write("base/deploy/job.yaml", text="kind: Job\nspec: [unclosed\n")
    write("deploy/job.yaml", GANG)
    monkeypatch.chdir(tmp_path)
    result = run("validate", "-o", "json", *flags, "--old", "base", "deploy")
    assert result.code == 0, result.stdout
    [record] = result.json()["results"]
    assert (record["file"], record["status"], record["operation"]) == ("deploy/job.yaml", "valid", "CREATE")
    assert any(w.startswith("--old base/deploy/job.yaml") for w in record["warnings"]) is noted


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_pull_request_check_in_one_process_with_git_worktree(
    run_wasp: t.Callable[..., Run], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]

    def git(*args: str) -> None:
        subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (repo / "deploy" / "job.yaml").write_text(json.dumps(GANG))
    git("add", ".")
    git("commit", "-q", "-m", "base")
    (repo / "deploy" / "job.yaml").write_text(json.dumps(BASIC))
    git("worktree", "add", "-q", "--detach", str(tmp_path / "base"), "main")
    result = run_wasp("validate", "-o", "json", "--old", tmp_path / "base", "deploy", cwd=repo)
    assert result.code == 1
    [record] = result.json()["results"]
    assert (record["operation"], [e["field"] for e in record["errors"]]) == (
        "UPDATE",
        ["spec.scheduling.schedulingPolicy"],
    )


def test_the_published_hook_skips_repository_files_and_judges_manifests(
    run_wasp: t.Callable[..., Run], write: Writer
) -> None:
    [hook] = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    program, *args = hook["entry"].split()
    assert program == "wasp"
    repository = [
        write("charts/x/templates/cm.yaml", text="kind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"),
        write(".gitlab-ci.yml", text="test:\n  script:\n    - !reference [.setup, script]\n"),
        write("tsconfig.json", text='{\n  // comment\n  "a": 1\n}\n'),
        write("deploy/job.yaml", job()),
    ]
    assert run_wasp(*args, *repository).code == 0
    assert run_wasp(*args, *repository, write("deploy/bad.yaml", job(min_count=9))).code == 1


STDIN_NAME_CASES = [
    pytest.param(("-o", "sarif"), "sarif", id="sarif-locations"),
    pytest.param(("-o", "github"), "github", id="github-annotation-file"),
    pytest.param(("-o", "json"), "json", id="json-file"),
    pytest.param(("-o", "junit"), "junit", id="junit-file-attribute"),
]


@pytest.mark.parametrize(("args", "fmt"), STDIN_NAME_CASES)
def test_stdin_filename_names_stdin_in_every_output(args: tuple[str, ...], fmt: str, run: Runner) -> None:
    """`helm template . | wasp validate -o sarif --stdin-filename chart/rendered.yaml -`: code
    scanning refuses a result without a location, and stdin had none."""
    text = yaml.safe_dump(job("bad", min_count=9))
    result = run("validate", *args, "--stdin-filename", "deploy/rendered.yaml", "-", input=text)
    assert result.code == 1, result.stdout + result.stderr
    if fmt == "sarif":
        [found] = json.loads(result.stdout)["runs"][0]["results"]
        location = found["locations"][0]["physicalLocation"]
        [line] = [i for i, row in enumerate(text.splitlines(), 1) if row.strip() == "minCount: 9"]
        assert location["artifactLocation"]["uri"] == "deploy/rendered.yaml"
        assert location["region"]["startLine"] == line
    elif fmt == "github":
        assert "::error file=deploy/rendered.yaml,line=" in result.stdout
    elif fmt == "json":
        assert result.json()["results"][0]["file"] == "deploy/rendered.yaml"
    else:
        case = ET.fromstring(result.stdout).find(".//testcase")
        assert case is not None and case.get("file") == "deploy/rendered.yaml"


def test_stdin_filename_chooses_json_and_pairs_with_an_old_directory(
    run: Runner, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("base/deploy/job.json", text=json.dumps(GANG))
    monkeypatch.chdir(tmp_path)
    body = json.dumps(BASIC)  # gang -> basic: refused as an update
    result = run(
        "validate", "-o", "json", "--old", "base", "--stdin-filename", "deploy/job.json", "-", input=body
    )
    assert result.code == 1, result.stdout + result.stderr
    [record] = result.json()["results"]
    assert (record["file"], record["operation"]) == ("deploy/job.json", "UPDATE")


def test_stdin_filename_without_stdin_is_a_usage_error(run: Runner, write: Writer) -> None:
    path = write("a.yaml", job("a"))
    result = run("validate", "--stdin-filename", "x.yaml", path)
    assert result.code == 2 and "--stdin-filename" in result.stderr
