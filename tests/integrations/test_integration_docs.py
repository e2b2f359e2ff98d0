"""Every `wasp` command on the docs/integrations pages prints what the page shows, for a user
who only installed wasp.

The pages are the integrations' user documentation; their console blocks are run as a user
would (the installed `wasp`, pipes included) in an empty directory holding only what the page
gives: each yaml block whose first line names a file (`# jobset.yaml`) saved under that name,
and the CRD of each `kubectl get crd NAME -o yaml > FILE` line, which here comes from this
directory's data/*/crd.yaml instead of a cluster. The output is compared with the text printed
under each command. A block that shows no output (its result is described in prose) and
commands that need a running server (`curl`) are not run. No command may name a file of the
repository's tests/ or policies/, which an installed wasp does not have.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs" / "integrations").glob("*.md"))
DATA = Path(__file__).parent / "data"
NAMED_BLOCK = re.compile(r"```yaml\n# ([\w.-]+\.ya?ml)\n(.*?)```", re.S)
GET_CRD = re.compile(r"^kubectl get crd ([\w.-]+) -o yaml > ([\w.-]+)$")
REPO_ONLY = re.compile(r"(?<![\w./-])(?:\./)?(?:tests|policies)/")


def _page_commands(page: Path) -> list[tuple[str, str]]:
    """``(command, shown output)`` of every ``$`` line in the page's console blocks."""
    found = []
    for block in re.findall(r"```console\n(.*?)```", page.read_text(), re.S):
        for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, shown = part.partition("\n")
            found.append((command, shown))
    return found


def _crds() -> dict[str, dict[str, object]]:
    """The tests' CRDs by ``metadata.name``: what ``kubectl get crd NAME`` gives here."""
    crds = {}
    for path in sorted(DATA.glob("*/crd.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                crds[doc["metadata"]["name"]] = doc
    return crds


def _write_what_the_page_gives(page: Path, where: Path) -> None:
    text = page.read_text()
    for name, body in NAMED_BLOCK.findall(text):
        (where / name).write_text(f"# {name}\n{body}", encoding="utf-8")
    crds = _crds()
    for command, _ in _page_commands(page):
        if command.startswith("kubectl "):
            match = GET_CRD.match(command)
            assert match, (
                f"{page.name}: only `kubectl get crd NAME -o yaml > FILE` is stood in for: {command}"
            )
            crd, target = match.groups()
            assert crd in crds, f"{page.name}: no CRD {crd} under {DATA}"
            (where / target).write_text(yaml.safe_dump(crds[crd], sort_keys=False), encoding="utf-8")


def _commands() -> list[object]:
    found: list[object] = []
    for page in PAGES:
        for command, shown in _page_commands(page):
            if "wasp " not in command or "curl " in command or not shown.strip():
                continue
            found.append(pytest.param(page, command, shown, id=f"{page.name}: {command[:70]}"))
    return found


@pytest.mark.parametrize(("page", "command", "shown"), _commands())
def test_the_page_shows_what_the_command_prints(tmp_path: Path, page: Path, command: str, shown: str) -> None:
    _write_what_the_page_gives(page, tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CI", None)
    run = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60
    )
    assert (run.stdout + run.stderr).strip() == shown.strip()


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_no_command_needs_a_file_of_the_repository(page: Path) -> None:
    assert [c for c, _ in _page_commands(page) if REPO_ONLY.search(c)] == []


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_page_shows_the_sample_the_integration_tests_use(page: Path) -> None:
    """A named block is the tests' sample of the same name, under the name line."""
    blocks = NAMED_BLOCK.findall(page.read_text())
    assert blocks, f"{page.name} shows no manifest to save"
    for name, body in blocks:
        sample = DATA / page.stem / name
        assert sample.is_file() and body == sample.read_text(encoding="utf-8"), name


def test_the_pages_have_commands_to_check() -> None:
    assert len(_commands()) >= 3 * len(PAGES)
