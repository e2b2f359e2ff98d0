"""``server.enforcement=warn`` is a trial: the validating and defaulting entries fail open unless
``webhooks.failurePolicy`` says otherwise; the stamping entries stay Fail (docs/install.md)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from tests.chart import tools
from tests.chart.conftest import jobset_policy

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]


def _with_defaults() -> Json:
    policy = jobset_policy()
    policy["metadata"]["name"] = "defaulted"
    policy["spec"]["defaults"] = [{"name": "gang", "set": {"schedulingPolicy": {"gang": {}}}}]
    return policy


def _policies(values: Json, tmp: Path) -> dict[str, str]:
    base: Json = {"integrations": ["raycluster"], "policies": {"user": {"defaulted": _with_defaults()}}}
    objects = tools.render({**base, **values}, tmp=tmp)
    return {
        entry["name"]: entry["failurePolicy"]
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for entry in tools.find(objects, kind)["webhooks"]
    }


CASES: t.Final = [
    ("default: every entry fails closed", {}, {"validate": "Fail", "defaults": "Fail", "stamping": "Fail"}),
    ("deny: every entry fails closed", {"server": {"enforcement": "deny"}},
     {"validate": "Fail", "defaults": "Fail", "stamping": "Fail"}),
    ("warn: validation and defaults fail open, stamping stays closed", {"server": {"enforcement": "warn"}},
     {"validate": "Ignore", "defaults": "Ignore", "stamping": "Fail"}),
    ("warn with an explicit Fail: Fail everywhere",
     {"server": {"enforcement": "warn"}, "webhooks": {"failurePolicy": "Fail"}},
     {"validate": "Fail", "defaults": "Fail", "stamping": "Fail"}),
    ("an explicit Ignore: Ignore everywhere", {"webhooks": {"failurePolicy": "Ignore"}},
     {"validate": "Ignore", "defaults": "Ignore", "stamping": "Ignore"}),
]  # fmt: skip


def _role(name: str) -> str:
    if name.endswith(".validate.wasp.dev"):
        return "validate"
    return "defaults" if name == "defaulted.mutate.wasp.dev" else "stamping"


@pytest.mark.parametrize(("case", "values", "want"), CASES, ids=[c[0] for c in CASES])
def test_failure_policy_per_entry(case: str, values: Json, want: dict[str, str], tmp_path: Path) -> None:
    found = _policies(values, tmp_path)
    assert {"defaulted.mutate.wasp.dev", "raycluster.pods.mutate.wasp.dev"} <= set(found)
    assert {name: policy for name, policy in found.items()} == {name: want[_role(name)] for name in found}
