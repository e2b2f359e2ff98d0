"""The installed ``wasp`` as a real subprocess: formats, exit codes, stdin, git, no network."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO_ROOT, Run, dump, job
from golden import GOLDEN_DIR, discover_cases, error_keys

RunWasp = t.Callable[..., Run]
Writer = t.Callable[..., Path]


def output_schema() -> dict[str, t.Any]:
    """The JSON Schema published in docs/cli.md (the contract the output must meet)."""
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    schema = next(json.loads(b) for b in blocks if '"$schema"' in b)
    return t.cast(dict[str, t.Any], schema)


@pytest.fixture
def mixed(write: Writer) -> Path:
    """valid, invalid (with a warning elsewhere), skipped and a non-object, in one file."""
    return write(
        "mixed.yaml",
        text=dump(
            job("ok"),
            job("bad", min_count=9),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        )
        + "---\nfoo: bar\n",
    )


def test_json_output_meets_the_documented_schema(run_wasp: RunWasp, mixed: Path) -> None:
    result = run_wasp("validate", "-o", "json", mixed)
    assert result.code == 2
    doc = result.json()
    jsonschema.validate(doc, output_schema())
    assert [r["status"] for r in doc["results"]] == ["valid", "invalid", "skipped", "error"]
    bad = doc["results"][1]["errors"][0]
    assert (bad["type"], bad["field"], bad["badValue"]) == (
        "FieldValueInvalid",
        "spec.scheduling.schedulingPolicy.gang.minCount",
        9,
    )
    assert bad["message"].startswith("spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9")


def test_text_output(run_wasp: RunWasp, mixed: Path) -> None:
    result = run_wasp("validate", mixed)
    assert result.code == 2
    lines = result.stdout.splitlines()
    line = next(i for i, text in enumerate(mixed.read_text().splitlines(), 1) if "minCount: 9" in text)
    assert lines[0].startswith(f"{mixed}:{line}: Job ml/bad: spec.scheduling.schedulingPolicy.gang.minCount")
    assert lines[-1].startswith("wasp: 4 objects in 1 file: 1 valid, 1 invalid, 1 skipped, 1 error")


def test_junit_output(run_wasp: RunWasp, mixed: Path) -> None:
    result = run_wasp("validate", "-o", "junit", mixed)
    root = ET.fromstring(result.stdout.split("\n", 1)[1])
    [suite] = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    cases = root.findall("./testsuite/testcase")
    assert [[child.tag for child in case] for case in cases] == [[], ["failure"], ["skipped"], ["error"]]
    failure = cases[1].find("failure")
    assert failure is not None and "gang.minCount" in (failure.text or "")


def test_github_output_points_at_the_field_line(run_wasp: RunWasp, write: Writer) -> None:
    path = write("jobs.yaml", job("ok"), job("bad", min_count=9), job("paused", parallelism=0, min_count=2))
    result = run_wasp("validate", "-o", "github", path)
    assert result.code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    warnings = [line for line in result.stdout.splitlines() if line.startswith("::warning ")]
    assert len(errors) == 1 and len(warnings) == 1
    props = dict(p.split("=", 1) for p in errors[0][len("::error ") :].split("::", 1)[0].split(","))
    assert props["file"] == str(path)
    assert "minCount: 9" in path.read_text().splitlines()[int(props["line"]) - 1]
    assert props["title"] == "wasp%3A Job ml/bad"


@pytest.mark.parametrize(
    ("text", "code"),
    [(dump(job()), 0), (dump(job(min_count=9)), 1), ("a: [\n", 2), ("", 0), ("kind: X\n", 2)],
    ids=[
        "valid exits 0",
        "invalid exits 1",
        "unparsable exits 2",
        "empty input exits 0",
        "non-object exits 2",
    ],
)
def test_exit_codes_from_stdin(run_wasp: RunWasp, text: str, code: int) -> None:
    assert run_wasp("validate", "-", input=text).code == code


def test_parse_error_is_a_record_on_stdout_with_file_and_line(run_wasp: RunWasp, write: Writer) -> None:
    path = write("bad.yaml", text=dump(job()) + "---\nmetadata:\n  name: x\n   bad: indent\n")
    result = run_wasp("validate", path)
    assert result.code == 2
    assert re.search(rf"^{re.escape(str(path))}:\d+:\d+: error: invalid YAML", result.stdout, re.M)
    assert result.stderr == ""  # every record on one stream: the outputs (docs/cli.md)
    assert result.stdout.splitlines()[-1].startswith("wasp: 2 objects in 1 file: 1 valid")


def test_summary_flag(run_wasp: RunWasp, mixed: Path) -> None:
    result = run_wasp("validate", "--summary", mixed)
    assert result.stdout.count("\n") == 1


# --------------------------------------------------------------------------- git show | --old -


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_show_base_branch_as_old_from_stdin(run_wasp: RunWasp, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    git("init", "-q", "-b", "main")
    manifest = repo / "deploy" / "job.yaml"
    manifest.write_text(dump(job(min_count=4)))
    git("add", ".")
    git("commit", "-q", "-m", "base")
    # The change under review switches the frozen gang variant to basic.
    manifest.write_text(dump(job(scheduling={"schedulingPolicy": {"basic": {}}})))
    base = git("show", "main:deploy/job.yaml")
    update = run_wasp("validate", "-o", "json", "--old", "-", "deploy/job.yaml", input=base, cwd=repo)
    assert update.code == 1
    assert [(e["type"], e["field"]) for e in update.json()["results"][0]["errors"]] == [
        ("FieldValueInvalid", "spec.scheduling.schedulingPolicy")
    ]
    # The same manifest as a create is fine: the failure comes from the pairing.
    assert run_wasp("validate", "deploy/job.yaml", cwd=repo).code == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_show_pipeline_in_a_shell(wasp_bin: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "deploy" / "job.yaml").write_text(dump(job(min_count=4)))
    subprocess.run(["git", *env, "add", "."], cwd=repo, check=True)
    subprocess.run(["git", *env, "commit", "-q", "-m", "base"], cwd=repo, check=True)
    (repo / "deploy" / "job.yaml").write_text(dump(job(scheduling={"schedulingPolicy": {"basic": {}}})))
    proc = subprocess.run(
        f"git show main:deploy/job.yaml | {wasp_bin} validate --old - deploy/job.yaml",
        shell=True,
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "spec.scheduling.schedulingPolicy: Invalid value" in proc.stdout


# --------------------------------------------------------------------------- no network


SITECUSTOMIZE = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("network disabled by the wasp test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode == 0


def test_works_without_network(run_wasp: RunWasp, tmp_path: Path) -> None:
    """Same verdicts with the network namespace emptied (or sockets refused in the child)."""
    shutil.copytree(GOLDEN_DIR / "invalid", tmp_path / "golden")
    args = (
        "validate",
        "-o",
        "json",
        "--policies",
        REPO_ROOT / "examples" / "trainer" / "policy.yaml",
        tmp_path / "golden",
    )
    online = run_wasp(*args)
    blocker = tmp_path / "nonet"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(SITECUSTOMIZE)
    # The socket guard applies in both modes; unshare also removes every interface.
    prefix = ("unshare", "-n") if _unshare_works() else ()
    offline = run_wasp(*args, env={"PYTHONPATH": str(blocker)}, prefix=prefix)
    assert offline.code == online.code
    assert offline.verdicts() == online.verdicts()
    assert "network disabled" not in offline.stderr


# --------------------------------------------------------------------------- golden suite


def test_golden_cases_through_the_cli(run_wasp: RunWasp) -> None:
    """One subprocess for the whole suite: every case's JSON verdict equals its expectation."""
    cases = discover_cases()
    policies = [
        a
        for p in ("trainer", "rolebased")
        for a in ("--policies", REPO_ROOT / "examples" / p / "policy.yaml")
    ]
    files = [c.path for c in cases if c.old_obj is None]
    result = run_wasp("validate", "-o", "json", *policies, *files)
    by_file = {r["file"]: r for r in result.json()["results"]}
    for case in (c for c in cases if c.old_obj is None):
        record = by_file[str(case.path)]
        assert record["status"] == ("valid" if case.valid else "invalid"), case.id
        assert error_keys((e["type"], e["field"]) for e in record["errors"]) == case.expected_errors, case.id


