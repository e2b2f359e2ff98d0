"""False greens of ``wasp validate`` (issue 25), through the installed ``wasp``: each is a check
that went green while the cluster would disagree, and must now fail or say what it did not check.
"""

from __future__ import annotations

import json
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import Json, Run, dump, job

RunWasp = t.Callable[..., Run]
Writer = t.Callable[..., Path]

_BASIC: t.Final = {"schedulingPolicy": {"basic": {}}}


def _errors(result: Run) -> list[tuple[str, str]]:
    return [(e["type"], e["field"]) for r in result.json()["results"] for e in r["errors"]]


# --------------------------------------------------------------------------- 1. --old pairing


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A clone (``repo/``, with ``.git``) whose ``deploy/job.yaml`` turns a gang Job basic, and
    the base branch checked out whole beside it (``base/``)."""
    repo, base = tmp_path / "repo", tmp_path / "base"
    (repo / ".git").mkdir(parents=True)
    for root, doc in ((base, job()), (repo, job(scheduling=_BASIC))):
        (root / "deploy").mkdir(parents=True)
        (root / "deploy" / "job.yaml").write_text(dump(doc), encoding="utf-8")
    return repo


PAIRINGS = [
    pytest.param(".", ["../base", "deploy/"], id="a relative PATH from the top of the clone"),
    pytest.param(".", ["../base", "{repo}/deploy/"], id="an absolute PATH ($PWD/deploy/)"),
    pytest.param(".", ["{base}", "{repo}/deploy/job.yaml"], id="absolute PATH and --old"),
    pytest.param("deploy", ["../../base", "."], id="run from inside deploy/"),
    pytest.param("deploy", ["../../base", "job.yaml"], id="a file, run from inside deploy/"),
    pytest.param("..", ["base", "repo/deploy"], id="run from above the clone"),
]


@pytest.mark.parametrize(("where", "args"), PAIRINGS)
def test_a_base_worktree_pairs_by_the_path_in_the_checkout(
    where: str, args: list[str], checkout: Path, run_wasp: RunWasp
) -> None:
    """A base made by ``git worktree add`` (a ``.git`` file at its top) holding another
    ``job.yaml`` at the top: ``deploy/job.yaml`` still pairs with ``base/deploy/job.yaml``."""
    base = checkout.parent / "base"
    (base / ".git").write_text("gitdir: elsewhere\n", encoding="utf-8")
    (base / "job.yaml").write_text(dump(job(scheduling=_BASIC)), encoding="utf-8")  # a decoy
    test_old_pairs_the_file_the_user_means(where, args, checkout, run_wasp)


@pytest.mark.parametrize(("where", "args"), PAIRINGS)
def test_old_pairs_the_file_the_user_means(
    where: str, args: list[str], checkout: Path, run_wasp: RunWasp
) -> None:
    old, path = (a.format(repo=checkout, base=checkout.parent / "base") for a in args)
    result = run_wasp("validate", "-o", "json", "--old", old, path, cwd=checkout / where)
    assert result.code == 1, result.stdout + result.stderr
    [record] = result.json()["results"]
    assert record["operation"] == "UPDATE"
    assert _errors(result) == [("FieldValueInvalid", "spec.scheduling.schedulingPolicy")]
    assert record["notes"] == []


def _notes(fmt: str, out: str) -> list[str]:
    """The notes a format carries, as text."""
    if fmt == "json":
        return [n for r in json.loads(out)["results"] for n in r["notes"]]
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        return [r["message"]["text"] for r in results if (r["ruleId"], r["level"]) == ("Note", "note")]
    if fmt == "junit":
        root = ET.fromstring(out.split("\n", 1)[1])
        said = [(case.findtext("system-out") or "").splitlines() for case in root.iter("testcase")]
        return [line for lines in said for line in lines if line.startswith("note: ")]
    prefix = {"text": None, "github": "::notice ", "tap": "  notes: "}[fmt]
    lines = out.splitlines()
    if prefix is None:
        return [line for line in lines if ": note: " in line]
    return [line for line in lines if line.startswith(prefix)]


FORMATS = ["text", "json", "junit", "github", "sarif", "tap"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_without_an_old_version_is_said_in_every_format(
    fmt: str, checkout: Path, run_wasp: RunWasp
) -> None:
    (checkout / "deploy" / "new.yaml").write_text(dump(job("fresh")), encoding="utf-8")
    (checkout / "deploy" / "job.yaml").write_text(dump(job()), encoding="utf-8")  # unchanged: paired
    result = run_wasp("validate", "-o", fmt, "--old", "../base", f"{checkout}/deploy/", cwd=checkout)
    assert result.code == 0, result.stdout + result.stderr  # a new file in a pull request is fine
    [note] = _notes(fmt, result.stdout)
    assert "no previous version" in note and "new.yaml" in note and "checked as created" in note


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_notes_without_old(fmt: str, checkout: Path, run_wasp: RunWasp) -> None:
    result = run_wasp("validate", "-o", fmt, "deploy/", cwd=checkout)
    assert _notes(fmt, result.stdout) == []


def test_an_object_missing_from_its_paired_file_is_said(checkout: Path, run_wasp: RunWasp) -> None:
    (checkout / "deploy" / "job.yaml").write_text(dump(job(), job("second")), encoding="utf-8")
    result = run_wasp("validate", "-o", "json", "--old", "../base", "deploy/", cwd=checkout)
    records = result.json()["results"]
    assert [(r["name"], r["operation"], bool(r["notes"])) for r in records] == [
        ("train", "UPDATE", False),
        ("second", "CREATE", True),
    ]


# --------------------------------------------------------------------------- 2. ungoverned kinds

_ANNOTATED: t.Final = {"scheduling.wasp.dev/blocks": '{"schedulingPolicy": {"gang": {}}}'}


def _crd(api_version: str, kind: str, **spec: object) -> Json:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x", "annotations": dict(_ANNOTATED)},
        "spec": dict(spec),
    }


def _retyped(**fields: str) -> Json:
    doc = job(min_count=9)
    doc.update(fields)
    return doc


UNGOVERNED = [
    pytest.param(
        _crd("jobset.x-k8s.io/v1alpha2", "JobSet"), "--integrations jobset", id="JobSet with blocks"
    ),
    pytest.param(_crd("ray.io/v1", "RayCluster"), "--integrations raycluster", id="RayCluster with blocks"),
    pytest.param(
        _crd("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        "--integrations leaderworkerset",
        id="LeaderWorkerSet with blocks",
    ),
    pytest.param(_retyped(kind="job"), "batch/v1", id="kind: job carrying spec.scheduling"),
    pytest.param(
        _retyped(apiVersion="batch/v2"), "batch/v1", id="apiVersion: batch/v2 carrying spec.scheduling"
    ),
    pytest.param(
        {
            **_crd("example.com/v1", "Trainer"),
            "metadata": {"name": "t"},
            "spec": {"scheduling": {"schedulingPolicy": {"gang": {}}}},
        },
        "",
        id="an unknown CRD with a spec.scheduling block",
    ),
]


@pytest.mark.parametrize(("doc", "hint"), UNGOVERNED)
def test_an_ungoverned_object_with_blocks_is_a_warning(
    doc: Json, hint: str, write: Writer, run_wasp: RunWasp
) -> None:
    path = write("obj.yaml", doc)
    result = run_wasp("validate", "-o", "json", path)
    [record] = result.json()["results"]
    assert record["status"] == "skipped"
    [warning] = record["warnings"]
    assert "no loaded policy governs" in warning and hint in warning
    assert result.code == 0
    assert run_wasp("validate", "--strict", path).code == 1
    assert run_wasp("validate", "--warning-exit-code", "3", path).code == 3


CONTROLS = [
    pytest.param(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}, id="ConfigMap"
    ),
    pytest.param(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}},
        id="Deployment without blocks",
    ),
    pytest.param(
        {**_crd("jobset.x-k8s.io/v1alpha2", "JobSet"), "metadata": {"name": "j"}}, id="JobSet without blocks"
    ),
    pytest.param(
        {
            **_crd("example.com/v1", "Trainer"),
            "metadata": {"name": "t"},
            "spec": {"scheduling": {"queue": "research", "priority": 3}},
        },
        id="another controller's own spec.scheduling",
    ),
]


@pytest.mark.parametrize("doc", CONTROLS)
def test_ungoverned_objects_without_blocks_stay_silent(doc: Json, write: Writer, run_wasp: RunWasp) -> None:
    path = write("obj.yaml", doc)
    result = run_wasp("validate", "--strict", "-o", "json", path)
    assert result.code == 0
    assert [(r["status"], r["warnings"]) for r in result.json()["results"]] == [("skipped", [])]


def test_a_governed_integration_is_judged_not_warned(write: Writer, run_wasp: RunWasp) -> None:
    path = write("obj.yaml", _crd("jobset.x-k8s.io/v1alpha2", "JobSet", replicatedJobs=[]))
    result = run_wasp("validate", "--integrations", "jobset", "-o", "json", path)
    assert all("no loaded policy governs" not in w for r in result.json()["results"] for w in r["warnings"])


@pytest.mark.parametrize("doc", [*(p.values[0] for p in UNGOVERNED), *(p.values[0] for p in CONTROLS)])
def test_reject_ungoverned_makes_every_ungoverned_object_invalid(
    doc: Json, write: Writer, run_wasp: RunWasp
) -> None:
    path = write("obj.yaml", doc)
    result = run_wasp("validate", "--reject-ungoverned", "-o", "json", path)
    assert result.code == 1
    assert _errors(result) == [("FieldValueForbidden", "kind")]
    skipped = run_wasp("validate", "--reject-ungoverned", "--skip", str(doc["kind"]), "-o", "json", path)
    assert (skipped.code, [r["status"] for r in skipped.json()["results"]]) == (0, ["skipped"])


def test_reject_ungoverned_keeps_governed_objects(write: Writer, run_wasp: RunWasp) -> None:
    result = run_wasp("validate", "--reject-ungoverned", "-o", "json", write("ok.yaml", job()))
    assert (result.code, [r["status"] for r in result.json()["results"]]) == (0, ["valid"])


# --------------------------------------------------------------------------- 3. a broken document

BROKEN = [
    pytest.param("metadata: {name: a,\n  labels: {x: y}\n", id="an unclosed flow mapping"),
    pytest.param("a: {b: c\n", id="an unclosed flow mapping on one line"),
    pytest.param("a: [1, 2\n", id="an unclosed flow sequence"),
    pytest.param('a: "abc\n', id="an unclosed quoted scalar"),
    pytest.param("a: b\nc\n", id="a key without a value"),
    pytest.param("a:\n\tb: 1\n", id="a tab as indentation"),
    pytest.param("a: {{ .Values.x }}\n", id="a Helm template"),
]


@pytest.mark.parametrize("broken", BROKEN)
@pytest.mark.parametrize(
    ("flags", "code"), [([], 2), (["--skip-non-kubernetes"], 1)], ids=["", "skip-non-k8s"]
)
def test_a_document_that_does_not_parse_ends_only_itself(
    broken: str, flags: list[str], code: int, write: Writer, run_wasp: RunWasp
) -> None:
    path = write(
        "mixed.yaml", text=dump(job("before")) + "---\n" + broken + "---\n" + dump(job("after", min_count=9))
    )
    result = run_wasp("validate", *flags, "-o", "json", path)
    assert result.code == code, result.stdout + result.stderr
    records = result.json()["results"]
    assert [(r["document"], r["name"], r["status"]) for r in records] == [
        (0, "before", "valid"),
        (1, None, "skipped" if flags else "error"),
        (2, "after", "invalid"),
    ]
    assert _errors(result) == [("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")]
