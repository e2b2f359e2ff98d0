"""The chart's reconciler: rendered when a policy needs it, with exactly the RBAC `wasp reconcile`
uses, the server's policies and gates, and flags its own parser accepts.

The expected RBAC is derived in Python from the policies the server loads (the ConfigMap and
the integrations), through the reconciler's own functions, so the chart's Go-template copy of
that decision cannot drift from the code.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import click
import pytest
import yaml

from tests.chart import tools, values_schema
from tests.chart.conftest import SCENARIO_IDS, Rendering, arg, policies_of, server_args
from webhook.cli.reconcile import reconcile
from webhook.cli.serve import serve
from webhook.governed.grouping import GroupingCache
from webhook.governed.membership import membership_kinds
from webhook.governed.outsiders import grouping_feeds, stamps
from webhook.governed.reconcile import reconciled_policies
from webhook.policy import PolicySet
from webhook.reconciler.controller import governed_resources

Json = dict[str, t.Any]
Rules = dict[tuple[str, str], frozenset[str]]
WITH_RECONCILER: t.Final = [
    "user policies beside the built-in ones",
    "user policies only",
    "user policies with the CompositePodGroup gate",
    "one reconciler replica",
    "the reconciler with a NetworkPolicy and monitoring",
    "integrations",
]
READ: t.Final = frozenset({"get", "list", "watch"})


def reconciler_objects(rendering: Rendering) -> list[Json]:
    return [
        o for o in rendering.objects if o["metadata"]["name"].endswith(("-reconciler", "-reconciler-metrics"))
    ]


def reconciler_args(rendering: Rendering) -> list[str]:
    return t.cast(
        list[str], rendering.deployment("reconciler")["spec"]["template"]["spec"]["containers"][0]["args"]
    )


def flatten(rules: list[Json]) -> Rules:
    """RBAC rules as (group, resource) -> verbs; a resource named twice is a rendering error."""
    out: Rules = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                assert (group, resource) not in out, f"{group}/{resource} in two rules"
                out[group, resource] = frozenset(rule["verbs"])
    return out


def derived_rules(policies: PolicySet) -> Rules:
    """What `wasp reconcile` calls (docs/reconciler.md, "Permissions it needs"), for these policies."""
    rules: Rules = {(r.group, r.plural): frozenset({"list", "watch"}) for r in governed_resources(policies)}
    # Not a call: the OwnerReferencesPermissionEnforcement admission plugin lets only who may
    # update an owner's finalizers create objects naming it with blockOwnerDeletion.
    rules |= {
        (r.group, f"{r.plural}/finalizers"): frozenset({"update"}) for r in governed_resources(policies)
    }
    rules["scheduling.k8s.io", "workloads"] = READ | {"create", "patch"}
    rules["scheduling.k8s.io", "podgroups"] = READ | {"create", "patch"}
    # The condition webhook/reconciler/run.py starts the CompositePodGroup watch on.
    if any(p.root.composite for p in reconciled_policies(policies)) and "CompositePodGroup" in policies.gates:
        rules["scheduling.k8s.io", "compositepodgroups"] = READ | {"create"}
    rules["", "pods"] = frozenset({"list", "watch"})
    rules["", "events"] = frozenset({"create"})
    return rules


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_reconciler_is_rendered_exactly_when_a_policy_needs_it(
    renderings: dict[str, Rendering], scenario_id: str, tmp_path: Path
) -> None:
    rendering = renderings[scenario_id]
    policies = policies_of(rendering, tmp_path)
    # Without GenericWorkload it plans nothing (management_mode) and its start-up checks fail.
    wanted = bool(reconciled_policies(policies)) and "GenericWorkload" in policies.gates
    wanted = wanted and rendering.scenario.values.get("reconciler", {}).get("enabled", True)
    assert bool(reconciler_objects(rendering)) == wanted
    assert (scenario_id in WITH_RECONCILER) == wanted  # the list the other tests run over


@pytest.mark.parametrize("scenario_id", WITH_RECONCILER)
def test_the_cluster_role_is_exactly_what_the_reconciler_calls(
    renderings: dict[str, Rendering], scenario_id: str, tmp_path: Path
) -> None:
    rendering = renderings[scenario_id]
    role = rendering.find("ClusterRole", "-reconciler")
    assert flatten(role["rules"]) == derived_rules(policies_of(rendering, tmp_path))
    assert all("resourceNames" not in rule and "nonResourceURLs" not in rule for rule in role["rules"])


def test_the_composite_gate_adds_composite_pod_groups_only_with_a_composite_policy(
    renderings: dict[str, Rendering],
) -> None:
    def resources(scenario_id: str) -> set[str]:
        return {r for _, r in flatten(renderings[scenario_id].find("ClusterRole", "-reconciler")["rules"])}

    assert "compositepodgroups" in resources("user policies with the CompositePodGroup gate")
    assert "compositepodgroups" not in resources("user policies beside the built-in ones")


@pytest.mark.parametrize("scenario_id", WITH_RECONCILER)
def test_the_lease_role_is_namespaced_and_name_scoped_where_rbac_allows(
    renderings: dict[str, Rendering], scenario_id: str
) -> None:
    rendering = renderings[scenario_id]
    role = rendering.find("Role", "-reconciler")
    args = reconciler_args(rendering)
    lease = arg(args, "--lease-name")
    assert role["metadata"]["namespace"] == arg(args, "--lease-namespace") == "wasp-system"
    rules = sorted(
        (r["apiGroups"], r["resources"], r.get("resourceNames", []), r["verbs"]) for r in role["rules"]
    )
    assert rules == [
        (["coordination.k8s.io"], ["leases"], [], ["create"]),  # a create carries no name to check
        (["coordination.k8s.io"], ["leases"], [lease], ["get", "update"]),
    ]


@pytest.mark.parametrize("scenario_id", WITH_RECONCILER)
def test_the_bindings_grant_the_roles_to_the_reconciler_only(
    renderings: dict[str, Rendering], scenario_id: str
) -> None:
    rendering = renderings[scenario_id]
    account = rendering.find("ServiceAccount", "-reconciler")["metadata"]
    assert (
        rendering.deployment("reconciler")["spec"]["template"]["spec"]["serviceAccountName"]
        == account["name"]
    )
    for kind, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = rendering.find(kind, "-reconciler")
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                                      "name": rendering.find(role, "-reconciler")["metadata"]["name"]}  # fmt: skip
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_webhook_service_account_reads_exactly_what_the_webhook_watches(
    renderings: dict[str, Rendering], scenario_id: str, tmp_path: Path
) -> None:
    """No token, no binding, no egress unless a policy stamps; then the token, list and watch on
    exactly the grouping cache's feeds (docs/decisions.md §30: Workloads, pods, the child kinds,
    CRDs), and get/list/watch on the membership kinds (§28). The feeds are the webhook's own
    (``grouping_feeds``), so the chart can never grant less than the webhook reads."""
    rendering = renderings[scenario_id]
    pod = rendering.deployment()["spec"]["template"]["spec"]
    account = rendering.find("ServiceAccount", pod["serviceAccountName"])
    assert account["metadata"]["name"] == pod["serviceAccountName"]
    policies = policies_of(rendering, tmp_path)
    wanted: dict[tuple[str, str], set[str]] = {}
    if stamps(policies):
        for (group, _, plural, _), _, _ in grouping_feeds(policies, GroupingCache()):
            wanted.setdefault((group, plural), set()).update({"list", "watch"})
    for p in membership_kinds(policies):
        wanted.setdefault((p.group, p.resource), set()).update({"get", "list", "watch"})
    token = bool(wanted)
    assert (pod["automountServiceAccountToken"], account["automountServiceAccountToken"]) == (token, token)
    bindings = rendering.all("RoleBinding") + rendering.all("ClusterRoleBinding")
    # Only named service accounts are bound (a Group such as system:serviceaccounts would cover it).
    assert {s["kind"] for b in bindings for s in b["subjects"]} <= {"ServiceAccount"}
    mine = [b for b in bindings if any(s["name"] == pod["serviceAccountName"] for s in b["subjects"])]
    granted: dict[tuple[str, str], set[str]] = {}
    for binding in mine:
        assert binding["roleRef"]["kind"] == "ClusterRole"
        role = rendering.find("ClusterRole", binding["roleRef"]["name"])
        for rule in role["rules"]:
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted.setdefault((group, resource), set()).update(rule["verbs"])
    assert granted == wanted


# ------------------------------------------------------------------------------------- flags


def _flags(command: click.Command) -> set[str]:
    return {opt for p in command.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("--")}


@pytest.mark.parametrize("scenario_id", WITH_RECONCILER)
def test_the_reconciler_args_parse_with_wasp_reconcile(
    renderings: dict[str, Rendering], scenario_id: str
) -> None:
    rendering = renderings[scenario_id]
    args = reconciler_args(rendering)
    assert args[0] == "reconcile"
    assert {a.split("=", 1)[0] for a in args[1:]} <= _flags(reconcile)
    # The command's own parser and types (a renamed flag or a bad value raises).
    params = reconcile.make_context("reconcile", args[1:]).params
    assert params["leader_elect"] is True


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_the_server_args_are_flags_of_wasp_serve(renderings: dict[str, Rendering], scenario_id: str) -> None:
    args = server_args(renderings[scenario_id])
    assert args[0] == "serve"
    assert {a.split("=", 1)[0] for a in args[1:]} <= _flags(serve)


@pytest.mark.parametrize("scenario_id", WITH_RECONCILER)
@pytest.mark.parametrize("flag", ["--feature-gates", "--integrations"])
def test_the_reconciler_loads_what_the_server_loads(
    renderings: dict[str, Rendering], scenario_id: str, flag: str
) -> None:
    rendering = renderings[scenario_id]
    reconciler, server = reconciler_args(rendering), server_args(rendering)
    assert arg(reconciler, flag) == arg(server, flag)
    volumes = {d: {v["name"]: v for v in rendering.deployment(d)["spec"]["template"]["spec"]["volumes"]}
               for d in ("webhook", "reconciler")}  # fmt: skip
    assert volumes["reconciler"]["policies"] == volumes["webhook"]["policies"]
    # The server: only the ConfigMap (--no-builtin-policies); the reconciler likewise.
    assert [a for a in server if "polic" in a] == ["--no-builtin-policies", "--policies=/policies"]
    assert [a for a in reconciler if "polic" in a] == ["--policy-only", "--policies=/policies"]


ENFORCEMENT: t.Final = [
    pytest.param("default values", None, id="each policy's own enforcement by default"),
    pytest.param("warn-only enforcement", "warn", id="server.enforcement warn is passed to wasp serve"),
]


@pytest.mark.parametrize(("scenario_id", "expected"), ENFORCEMENT)
def test_enforcement_reaches_the_server(
    renderings: dict[str, Rendering], scenario_id: str, expected: str | None
) -> None:
    args = server_args(renderings[scenario_id])
    assert arg(args, "--enforcement") == expected


def test_the_enforcement_values_are_the_choices_of_wasp_serve() -> None:
    [option] = [p for p in serve.params if p.name == "enforcement"]
    assert isinstance(option.type, click.Choice)
    schema = json.loads(values_schema.SCHEMA.read_text())
    assert schema["properties"]["server"]["properties"]["enforcement"]["enum"] == ["", *option.type.choices]


def test_integrations_reach_both_processes_and_the_webhook_rules(renderings: dict[str, Rendering]) -> None:
    rendering = renderings["integrations"]
    names = rendering.scenario.values["integrations"]
    for args in (server_args(rendering), reconciler_args(rendering)):
        assert arg(args, "--integrations") == ",".join(names)
    # Loaded from the image by name, so not in the ConfigMap; the webhook entries cover them.
    files = rendering.find("ConfigMap", "-policies")["data"]
    assert not [f for f in files if f.startswith("integration-")]
    policies = [yaml.safe_load((tools.CHART / "policies" / "integrations" / f"{n}.yaml").read_text())
                for n in names]  # fmt: skip
    entries = {e["name"] for e in rendering.find("ValidatingWebhookConfiguration")["webhooks"]}
    assert {f"{p['metadata']['name']}.validate.wasp.dev" for p in policies} <= entries


# ------------------------------------------------------------------------------------ workload


def _pod(r: Rendering) -> Json:
    return t.cast(Json, r.deployment("reconciler")["spec"]["template"]["spec"])


def _container(r: Rendering) -> Json:
    return t.cast(Json, _pod(r)["containers"][0])


DEPLOYMENT: t.Final = [
    ("two replicas by default", lambda r: r.deployment("reconciler")["spec"]["replicas"], 2),
    ("its own service account", lambda r: _pod(r)["serviceAccountName"], "wasp-reconciler"),
    ("its API token mounted", lambda r: _pod(r)["automountServiceAccountToken"], True),
    ("spread over nodes, its own pods", lambda r: _pod(r)["topologySpreadConstraints"][0]["labelSelector"]
     ["matchLabels"]["app.kubernetes.io/component"], "reconciler"),
    ("non-root pod", lambda r: _pod(r)["securityContext"]["runAsNonRoot"], True),
    ("seccomp RuntimeDefault", lambda r: _pod(r)["securityContext"]["seccompProfile"]["type"], "RuntimeDefault"),
    ("read-only root filesystem", lambda r: _container(r)["securityContext"]["readOnlyRootFilesystem"], True),
    ("no privilege escalation", lambda r: _container(r)["securityContext"]["allowPrivilegeEscalation"], False),
    ("all capabilities dropped", lambda r: _container(r)["securityContext"]["capabilities"]["drop"], ["ALL"]),
    ("requests and limits", lambda r: sorted(_container(r)["resources"]), ["limits", "requests"]),
    ("probes on the probe port", lambda r: {(p, _container(r)[p]["httpGet"]["port"], _container(r)[p]["httpGet"]
     ["path"]) for p in ("startupProbe", "readinessProbe", "livenessProbe")},
     {("startupProbe", "metrics", "/healthz"), ("readinessProbe", "metrics", "/readyz"),
      ("livenessProbe", "metrics", "/healthz")}),
    ("the probe port is --probe-address", lambda r: (_container(r)["ports"][0]["containerPort"],
     arg(_container(r)["args"], "--probe-address")), (8081, "0.0.0.0:8081")),
    ("rolls one pod at a time, never below its replicas", lambda r: r.deployment("reconciler")["spec"]["strategy"]
     ["rollingUpdate"], {"maxUnavailable": 0, "maxSurge": 1}),
    ("a policy change rolls the pods", lambda r: _pod(r) is not None and "checksum/policies" in r.deployment(
     "reconciler")["spec"]["template"]["metadata"]["annotations"], True),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "get", "expected"), DEPLOYMENT, ids=[d[0] for d in DEPLOYMENT])
def test_reconciler_deployment(
    renderings: dict[str, Rendering], sentence: str, get: t.Callable[[Rendering], object], expected: object
) -> None:
    assert get(renderings["user policies beside the built-in ones"]) == expected


PDB: t.Final = [
    ("user policies beside the built-in ones", 1),
    ("one reconciler replica", 0),
    ("the reconciler disabled beside user policies", 0),
]


@pytest.mark.parametrize(("scenario_id", "count"), PDB, ids=[f"{p[0]}: {p[1]} budget" for p in PDB])
def test_reconciler_disruption_budget_only_with_more_than_one_replica(
    renderings: dict[str, Rendering], scenario_id: str, count: int
) -> None:
    budgets = [b for b in renderings[scenario_id].all("PodDisruptionBudget")
               if b["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "reconciler"]  # fmt: skip
    assert len(budgets) == count


def test_the_service_monitor_scrapes_every_reconciler_replica(renderings: dict[str, Rendering]) -> None:
    rendering = renderings["the reconciler with a NetworkPolicy and monitoring"]
    monitor = rendering.find("ServiceMonitor", "-reconciler")
    service = rendering.find("Service", "-reconciler-metrics")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert (
        service["spec"]["selector"] == rendering.deployment("reconciler")["spec"]["selector"]["matchLabels"]
    )
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("metrics", "/metrics")]
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]


def test_the_network_policy_lets_the_reconciler_reach_only_the_apiserver_and_dns(
    renderings: dict[str, Rendering],
) -> None:
    policy = renderings["the reconciler with a NetworkPolicy and monitoring"].find(
        "NetworkPolicy", "-reconciler"
    )
    egress = [(sorted(p["port"] for p in rule["ports"]), rule.get("to")) for rule in policy["spec"]["egress"]]
    assert egress == [([443, 6443], [{"ipBlock": {"cidr": "10.0.0.0/24"}}]), ([53, 53], None)]
    assert [[p["port"] for p in rule["ports"]] for rule in policy["spec"]["ingress"]] == [["metrics"]]


def test_the_reconciler_alerts_select_its_metrics_service(renderings: dict[str, Rendering]) -> None:
    rendering = renderings["the reconciler with a NetworkPolicy and monitoring"]
    groups = {g["name"]: g["rules"] for g in rendering.find("PrometheusRule")["spec"]["groups"]}
    service = rendering.find("Service", "-reconciler-metrics")["metadata"]["name"]
    alerts = {r["alert"]: r["expr"] for r in groups["wasp-reconciler"]}
    assert sorted(alerts) == ["WaspReconcilerNoLeader", "WaspReconcilerWritesFail"]
    assert all(f'service="{service}"' in expr for expr in alerts.values())
    # Without a reconciler, no reconciler alerts (they would fire for ever).
    default_groups = renderings["a ServiceMonitor and a PrometheusRule"].find("PrometheusRule")["spec"][
        "groups"
    ]
    assert [g["name"] for g in default_groups] == ["wasp"]


def test_the_webhook_does_not_depend_on_the_reconciler(renderings: dict[str, Rendering]) -> None:
    """Turning the reconciler off changes nothing else: no webhook object refers to it."""
    on = renderings["user policies beside the built-in ones"]
    off = renderings["the reconciler disabled beside user policies"]

    def others(rendering: Rendering) -> dict[tuple[str, str], Json]:
        skip = {
            "Secret",
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        }  # fresh CA each render
        objects = [
            o for o in rendering.objects if o not in reconciler_objects(rendering) and o["kind"] not in skip
        ]
        return {(o["kind"], o["metadata"]["name"]): o for o in objects}

    assert others(on) == others(off)
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        strip = [{k: v for k, v in e.items() if k != "clientConfig"} for e in on.find(kind)["webhooks"]]
        assert strip == [
            {k: v for k, v in e.items() if k != "clientConfig"} for e in off.find(kind)["webhooks"]
        ]
