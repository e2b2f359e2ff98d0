"""``wasp`` in process for the integration tests, the ``(type, field)`` of its JSON verdicts, and
the blocks the tests write."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import yaml
from click.testing import CliRunner

from webhook.cli.main import cli


def wasp(*args: object, input: str | None = None) -> tuple[int, str, str]:
    """``wasp ARGS`` in process: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def field_errors(stdout: str) -> list[tuple[str, str]]:
    """``(type, field)`` of every error in ``wasp validate -o json`` output, in order."""
    return [(e["type"], e["field"]) for r in json.loads(stdout)["results"] for e in r["errors"]]


def validated(tmp_path: Path, obj: object, *flags: object) -> tuple[list[tuple[str, str]], int]:
    """``wasp validate FLAGS -o json`` of ``obj`` written to a file: ``(type, field)`` pairs, exit code."""
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, _ = wasp("validate", *flags, "-o", "json", path)
    return field_errors(out), code


def compiled(tmp_path: Path, obj: object, *flags: object) -> list[dict[str, t.Any]]:
    """The objects ``wasp compile FLAGS -o json`` prints for ``obj`` (the command must succeed)."""
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(obj))
    code, out, err = wasp("compile", *flags, "-o", "json", path)
    assert code == 0, err
    return t.cast(list[dict[str, t.Any]], json.loads(out)["items"])


def gang(min_count: int | None = None) -> dict[str, t.Any]:
    """The blocks of a gang, of ``min_count`` pods (unset: the pod count)."""
    return {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}}
