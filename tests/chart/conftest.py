"""Fixtures of the chart tests: the renderings of every toggle, made once per session.

Rendering runs the real helm binary (about 0.3 s each); checkov is slower still (tens of
seconds), so both are session-scoped and every test reads the same renderings.
"""

from __future__ import annotations

import sys
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

REPO: t.Final = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.chart import tools  # noqa: E402
from webhook.policy import PolicySet  # noqa: E402
from webhook.vocab.gates import FeatureGates  # noqa: E402

Json = dict[str, t.Any]


def _policy(path: str) -> Json:
    return t.cast(Json, yaml.safe_load((REPO / path).read_text()))


def jobset_policy() -> Json:
    """A JobSet-like CRD whose controller creates batch/v1 Jobs: the childTemplates path."""
    return {
        "apiVersion": "wasp.dev/v1alpha1",
        "kind": "SchedulingIntegration",
        "metadata": {"name": "jobset-example"},
        "spec": {
            "target": {
                "group": "jobset.example.com",
                "versions": ["v1alpha2"],
                "kind": "JobSet",
                "resource": "jobsets",
            },  # fmt: skip
            "allowedPolicies": ["basic", "gang"],
            "allowedDisruptionModes": ["single", "all"],
            "root": {
                "type": "leaf",
                "path": "spec.scheduling",
                "templateName": "{name}",
                "podCount": {"path": "spec.replicas"},
            },  # fmt: skip
            "stamping": {
                "childTemplates": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "resource": "jobs",
                        "templatePath": "spec.template",
                    },  # fmt: skip
                ]
            },
        },
    }


def user_policies() -> Json:
    """The example CRD policies, a replacement of the built-in Job policy (with a default), and
    a child-template policy: every webhook-entry shape the chart generates."""
    return {
        "trainer": _policy("examples/trainer/policy.yaml"),
        "inferenceservice": _policy("examples/rolebased/policy.yaml"),
        "batch-job-gpu-rack": _policy("examples/policies/batch-job-gpu-rack.yaml"),
        "jobset": jobset_policy(),
    }


# Every integration the chart carries (copies of policies/integrations/, test_chart_policies.py).
INTEGRATIONS: t.Final = sorted(p.stem for p in (tools.CHART / "policies" / "integrations").glob("*.yaml"))


@dataclass(frozen=True)
class Scenario:
    id: str  # a sentence: what the values turn on
    values: Json = field(default_factory=dict)


SCENARIOS: t.Final = (
    Scenario("default values"),
    Scenario("cert-manager with the chart's own CA", {"certs": {"mode": "cert-manager"}}),
    Scenario(
        "cert-manager with an existing ClusterIssuer",
        {
            "certs": {
                "mode": "cert-manager",
                "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
            }
        },
    ),
    Scenario(
        "a NetworkPolicy with apiserver CIDRs and a metrics scraper",
        {
            "networkPolicy": {
                "enabled": True,
                "apiserverCIDRs": ["10.0.0.0/24"],
                "metricsFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}],
            }
        },
    ),  # fmt: skip
    Scenario("a NetworkPolicy without CIDRs", {"networkPolicy": {"enabled": True}}),
    Scenario(
        "a ServiceMonitor and a PrometheusRule",
        {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}},
    ),
    Scenario("an HPA", {"autoscaling": {"enabled": True}}),
    Scenario("one replica", {"replicas": 1}),
    Scenario("three replicas", {"replicas": 3}),
    Scenario("user policies beside the built-in ones", {"policies": {"user": user_policies()}}),
    Scenario("user policies only", {"policies": {"builtin": False, "user": user_policies()}}),
    Scenario(
        "user policies with the CompositePodGroup gate",
        {"server": {"featureGates": "CompositePodGroup=true"}, "policies": {"user": user_policies()}},
    ),
    Scenario(
        "user policies with the GenericWorkload gate off",
        {"server": {"featureGates": "GenericWorkload=false"}, "policies": {"user": user_policies()}},
    ),
    Scenario(
        "the reconciler disabled beside user policies",
        {"policies": {"user": user_policies()}, "reconciler": {"enabled": False}},
    ),
    Scenario(
        "one reconciler replica", {"policies": {"user": user_policies()}, "reconciler": {"replicas": 1}}
    ),
    Scenario(
        "the reconciler with a NetworkPolicy and monitoring",
        {
            "policies": {"user": user_policies()},
            "networkPolicy": {
                "enabled": True,
                "apiserverCIDRs": ["10.0.0.0/24"],
                "metricsFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}],
            },
            "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
        },
    ),  # fmt: skip
    Scenario("warn-only enforcement", {"server": {"enforcement": "warn"}}),
    Scenario("integrations", {"integrations": INTEGRATIONS}),
)
SCENARIO_IDS: t.Final = [s.id for s in SCENARIOS]


@dataclass(frozen=True)
class Rendering:
    scenario: Scenario
    objects: list[Json]
    text: str  # the objects as one YAML stream, for scanners

    def find(self, kind: str, name_suffix: str = "") -> Json:
        return tools.find(self.objects, kind, name_suffix)

    def all(self, kind: str) -> list[Json]:
        return [o for o in self.objects if o["kind"] == kind]

    def deployment(self, component: str = "webhook") -> Json:
        """The server's Deployment, or the reconciler's (by their selector's component label)."""
        found = [d for d in self.all("Deployment")
                 if d["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == component]  # fmt: skip
        assert len(found) == 1, f"{len(found)} Deployments of component {component}"
        return found[0]


def arg(args: t.Sequence[str], flag: str) -> str | None:
    """The value of ``--flag=value`` in rendered container args (None when absent)."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"{flag}=")]
    assert len(values) <= 1, f"{flag} given {len(values)} times"
    return values[0] if values else None


def server_args(rendering: Rendering) -> list[str]:
    return t.cast(list[str], rendering.deployment()["spec"]["template"]["spec"]["containers"][0]["args"])


def policies_of(rendering: Rendering, tmp: Path) -> PolicySet:
    """The PolicySet the server loads: the ConfigMap's files (`--no-builtin-policies --policies
    /policies`), the `--integrations` files (the chart's copies of the image's) and its gates."""
    directory = tmp / "policies"
    directory.mkdir()
    for name, text in rendering.find("ConfigMap", "-policies")["data"].items():
        (directory / name).write_text(text)
    args = server_args(rendering)
    names = (arg(args, "--integrations") or "").split(",")
    integrations = [tools.CHART / "policies" / "integrations" / f"{n}.yaml" for n in names if n]
    gates = FeatureGates.parse(arg(args, "--feature-gates") or "")
    return PolicySet.load([*integrations, directory], builtin=False, gates=gates)


@pytest.fixture(scope="session")
def renderings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendering]:
    # Session-scoped: every test of the folder reads these; each costs a helm process.
    tmp = tmp_path_factory.mktemp("renderings")
    out = {}
    for scenario in SCENARIOS:
        objects = tools.render(scenario.values, tmp=tmp)
        out[scenario.id] = Rendering(scenario, objects, yaml.safe_dump_all(objects, sort_keys=False))
    return out


@pytest.fixture(scope="session")
def default(renderings: dict[str, Rendering]) -> Rendering:
    return renderings["default values"]
