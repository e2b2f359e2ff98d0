"""Every shipped integration fits the CRD it governs (``wasp policy check --crd``): the fixtures
under ``data/<name>/crd.yaml`` are trimmed from the published CRDs, with the fields the policies
read; a child kind's CRD (a RayJob's RayCluster) is checked in the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations.wasp_cli import wasp
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name", sorted(KNOWN_INTEGRATIONS))
def test_the_integration_fits_its_crd(name: str) -> None:
    (policy,) = integration_paths([name])
    code, out, err = wasp("policy", "check", policy, "--crd", DATA / name / "crd.yaml")
    assert (code, "fits" in out) == (0, True), out + err
