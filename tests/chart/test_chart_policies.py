"""The policies behind the chart: the files it carries are the shipped ones, byte for byte, and
its webhook rules and matchConditions are exactly what the policies the server loads act on."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from tests.chart import tools
from tests.chart.conftest import SCENARIO_IDS, Rendering, policies_of

Json = dict[str, t.Any]


COPIED_FOLDERS: t.Final = [
    pytest.param("policies", id="the built-in policies"),
    pytest.param("policies/integrations", id="the integration policies"),
]


@pytest.mark.parametrize("folder", COPIED_FOLDERS)
def test_the_chart_carries_the_same_policy_files(folder: str) -> None:
    shipped = sorted(p.name for p in (tools.REPO / folder).glob("*.yaml"))
    copied = sorted(p.name for p in (tools.CHART / folder).glob("*.yaml"))
    assert copied == shipped


SHIPPED_FILES: t.Final = sorted(
    {p.relative_to(tools.REPO / "policies") for p in (tools.REPO / "policies").glob("**/*.yaml")}
    | {p.relative_to(tools.CHART / "policies") for p in (tools.CHART / "policies").glob("**/*.yaml")}
)


@pytest.mark.parametrize("name", SHIPPED_FILES, ids=[str(n) for n in SHIPPED_FILES])
def test_the_chart_carries_each_policy_file_byte_for_byte(name: Path) -> None:
    shipped, copied = tools.REPO / "policies" / name, tools.CHART / "policies" / name
    assert copied.exists() and shipped.exists(), f"{name}: only one of policies/ and the chart has it"
    assert copied.read_bytes() == shipped.read_bytes()


def _rule_keys(entries: list[Json]) -> set[tuple[str, tuple[str, ...], str]]:
    return {
        (group, tuple(rule["apiVersions"]), resource)
        for entry in entries
        for rule in entry["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_validating_rules_are_exactly_the_governed_kinds(
    renderings: dict[str, Rendering], scenario_id: str, tmp_path: Path
) -> None:
    rendering = renderings[scenario_id]
    policies = policies_of(rendering, tmp_path)
    entries = rendering.find("ValidatingWebhookConfiguration")["webhooks"]
    assert _rule_keys(entries) == {(p.group, p.versions, p.resource) for p in policies.policies}
    assert sorted(e["name"] for e in entries) == sorted(
        f"{p.name}.validate.wasp.dev" for p in policies.policies
    )
    assert {e["clientConfig"]["service"]["path"] for e in entries} <= {"/validate"}


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_mutating_rules_are_exactly_what_mutation_acts_on(
    renderings: dict[str, Rendering], scenario_id: str, tmp_path: Path
) -> None:
    rendering = renderings[scenario_id]
    policies = policies_of(rendering, tmp_path)
    expected: set[tuple[str, tuple[str, ...], str]] = set()
    for p in policies.policies:
        if p.defaults:
            expected.add((p.group, p.versions, p.resource))
        if p.stamp_pods:
            expected.add(("", ("v1",), "pods"))
        for child in p.child_templates:
            group, _, version = child.api_version.rpartition("/")
            assert child.resource is not None
            expected.add((group, (version,), child.resource))
    entries = rendering.find("MutatingWebhookConfiguration")["webhooks"]
    assert _rule_keys(entries) == expected
    assert {e["clientConfig"]["service"]["path"] for e in entries} <= {"/mutate"}
    assert {e["reinvocationPolicy"] for e in entries} <= {"IfNeeded"}
    assert {op for e in entries for r in e["rules"] for op in r["operations"]} <= {"CREATE"}


def test_user_policy_replaces_the_built_in_policy_of_the_same_name(renderings: dict[str, Rendering]) -> None:
    files = renderings["user policies beside the built-in ones"].find("ConfigMap", "-policies")["data"]
    names = [yaml.safe_load(text)["metadata"]["name"] for text in files.values()]
    assert sorted(names) == sorted(set(names))
    assert "batch-job.yaml" not in files and "user-batch-job-gpu-rack.yaml" in files


# ------------------------------------------------------------ blocks in an annotation (json)

ANNOTATED_POLICY: t.Final = {
    "apiVersion": "wasp.dev/v1alpha1",
    "kind": "SchedulingIntegration",
    "metadata": {"name": "trainer-annotated"},
    "spec": {
        "target": {"group": "ml.example.com", "versions": ["v1"], "kind": "Trainer", "resource": "trainers"},
        "allowedPolicies": ["basic", "gang"],
        "allowedDisruptionModes": ["single", "all"],
        "root": {"type": "leaf", "path": "metadata.annotations[scheduling.wasp.dev/blocks]", "encoding": "json",
                 "templateName": "{name}", "podCount": {"path": "spec.workers"}},
    },
}  # fmt: skip


def _trainer(annotations: dict[str, str] | None) -> Json:
    meta: Json = {"name": "t", "namespace": "ml"} | (
        {"annotations": annotations} if annotations is not None else {}
    )
    return {"apiVersion": "ml.example.com/v1", "kind": "Trainer", "metadata": meta, "spec": {"workers": 2}}


BLOCKS: t.Final = '{"schedulingPolicy": {"gang": {}}}'
ANNOTATED: t.Final = [
    pytest.param(_trainer({"scheduling.wasp.dev/blocks": BLOCKS}), None, True, id="the annotation is sent"),
    pytest.param(_trainer(None), None, False, id="no annotations are not sent"),
    pytest.param(_trainer({"scheduling.wasp.dev/other": BLOCKS}), None, False, id="another annotation is not sent"),
    pytest.param(_trainer({}), _trainer({"scheduling.wasp.dev/blocks": BLOCKS}), True,
                 id="an update removing the annotation is sent"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "old", "sent"), ANNOTATED)
def test_an_annotation_path_with_dots_is_one_key_in_the_match_condition(
    obj: Json, old: Json | None, sent: bool, tmp_path: Path
) -> None:
    import cel

    objects = tools.render({"policies": {"builtin": False, "user": {"t": ANNOTATED_POLICY}}}, tmp=tmp_path)
    [entry] = tools.find(objects, "ValidatingWebhookConfiguration")["webhooks"]
    [condition] = [c for c in entry["matchConditions"] if c["name"] == "has-scheduling-blocks"]
    assert cel.compile(condition["expression"]).execute({"object": obj, "oldObject": old}) is sent
