"""The text picture stays readable: golden output of three scenarios, explained --from a dump
(the dump's UIDs are fixed, so the compiled names are too). ``WASP_UPDATE_GOLDEN=1`` rewrites
the expected files after a deliberate change; the diff is then reviewed like code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.explain.conftest import dump_of, wasp
from tests.explain.scenarios import NS, SCENARIOS

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["insufficient-capacity", "held-back-sequenced", "podgroup-missing"])
def test_text_output(name: str, tmp_path: Path) -> None:
    target, dump = dump_of(SCENARIOS[name], tmp_path / "dump.yaml")
    code, out, _ = wasp(target, "-n", NS, "--from", str(dump))
    expected = GOLDEN / f"{name}.txt"
    if os.environ.get("WASP_UPDATE_GOLDEN"):
        expected.write_text(out, encoding="utf-8")
    assert (code, out) == (SCENARIOS[name].exit_code, expected.read_text(encoding="utf-8"))
