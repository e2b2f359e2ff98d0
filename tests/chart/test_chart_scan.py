"""A real IaC security scanner (checkov) finds nothing, and every skip says why.

checkov runs twice per session, over every rendering at once (Kubernetes framework) and over
the chart itself (Helm framework, which runs helm template with the default values); each
run takes a few seconds, plus the one-off install of its virtualenv.
"""

from __future__ import annotations

import json
import os
import subprocess
import typing as t
from pathlib import Path

import pytest

from tests.chart import tools
from tests.chart.conftest import Rendering

Json = dict[str, t.Any]


def _scan(args: list[str], *, env: dict[str, str] | None = None) -> list[Json]:
    command = [str(tools.checkov()), *args, "--skip-download", "--compact", "-o", "json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.stdout.strip(), result.stderr[-2000:]
    reports = json.loads(result.stdout)
    return reports if isinstance(reports, list) else [reports]


@pytest.fixture(scope="session")
def scans(renderings: dict[str, Rendering], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Json]:
    # Session-scoped: one checkov process per framework over everything (see the module docstring).
    directory = tmp_path_factory.mktemp("scan")
    for i, rendering in enumerate(renderings.values()):
        (directory / f"rendering-{i:02d}.yaml").write_text(rendering.text)
    env = {**os.environ, "PATH": f"{tools.helm().parent}{os.pathsep}{os.environ['PATH']}"}
    helm = [
        "-d",
        str(tools.CHART.parent),
        "--framework",
        "helm",
        "--config-file",
        str(tools.CHART / ".checkov.yaml"),
    ]
    return {
        "kubernetes": _scan(["-d", str(directory), "--framework", "kubernetes"])[0],
        "helm": _scan(helm, env=env)[0],
    }


@pytest.mark.parametrize("framework", ["kubernetes", "helm"])
def test_checkov_finds_no_failed_check(scans: dict[str, Json], framework: str) -> None:
    report = scans[framework]
    assert report["summary"]["resource_count"] > 0
    failed = sorted({(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]})
    assert failed == []


@pytest.mark.parametrize("framework", ["kubernetes", "helm"])
def test_every_checkov_skip_is_justified_in_the_chart(scans: dict[str, Json], framework: str) -> None:
    skipped = scans[framework]["results"]["skipped_checks"]
    assert [
        c["check_id"]
        for c in skipped
        if not (c.get("check_result", {}).get("suppress_comment") or "").strip()
    ] == []


def test_the_skipped_checks_are_the_known_ones(scans: dict[str, Json]) -> None:
    """A new skip needs a reason in the chart and a line here."""
    skipped = {c["check_id"] for c in scans["kubernetes"]["results"]["skipped_checks"]}
    assert skipped == {"CKV_K8S_15", "CKV_K8S_38", "CKV_K8S_43", "CKV_K8S_155"}


def test_the_hadolint_binary_is_available() -> None:
    assert Path(tools.hadolint()).exists()
