"""``wasp audit`` and ``wasp doctor`` when the cluster cannot be read at all: the installed
command exits 2 and its machine outputs stay closed (docs/audit.md), so that a pipeline that
saved them (``wasp audit -A -o json > audit.json``) still parses them and sees the reason."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _wasp() -> str:
    path = Path(sys.executable).parent / "wasp"
    found = str(path) if path.exists() else shutil.which("wasp")
    if found is None:
        pytest.skip("the wasp console script is not installed (pip install -e .)")
    return found


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unreachable(tmp_path: Path) -> Path:
    """A kubeconfig whose API server refuses connections."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{_closed_port()}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    path = tmp_path / "kubeconfig.json"
    path.write_text(json.dumps(config))
    return path


def _run(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """``wasp ARGS > out`` as a pipeline runs it: stdout to a file."""
    out = tmp_path / "out"
    with out.open("w") as stream:
        proc = subprocess.run([_wasp(), *args], stdout=stream, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "CI": "1"}, timeout=120, check=False)  # fmt: skip
    return proc.returncode, out.read_text(), proc.stderr


@pytest.mark.parametrize("scope", [["-A"], ["-n", "ml"]], ids=["all-namespaces", "one-namespace"])
def test_audit_json_is_closed_with_exit_code_2_and_the_reason(
    unreachable: Path, tmp_path: Path, scope
) -> None:
    code, out, err = _run(tmp_path, "audit", *scope, "-o", "json", "--kubeconfig", str(unreachable))
    doc = json.loads(out)
    assert (code, doc["exitCode"], doc["findings"]) == (2, 2, [])
    assert "cannot read the cluster" in doc["error"] and "cannot read the cluster" in err


def test_audit_junit_is_closed_with_an_error_case(unreachable: Path, tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "audit", "-A", "-o", "junit", "--kubeconfig", str(unreachable))
    root = ET.fromstring(out)
    errors = [
        (e.get("type"), "cannot read the cluster" in (e.get("message") or "")) for e in root.iter("error")
    ]
    assert (code, errors) == (2, [("ClusterUnreadable", True)])


def test_audit_kubeconfig_that_does_not_load_closes_the_json(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig.yaml"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: [\n")
    code, out, _ = _run(tmp_path, "audit", "-A", "-o", "json", "--kubeconfig", str(broken))
    doc = json.loads(out)
    assert (code, doc["exitCode"]) == (2, 2) and "cluster configuration" in doc["error"]


def test_audit_text_prints_the_reason_on_stderr_only(unreachable: Path, tmp_path: Path) -> None:
    code, out, err = _run(tmp_path, "audit", "-A", "--kubeconfig", str(unreachable))
    assert (code, out) == (2, "") and "cannot read the cluster" in err


def test_doctor_json_is_closed_with_exit_code_2_and_the_reason(unreachable: Path, tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "doctor", "-o", "json", "--kubeconfig", str(unreachable))
    doc = json.loads(out)
    assert (code, doc["exitCode"], doc["ready"], doc["checks"]) == (2, 2, False, [])
    assert "cannot read the cluster" in doc["error"]
