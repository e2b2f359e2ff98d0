"""Fixtures for the CLI tests: an in-process runner, the installed ``wasp`` and manifest makers."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from webhook.cli.main import cli

Json = dict[str, t.Any]
REPO_ROOT: t.Final = Path(__file__).resolve().parents[2]
EXAMPLES: t.Final = REPO_ROOT / "examples"


@dataclass(frozen=True)
class Run:
    """One CLI run: exit code and the two streams, apart."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Json:
        return t.cast(Json, json.loads(self.stdout))

    def verdicts(self) -> list[tuple[str, str | None, str]]:
        """(status, name, sorted error keys) per result, for comparing runs."""
        return [
            (r["status"], r["name"], json.dumps(sorted((e["type"], e["field"]) for e in r["errors"])))
            for r in self.json()["results"]
        ]


def job(
    name: str = "train",
    *,
    namespace: str | None = "ml",
    parallelism: int | None = 4,
    scheduling: Json | None = None,
    min_count: int | None = 4,
) -> Json:
    """A batch/v1 Job; ``scheduling`` overrides the default gang block (``{}``: no block)."""
    spec: Json = {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if scheduling is None:
        gang = {} if min_count is None else {"minCount": min_count}
        scheduling = {"schedulingPolicy": {"gang": gang}}
    if scheduling:
        spec["scheduling"] = copy.deepcopy(scheduling)
    metadata: Json = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def dump(*docs: object) -> str:
    return yaml.safe_dump_all(list(docs), sort_keys=False)


@pytest.fixture
def write(tmp_path: Path) -> t.Callable[..., Path]:
    """``write("a.yaml", doc, doc2)`` (objects) or ``write("a.yaml", text="...")``."""

    def _write(name: str, *docs: object, text: str | None = None) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else dump(*docs), encoding="utf-8")
        return path

    return _write


@pytest.fixture
def run() -> t.Callable[..., Run]:
    """In-process: ``run("validate", path, "-o", "json", input="...")``."""

    def _run(*args: object, input: str | bytes | None = None) -> Run:
        result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return _run


@pytest.fixture(scope="session")
def wasp_bin() -> str:
    """The installed console script (next to this interpreter)."""
    path = Path(sys.executable).parent / "wasp"
    found = str(path) if path.exists() else shutil.which("wasp")
    if found is None:
        pytest.skip("the wasp console script is not installed (pip install -e .)")
    return found


@pytest.fixture
def run_wasp(wasp_bin: str) -> t.Callable[..., Run]:
    """A real subprocess of the installed ``wasp``; ``prefix`` wraps it (e.g. ``unshare -n``)."""

    def _run(
        *args: object,
        input: str | None = None,
        env: dict[str, str] | None = None,
        prefix: t.Sequence[str] = (),
        cwd: Path | None = None,
    ) -> Run:
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        proc = subprocess.run(
            [*prefix, wasp_bin, *map(str, args)],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd,
            timeout=120,
            check=False,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return _run
