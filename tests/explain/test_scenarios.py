"""One scenario per finding, and controls that run: through the stand-in and through --from."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from tests.explain.conftest import as_json, via_dump, via_standin
from tests.explain.scenarios import SCENARIOS, Scenario

pytestmark = pytest.mark.slow
RUNNERS: t.Final = {"standin": via_standin, "dump": via_dump}


@pytest.mark.parametrize("how", sorted(RUNNERS))
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str, how: str, tmp_path: Path) -> None:
    scenario: Scenario = SCENARIOS[name]
    code, doc = as_json(RUNNERS[how](scenario, tmp_path, "-o", "json"))
    assert [f["code"] for f in doc["findings"]] == list(scenario.codes), doc["findings"]
    assert (code, doc["exitCode"], doc["verdict"]) == (
        scenario.exit_code,
        scenario.exit_code,
        scenario.verdict,
    )
    for finding in doc["findings"]:
        assert finding["evidence"] and finding["fix"], finding
        wanted = scenario.detail.get(finding["code"], {})
        assert {k: finding["detail"].get(k) for k in wanted} == wanted
