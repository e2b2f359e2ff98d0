"""The development certificates of `scripts/run` live in certs/dev/ (git-ignored), per certs/README.md."""

from __future__ import annotations

import typing as t

import click
import pytest

from tests.chart import tools

COMMANDS: t.Final = [
    ("wasp serve --dev keeps its certificates in certs/dev", "webhook.cli.serve", "serve", None),
    ("wasp certs dev writes them to certs/dev", "webhook.cli.certs", "certs", "dev"),
]


@pytest.mark.parametrize(("sentence", "module", "name", "sub"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_the_dev_state_dir_defaults_to_certs_dev(
    sentence: str, module: str, name: str, sub: str | None
) -> None:
    import importlib

    command = getattr(importlib.import_module(module), name)
    if sub is not None:
        assert isinstance(command, click.Group)
        command = command.commands[sub]
    defaults = {p.name: p.default for p in command.params}
    assert str(defaults["state_dir"]) == "certs/dev"


def test_certs_dev_is_git_ignored() -> None:
    assert "certs/dev/" in (tools.REPO / ".gitignore").read_text().splitlines()
