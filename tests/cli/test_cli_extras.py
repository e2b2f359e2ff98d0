"""The light install: ``pip install wasp`` runs validate, compile, schema and policy; the other
commands, without their extra, say which to install in one line (exit 2), never a traceback.

The installed ``wasp`` runs with a ``sitecustomize`` that makes the extras' modules
unimportable, as in an environment where they were never installed."""

from __future__ import annotations

import os
import subprocess
import tomllib
import typing as t
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from webhook.cli.extras import EXTRAS, NEEDS

pytestmark = pytest.mark.slow
BLOCKER = """import sys
BLOCKED = {blocked!r}
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
"""
EVERY_EXTRA: t.Final = sorted({m for modules in EXTRAS.values() for m in modules} | {"werkzeug", "urllib3"})
EXAMPLE: t.Final = REPO_ROOT / "examples" / "trainer"


def _run(
    wasp_bin: str, tmp_path: Path, blocked: t.Sequence[str], *args: str
) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(blocked)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([wasp_bin, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
                          check=False)  # fmt: skip


LIGHT: t.Final = [
    ("validate", ("validate", "--policies", str(EXAMPLE / "policy.yaml"), str(EXAMPLE / "trainer.yaml"))),
    ("compile", ("compile", "--policies", str(EXAMPLE / "policy.yaml"), str(EXAMPLE / "trainer.yaml"))),
    ("schema", ("schema", "--format", "openapi")),
    ("policy check", ("policy", "check", str(EXAMPLE / "policy.yaml"), "--crd", str(EXAMPLE / "crd.yaml"))),
    ("help", ("--help",)),
]


@pytest.mark.parametrize(("case", "args"), LIGHT, ids=[c for c, _ in LIGHT])
def test_the_ci_commands_need_no_extra(
    wasp_bin: str, tmp_path: Path, case: str, args: tuple[str, ...]
) -> None:
    result = _run(wasp_bin, tmp_path, EVERY_EXTRA, *args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


HEAVY: t.Final = [
    ("serve", EVERY_EXTRA, ("serve", "--dev"), "server"),
    ("audit", EVERY_EXTRA, ("audit", "-A"), "cluster"),
    ("doctor", EVERY_EXTRA, ("doctor",), "cluster"),
    ("reconcile", EVERY_EXTRA, ("reconcile",), "cluster"),
    ("certs", EVERY_EXTRA, ("certs", "generate", "--help"), "server"),
    ("certs rotate without the client", ["kubernetes"],
     ("certs", "rotate", "--namespace", "n", "--secret", "s", "--service", "w", "--validating-webhook", "v",
      "--mutating-webhook", "m"), "cluster"),
    ("serve with only the client missing", ["kubernetes"], ("serve", "--help"), ""),
]  # fmt: skip


@pytest.mark.parametrize(("case", "blocked", "args", "extra"), HEAVY, ids=[h[0] for h in HEAVY])
def test_a_command_without_its_extra_names_it(wasp_bin: str, tmp_path: Path, case: str, blocked: list[str],
                                              args: tuple[str, ...], extra: str) -> None:  # fmt: skip
    result = _run(wasp_bin, tmp_path, blocked, *args)
    assert "Traceback" not in result.stderr
    if not extra:  # a control: the extra it needs is there
        assert result.returncode == 0, result.stderr
        return
    lines = result.stderr.strip().splitlines()
    assert (result.returncode, len(lines)) == (2, 1), result.stderr
    assert f"pip install 'wasp[{extra}]'" in lines[0]


def test_the_core_dependencies_are_the_light_install() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split("=")[0].split(">")[0].split("[")[0].lower() for d in project["dependencies"]}
    heavy = {"flask", "gunicorn", "prometheus-client", "cryptography", "kubernetes"}
    assert names & heavy == set()
    extras = project["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        declared = {d.split("=")[0].split(">")[0].lower().replace("-", "_") for d in extras[extra]}
        assert set(modules) <= declared, extra
    assert set(NEEDS.values()) <= {(e,) for e in EXTRAS}
