"""values.yaml and values.schema.json: generated from each other, documented, and strict."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.chart import tools, values_schema

Json = dict[str, t.Any]


def _walk(schema: Json, path: str = "") -> t.Iterator[tuple[str, Json]]:
    for key, sub in schema.get("properties", {}).items():
        yield f"{path}.{key}".lstrip("."), sub
        yield from _walk(sub, f"{path}.{key}")


def test_values_schema_is_generated_from_values_yaml() -> None:
    assert values_schema.SCHEMA.read_text() == values_schema.render(values_schema.VALUES.read_text())


def test_every_value_is_documented() -> None:
    schema = json.loads(values_schema.SCHEMA.read_text())
    assert [path for path, sub in _walk(schema) if not sub.get("description")] == []


def test_every_object_of_the_schema_is_closed() -> None:
    schema = json.loads(values_schema.SCHEMA.read_text())
    open_objects = [p for p, sub in [("", schema), *_walk(schema)]
                    if sub.get("type") == "object" and "additionalProperties" not in sub and p != "global"]  # fmt: skip
    assert open_objects == []


def test_the_defaults_satisfy_the_schema() -> None:
    schema = json.loads(values_schema.SCHEMA.read_text())
    jsonschema.validate(yaml.safe_load(values_schema.VALUES.read_text()), schema)


BAD_VALUES: t.Final = [
    ("an unknown top-level key", {"replica": 3}),
    ("an unknown nested key", {"webhooks": {"failurePolicy": "Fail", "timeout": 3}}),
    ("a failurePolicy the apiserver does not know", {"webhooks": {"failurePolicy": "Open"}}),
    ("a timeout above the apiserver's 30 s", {"webhooks": {"validatingTimeoutSeconds": 31}}),
    ("a serving certificate longer than a year", {"certs": {"servingValidityDays": 400}}),
    ("an unknown certificate mode", {"certs": {"mode": "vault"}}),
    ("zero replicas", {"replicas": 0}),
    ("an integration wasp does not ship", {"integrations": ["kueue"]}),
    ("an integration named twice", {"integrations": ["mpijob", "mpijob"]}),
    ("an enforcement the server does not know", {"server": {"enforcement": "audit"}}),
    ("zero reconciler replicas", {"reconciler": {"replicas": 0}}),
]


@pytest.mark.parametrize(("sentence", "values"), BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_helm_refuses_values_outside_the_schema(sentence: str, values: Json, tmp_path: Path) -> None:
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    result = tools.run_helm("template", "wasp", str(tools.CHART), "--values", str(file), check=False)
    assert result.returncode != 0
    assert "schema" in result.stderr.lower()


def test_a_child_template_without_its_resource_cannot_be_rendered(tmp_path: Path) -> None:
    from tests.chart.conftest import jobset_policy

    policy = jobset_policy()
    del policy["spec"]["stamping"]["childTemplates"][0]["resource"]
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump({"policies": {"user": {"jobset": policy}}}))
    result = tools.run_helm("template", "wasp", str(tools.CHART), "--values", str(file), check=False)
    assert result.returncode != 0 and "childTemplates" in result.stderr


def test_two_user_policies_with_one_name_cannot_be_rendered(tmp_path: Path) -> None:
    from tests.chart.conftest import user_policies

    policies = user_policies()
    policies["trainer-again"] = policies["trainer"]
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump({"policies": {"user": policies}}))
    result = tools.run_helm("template", "wasp", str(tools.CHART), "--values", str(file), check=False)
    assert result.returncode != 0 and "ml-example-trainer" in result.stderr


def test_an_integration_the_chart_does_not_carry_cannot_be_rendered(tmp_path: Path) -> None:
    chart = tools.chart_with({"policies/integrations/mpijob.yaml": None}, tmp_path)
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump({"integrations": ["mpijob"]}))
    result = tools.run_helm("template", "wasp", str(chart), "--values", str(file), check=False)
    assert result.returncode != 0 and 'carries no policy for "mpijob"' in result.stderr


def test_a_user_policy_named_like_an_integration_cannot_be_rendered(tmp_path: Path) -> None:
    from tests.chart.conftest import jobset_policy

    # The integration and the user policy share the metadata.name "jobset-example".
    chart = tools.chart_with({"policies/integrations/jobset.yaml": yaml.safe_dump(jobset_policy())}, tmp_path)
    file = tmp_path / "values.yaml"
    file.write_text(
        yaml.safe_dump({"integrations": ["jobset"], "policies": {"user": {"mine": jobset_policy()}}})
    )
    result = tools.run_helm("template", "wasp", str(chart), "--values", str(file), check=False)
    assert result.returncode != 0 and '"jobset-example" like the integration "jobset"' in result.stderr


def test_the_integration_names_are_the_ones_wasp_knows() -> None:
    from webhook.policy.integrations import KNOWN_INTEGRATIONS

    schema = json.loads(values_schema.SCHEMA.read_text())
    assert sorted(schema["properties"]["integrations"]["items"]["enum"]) == sorted(KNOWN_INTEGRATIONS)


def test_a_networkpolicy_that_would_block_the_servicemonitor_cannot_be_rendered(tmp_path: Path) -> None:
    file = tmp_path / "values.yaml"
    values: Json = {"networkPolicy": {"enabled": True}, "metrics": {"serviceMonitor": {"enabled": True}}}
    file.write_text(yaml.safe_dump(values))
    result = tools.run_helm("template", "wasp", str(tools.CHART), "--values", str(file), check=False)
    assert result.returncode != 0 and "needs networkPolicy.metricsFrom" in result.stderr
    # Controls: with the scrapers named, or without the ServiceMonitor, it renders.
    peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    for fixed in ({**values, "networkPolicy": {"enabled": True, "metricsFrom": peers}},
                  {"networkPolicy": {"enabled": True}}):  # fmt: skip
        file.write_text(yaml.safe_dump(fixed))
        assert (
            tools.run_helm(
                "template", "wasp", str(tools.CHART), "--values", str(file), check=False
            ).returncode
            == 0
        )
