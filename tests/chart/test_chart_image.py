"""The Dockerfile: hadolint-clean, and its install steps work (run here in a fresh virtualenv).

No image can be built or pulled here, so the build stage is replayed: its COPY steps copy
from the repository into a scratch root, its ENV steps set the environment and its RUN steps
run with bash, with the image's absolute paths (/src, /opt/wasp) mapped into the scratch
root. The result must be a working `wasp` with only runtime dependencies.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import typing as t
from importlib import metadata
from pathlib import Path

import pytest

from tests.chart import tools

DOCKERFILE: t.Final = tools.REPO / "Dockerfile"


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [str(tools.hadolint()), "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
    )
    assert (result.returncode, result.stdout) == (0, "")


def instructions(stage: str) -> list[tuple[str, str]]:
    """``(instruction, arguments)`` of one stage, line continuations joined, comments dropped."""
    logical, buffer = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        buffer += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            logical.append(buffer.strip())
            buffer = ""
    out: list[tuple[str, str]] = []
    current = None
    for text in logical:
        op, _, args = text.partition(" ")
        if op == "FROM":
            current = args.split(" AS ")[-1].strip() if " AS " in args else "final"
        elif current == stage:
            out.append((op, args.strip()))
    return out


def test_the_final_stage_runs_as_a_numeric_non_root_user_without_build_tools() -> None:
    final = instructions("final")
    assert ("USER", "65532:65532") in final
    assert [args for op, args in final if op == "COPY"] == ["--from=build /opt/wasp /opt/wasp"]
    assert not any(re.search(r"\b(apt-get|gcc|build-essential)\b", args) for _, args in final)


@pytest.mark.slow
def test_the_build_stage_installs_a_working_wasp_with_runtime_dependencies_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    mapping = {"/src": str(root / "src"), "/opt/wasp": str(root / "opt" / "wasp")}

    def mapped(text: str) -> str:
        return re.sub(r"(?<![\w.])(/src|/opt/wasp)\b", lambda m: mapping[m.group(1)], text)

    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").symlink_to(
        Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    )
    # The machine's own pip configuration (its registry) applies, as the build's would.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
    workdir = root
    for op, args in instructions("build"):
        if op == "WORKDIR":
            workdir = Path(mapped(args))
            workdir.mkdir(parents=True, exist_ok=True)
        elif op == "ENV":
            env.update(dict(pair.split("=", 1) for pair in args.split()))
        elif op == "COPY":
            *sources, dest = args.split()
            for source in sources:
                src = tools.REPO / source.rstrip("/")
                target = workdir / dest if not dest.startswith("/") else Path(mapped(dest))
                if src.is_dir():
                    shutil.copytree(src, target / src.name if dest.endswith("./") else target, symlinks=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
                else:
                    shutil.copy2(src, target / src.name if dest.endswith("/") else target)
        elif op == "RUN":
            result = subprocess.run(["bash", "-c", mapped(args)], cwd=workdir, env=env, capture_output=True,
                                    text=True, timeout=900)  # fmt: skip
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    venv = Path(mapping["/opt/wasp"])
    wasp = venv / "bin" / "wasp"
    for argv in (["--version"], ["serve", "--help"], ["certs", "rotate", "--help"]):
        assert subprocess.run([str(wasp), *argv], capture_output=True, env=env).returncode == 0, argv
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print('\\n'.join(sorted("
         "d.metadata['Name'].lower() for d in m.distributions())))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for tool in ("pip", "setuptools", "pytest", "mypy", "ruff", "checkov", "hypothesis"):
        assert tool not in installed
    assert {"wasp", "gunicorn", "flask", "cryptography", "kubernetes"} <= set(installed)
    assert metadata.version("kubernetes") in subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import kubernetes; print(kubernetes.__version__)"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
