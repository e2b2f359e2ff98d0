"""What a ``wasp validate`` of one small file must not import: each of these is start-up time
that such a run never uses (issue 18: one file in under 100 ms, process start included)."""

from __future__ import annotations

import json
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
from conftest import Run, dump, job

NEVER = [
    pytest.param("multiprocessing", id="the process pool (input under 256 KB is judged here)"),
    pytest.param("webhook.cli.reporters_data", id="the JSON, SARIF and JUnit reporters (text output)"),
    pytest.param("orjson", id="orjson (JSON output only)"),
    pytest.param("jsonschema", id="the reference schema engine (explains failures only)"),
    pytest.param("xml.etree.ElementTree", id="an XML library"),
    pytest.param("flask", id="the HTTP stack"),
    pytest.param("kubernetes", id="the cluster client"),
    pytest.param("cryptography", id="certificates"),
    pytest.param("tempfile", id="temporary files (importlib.resources would bring them for the schema)"),
    pytest.param("webhook.governed.stamping", id="pod stamping (layering asks only who controls an object)"),
    pytest.param("webhook.governed.reconcile_model", id="the reconciler's decisions"),
]

_PROBE = """
import json, sys
from webhook.cli.main import cli
try:
    cli.main(args=["validate", "--summary", sys.argv[1]], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The modules loaded by a text run over one valid Job, in a fresh interpreter."""
    path = Path(tmp_path_factory.mktemp("startup")) / "job.yaml"
    path.write_text(dump(job()), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("module", NEVER)
def test_a_small_text_run_does_not_import(module: str, imported: set[str]) -> None:
    assert "webhook.governed.validation" in imported  # the probe did judge the file
    assert module not in imported


_PROBE_INTEGRATIONS = _PROBE.replace('"--summary",', '"--summary", "--integrations", "jobset,raycluster",')


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("cel.cli", id="the CEL package's command-line tool"),
        pytest.param("prompt_toolkit", id="its REPL library (230 ms of start-up)"),
    ],
)
def test_policies_with_expressions_load_only_the_cel_extension(module: str, tmp_path: Path) -> None:
    """The integrations' pod counts are CEL: the binding is loaded, its CLI stack is not."""
    path = tmp_path / "job.yaml"
    path.write_text(dump(job()), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", _PROBE_INTEGRATIONS, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "cel.cel" in loaded  # the expressions were compiled
    assert module not in loaded


def _json_list() -> str:
    items = [job("ok"), job("bad", min_count=9)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)


LAZY = [
    pytest.param("list.json", _json_list, "bad", id="an item of a JSON List: the field's own line"),
    pytest.param(
        "job.json", lambda: json.dumps(job("one", min_count=9), indent=2), "one", id="a JSON object"
    ),
]


@pytest.mark.parametrize(("name", "text", "bad"), LAZY)
def test_json_positions_are_loaded_when_a_json_source_needs_them(
    name: str, text: t.Callable[[], str], bad: str, run: t.Callable[..., Run], write: t.Callable[..., Path]
) -> None:
    body = text()
    result = run("validate", "-o", "json", write(name, text=body))
    [error] = [e for r in result.json()["results"] if r["name"] == bad for e in r["errors"]]
    lines = body.splitlines()
    assert lines[error["line"] - 1].strip().startswith('"minCount": 9')
