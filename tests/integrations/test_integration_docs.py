"""Every `wasp` command on the docs/integrations pages prints what the page shows.

The pages are the integrations' user documentation; their console blocks are run as a user
would (the installed `wasp`, from the repository root, pipes included) and compared with the
text printed under each command. A block that shows no output (its result is described in
prose) and commands that need a running server (`curl`) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs" / "integrations").glob("*.md"))


def _commands() -> list[object]:
    found: list[object] = []
    for page in PAGES:
        for block in re.findall(r"```console\n(.*?)```", page.read_text(), re.S):
            for part in re.split(r"^\$ ", block, flags=re.M)[1:]:
                command, _, shown = part.partition("\n")
                if "wasp " not in command or "curl " in command or not shown.strip():
                    continue
                found.append(pytest.param(command, shown, id=f"{page.name}: {command[:70]}"))
    return found


@pytest.mark.parametrize(("command", "shown"), _commands())
def test_the_page_shows_what_the_command_prints(command: str, shown: str) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("CI", None)
    run = subprocess.run(
        ["bash", "-c", command], cwd=REPO, capture_output=True, text=True, env=env, timeout=60
    )
    assert (run.stdout + run.stderr).strip() == shown.strip()


def test_the_pages_have_commands_to_check() -> None:
    assert len(_commands()) >= 3 * len(PAGES)
