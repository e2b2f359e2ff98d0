"""The optional `resource` of `stamping.childTemplates`: the plural the chart's webhook rule needs."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from tests.chart.conftest import jobset_policy
from webhook.policy import load_policy_file
from webhook.vocab.errors import PolicyError

CASES: t.Final = [
    ("a child template names its resource", "jobs", "jobs"),
    ("a child template without a resource still loads (the server does not need it)", None, None),
]


@pytest.mark.parametrize(("sentence", "resource", "expected"), CASES, ids=[c[0] for c in CASES])
def test_child_template_resource_is_loaded(
    sentence: str, resource: str | None, expected: str | None, tmp_path: Path
) -> None:
    doc = jobset_policy()
    child = doc["spec"]["stamping"]["childTemplates"][0]
    child.pop("resource")
    if resource is not None:
        child["resource"] = resource
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    assert [c.resource for c in load_policy_file(tmp_path / "p.yaml").child_templates] == [expected]


def test_an_empty_resource_is_a_policy_error(tmp_path: Path) -> None:
    doc = jobset_policy()
    doc["spec"]["stamping"]["childTemplates"][0]["resource"] = ""
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(PolicyError, match=r"childTemplates\[0\]\.resource"):
        load_policy_file(tmp_path / "p.yaml")