@pytest.mark.parametrize("case", discover_cases(), ids=lambda c: c.id)
def test_golden_case_in_process(case: t.Any, run: t.Callable[..., Run]) -> None:
    """Every case, updates included (``--old <case>.old.yaml``), through the CLI's JSON."""
    policies = [
        a
        for p in ("trainer", "rolebased")
        for a in ("--policies", REPO_ROOT / "examples" / p / "policy.yaml")
    ]
    old = ["--old", case.path.with_name(case.id + ".old.yaml")] if case.old_obj is not None else []
    result = run("validate", "-o", "json", *policies, *old, case.path)
    [record] = result.json()["results"]
    assert record["status"] == ("valid" if case.valid else "invalid")
    assert error_keys((e["type"], e["field"]) for e in record["errors"]) == case.expected_errors
    if case.expected_warning_count is not None:
        assert len(record["warnings"]) == case.expected_warning_count
    assert result.code == (0 if case.valid else 1)


def test_a_reader_that_leaves_early_stops_wasp_quietly(wasp_bin: str, write: Writer) -> None:
    # `wasp validate ... | head -1`: the pipe closes under wasp, which stops without a traceback
    # or an "internal error" line, with the status a shell gives a writer killed by SIGPIPE.
    many = write("many.yaml", text=dump(*(job(f"j{i}", min_count=9) for i in range(2000))))
    with subprocess.Popen(
        [wasp_bin, "validate", many], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # the reader leaves
        err = proc.stderr.read().decode()
        assert (proc.wait(timeout=60), err) == (141, "")
