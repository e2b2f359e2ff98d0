"""The chart renders, lints and validates; its workload, certificates and snapshots (the webhook
rules against the policies are in test_chart_policies.py, the reconciler in test_chart_reconciler.py).

Every toggle of values.yaml is a scenario (conftest.SCENARIOS); each test reads the session's
renderings, made with the real helm v4 binary for Kubernetes 1.37.
"""

from __future__ import annotations

import base64
import os
import typing as t
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.chart import tools
from tests.chart.conftest import SCENARIO_IDS, SCENARIOS, Rendering, Scenario
from tests.chart.crd_schemas import BY_KIND
from webhook import certs
from webhook.policy import PolicySet

Json = dict[str, t.Any]
SNAPSHOTS_DIR: t.Final = Path(__file__).parent / "snapshots"
GENERATED: t.Final = "<generated at install>"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_helm_lint_strict_passes(scenario: Scenario, tmp_path: Path) -> None:
    args = ["lint", "--strict", str(tools.CHART), "--kube-version", tools.KUBE_VERSION]
    if scenario.values:
        (tmp_path / "values.yaml").write_text(yaml.safe_dump(scenario.values))
        args += ["--values", str(tmp_path / "values.yaml")]
    result = tools.run_helm(*args, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_every_rendered_object_passes_strict_validation(
    renderings: dict[str, Rendering], scenario_id: str
) -> None:
    failures = []
    for obj in renderings[scenario_id].objects:
        crd_schema = BY_KIND.get((obj["apiVersion"], obj["kind"]))
        try:
            if crd_schema is not None:
                jsonschema.validate(obj, crd_schema)
            else:
                kubernetes_validate.validate(obj, tools.KUBE_VERSION, strict=True)
        except (kubernetes_validate.ValidationError, jsonschema.ValidationError) as exc:
            failures.append((obj["kind"], obj["metadata"]["name"], list(exc.path)))
    assert failures == []


CUSTOM_KINDS: t.Final = [
    ("default values", set()),
    ("cert-manager with the chart's own CA", {"Certificate", "Issuer"}),
    ("cert-manager with an existing ClusterIssuer", {"Certificate"}),
    ("a ServiceMonitor and a PrometheusRule", {"ServiceMonitor", "PrometheusRule"}),
    ("the reconciler with a NetworkPolicy and monitoring", {"ServiceMonitor", "PrometheusRule"}),
    ("integrations", set()),
]


@pytest.mark.parametrize(("scenario_id", "kinds"), CUSTOM_KINDS, ids=[c[0] for c in CUSTOM_KINDS])
def test_custom_resources_appear_only_with_their_toggle(
    renderings: dict[str, Rendering], scenario_id: str, kinds: set[str]
) -> None:
    found = {o["kind"] for o in renderings[scenario_id].objects if (o["apiVersion"], o["kind"]) in BY_KIND}
    assert found == kinds


def test_webhook_paths_are_routes_of_the_server(tmp_path: Path) -> None:
    from webhook.server.app import create_app
    from webhook.server.settings import Settings

    dev = certs.ensure_dev_certs(tmp_path, now=datetime.now(UTC))
    app = create_app(Settings(cert_file=dev.cert_file, key_file=dev.key_file), policies=PolicySet.load())
    posts = {r.rule for r in app.url_map.iter_rules() if "POST" in (r.methods or ())}
    assert {"/validate", "/mutate"} <= posts


ENTRY_SETTINGS: t.Final = [
    ("every entry accepts only AdmissionReview v1", lambda e: e["admissionReviewVersions"], ["v1"]),
    ("every entry declares no side effects", lambda e: e["sideEffects"], "None"),
    ("every entry fails closed by default", lambda e: e["failurePolicy"], "Fail"),
    ("every entry calls the release's Service on 443", lambda e: e["clientConfig"]["service"]["port"], 443),
    (
        "every entry skips kube-system and the release namespace",
        lambda e: e["namespaceSelector"]["matchExpressions"][0],
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["wasp-system", "kube-system"]},
    ),
    (
        "every entry skips namespaces that opted out",
        lambda e: e["namespaceSelector"]["matchExpressions"][1],
        {"key": "wasp.dev/admission", "operator": "NotIn", "values": ["disabled"]},
    ),
    # A defaults entry (<policy>.mutate.wasp.dev) has none: see test_a_default_s_condition_is_not_copied.
    (
        "every entry but a defaults entry has matchConditions",
        lambda e: bool(e.get("matchConditions")) or e["name"].count(".") == 3,
        True,
    ),
]


@pytest.mark.parametrize(("sentence", "get", "expected"), ENTRY_SETTINGS, ids=[s[0] for s in ENTRY_SETTINGS])
def test_webhook_entry_settings(
    renderings: dict[str, Rendering], sentence: str, get: t.Callable[[Json], object], expected: object
) -> None:
    rendering = renderings["user policies beside the built-in ones"]
    entries = [
        *rendering.find("ValidatingWebhookConfiguration")["webhooks"],
        *rendering.find("MutatingWebhookConfiguration")["webhooks"],
    ]
    assert entries
    assert {e["name"]: get(e) for e in entries} == {e["name"]: expected for e in entries}


def test_timeouts_are_short_by_default(default: Rendering) -> None:
    validating = default.find("ValidatingWebhookConfiguration")["webhooks"]
    assert {e["timeoutSeconds"] for e in validating} == {3}


def test_webhook_configurations_are_plain_release_objects_so_uninstall_removes_them(
    renderings: dict[str, Rendering],
) -> None:
    special = {
        (o["kind"], o["metadata"]["name"])
        for r in renderings.values()
        for o in r.objects
        if {"helm.sh/hook", "helm.sh/resource-policy"} & set(o["metadata"].get("annotations") or {})
    }
    assert special == {("Job", "wasp-probe")}  # only the post-install probe is a hook


# ------------------------------------------------------------------------------- workload


def _pod_spec(rendering: Rendering) -> Json:
    return t.cast(Json, rendering.deployment()["spec"]["template"]["spec"])


def _container(rendering: Rendering) -> Json:
    return t.cast(Json, _pod_spec(rendering)["containers"][0])


DEPLOYMENT: t.Final = [
    ("two replicas by default", lambda r: r.deployment()["spec"]["replicas"], 2),
    ("no PriorityClass by default (a critical one needs a quota outside kube-system)",
     lambda r: "priorityClassName" in _pod_spec(r), False),
    ("images pulled only when not present", lambda r: _container(r)["imagePullPolicy"], "IfNotPresent"),
    ("spread over nodes", lambda r: _pod_spec(r)["topologySpreadConstraints"][0]["topologyKey"],
     "kubernetes.io/hostname"),
    ("non-root pod", lambda r: _pod_spec(r)["securityContext"]["runAsNonRoot"], True),
    ("seccomp RuntimeDefault", lambda r: _pod_spec(r)["securityContext"]["seccompProfile"]["type"], "RuntimeDefault"),
    ("read-only root filesystem", lambda r: _container(r)["securityContext"]["readOnlyRootFilesystem"], True),
    ("no privilege escalation", lambda r: _container(r)["securityContext"]["allowPrivilegeEscalation"], False),
    ("all capabilities dropped", lambda r: _container(r)["securityContext"]["capabilities"]["drop"], ["ALL"]),
    ("a writable /tmp emptyDir", lambda r: [m["mountPath"] for m in _container(r)["volumeMounts"]
                                           if m["name"] == "tmp"], ["/tmp"]),
    ("requests and limits", lambda r: sorted(_container(r)["resources"]), ["limits", "requests"]),
    ("a preStop delay", lambda r: _container(r)["lifecycle"]["preStop"]["sleep"]["seconds"], 5),
    ("grace period above preStop plus the server's 8 s graceful timeout",
     lambda r: _pod_spec(r)["terminationGracePeriodSeconds"] > 5 + 8, True),
    ("probes on the plain port", lambda r: {_container(r)[p]["httpGet"]["port"]
                                           for p in ("startupProbe", "readinessProbe", "livenessProbe")}, {"metrics"}),
    ("no API token in the server", lambda r: _pod_spec(r)["automountServiceAccountToken"], False),
    ("only the serving pair is mounted", lambda r: [i["key"] for v in _pod_spec(r)["volumes"] if v["name"] == "certs"
                                                    for i in v["secret"]["items"]], ["tls.crt", "tls.key"]),
    ("the server loads exactly the ConfigMap's policies",
     lambda r: [a for a in _container(r)["args"] if "polic" in a], ["--no-builtin-policies", "--policies=/policies"]),
    ("a policy change rolls the pods", lambda r: "checksum/policies" in r.deployment()["spec"]["template"]
     ["metadata"]["annotations"], True),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "get", "expected"), DEPLOYMENT, ids=[d[0] for d in DEPLOYMENT])
def test_deployment(
    default: Rendering, sentence: str, get: t.Callable[[Rendering], object], expected: object
) -> None:
    assert get(default) == expected


def test_a_policy_change_changes_the_rollout_checksum(renderings: dict[str, Rendering]) -> None:
    def checksum(scenario_id: str) -> str:
        meta = renderings[scenario_id].deployment()["spec"]["template"]["metadata"]
        return t.cast(str, meta["annotations"]["checksum/policies"])

    assert checksum("default values") != checksum("user policies beside the built-in ones")


PDB: t.Final = [
    ("default values", 1),
    ("one replica", 0),
    ("three replicas", 1),
    ("an HPA", 1),
]


@pytest.mark.parametrize(
    ("scenario_id", "count"), PDB, ids=[f"{p[0]}: {p[1]} PodDisruptionBudget" for p in PDB]
)
def test_pod_disruption_budget_only_with_more_than_one_replica(
    renderings: dict[str, Rendering], scenario_id: str, count: int
) -> None:
    assert len(renderings[scenario_id].all("PodDisruptionBudget")) == count


# ------------------------------------------------------------------------------ certificates


def test_self_managed_chain_verifies_for_the_service_name(default: Rendering) -> None:
    data = {k: base64.b64decode(v) for k, v in default.find("Secret", "-tls")["data"].items()}
    bundles = {
        base64.b64decode(e["clientConfig"]["caBundle"])
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for e in default.find(kind)["webhooks"]
    }
    assert bundles <= {data["ca-bundle.crt"]}
    found = certs.problems(
        data["tls.crt"], data["tls.key"], now=datetime.now(UTC), ca_pem=data["ca-bundle.crt"],
        hostnames=["wasp.wasp-system.svc"],
    )  # fmt: skip
    assert found == []


def test_cert_manager_mode_injects_the_ca_from_the_serving_certificate(
    renderings: dict[str, Rendering],
) -> None:
    rendering = renderings["cert-manager with the chart's own CA"]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        config = rendering.find(kind)
        assert (
            config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "wasp-system/wasp-serving"
        )
        assert all("caBundle" not in e["clientConfig"] for e in config["webhooks"])
    certificate = rendering.find("Certificate", "-serving")
    assert "wasp.wasp-system.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["secretName"] == rendering.deployment()["spec"]["template"]["spec"]["volumes"][0][
        "secret"]["secretName"]  # fmt: skip
    assert rendering.all("Secret") == [] and rendering.all("CronJob") == []


# --------------------------------------------------------------------------------- snapshot


def masked(objects: t.Iterable[Json]) -> str:
    """The objects with what `genCA` makes anew each time replaced by a marker."""
    out = []
    for obj in objects:
        obj = yaml.safe_load(yaml.safe_dump(obj))
        if obj["kind"] == "Secret":
            obj["data"] = dict.fromkeys(obj["data"], GENERATED)
        for entry in obj.get("webhooks") or ():
            if "caBundle" in entry["clientConfig"]:
                entry["clientConfig"]["caBundle"] = GENERATED
        out.append(obj)
    return yaml.safe_dump_all(out, sort_keys=False, width=120)


def _reconciler_objects(rendering: Rendering) -> list[Json]:
    return [o for o in rendering.objects if "-reconciler" in o["metadata"]["name"]]


SNAPSHOTS: t.Final = [
    pytest.param("default values", "default.yaml", lambda r: r.objects, id="the default rendering"),
    pytest.param("user policies beside the built-in ones", "reconciler.yaml", _reconciler_objects,
                 id="the reconciler's objects for user policies"),
]  # fmt: skip


@pytest.mark.parametrize(("scenario_id", "file", "select"), SNAPSHOTS)
def test_rendering_matches_the_snapshot(
    renderings: dict[str, Rendering], scenario_id: str, file: str, select: t.Callable[[Rendering], list[Json]]
) -> None:
    """Regenerate with WASP_UPDATE_SNAPSHOTS=1 after an intended change, and review the diff."""
    text = masked(select(renderings[scenario_id]))
    snapshot = SNAPSHOTS_DIR / file
    if os.environ.get("WASP_UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(text)
    assert text == snapshot.read_text()


def test_notes_give_the_one_line_emergency_procedure_for_this_release(default: Rendering) -> None:
    result = tools.run_helm(
        "install", "wasp", str(tools.CHART), "--namespace", "wasp-system", "--dry-run=client"
    )
    notes = result.stdout.split("\nNOTES:\n", 1)[1]
    names = [default.find(kind)["metadata"]["name"] for kind in ("ValidatingWebhookConfiguration",
                                                                 "MutatingWebhookConfiguration")]  # fmt: skip
    expected = (
        f"kubectl delete validatingwebhookconfiguration {names[0]} && "
        f"kubectl delete mutatingwebhookconfiguration {names[1]}"
    )
    assert expected in [line.strip() for line in notes.splitlines()]


def _namespace(label: str | None) -> Json:
    labels = {"kubernetes.io/metadata.name": "team-a"} | ({"wasp.dev/admission": label} if label else {})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": labels}}


OPT_OUT: t.Final = [
    ("a cluster admin may opt a namespace out", ["system:masters"], None, "disabled", True),
    ("a namespace editor may not opt a namespace out", ["team-a-admins"], None, "disabled", False),
    ("a namespace editor may not remove the opt-out", ["team-a-admins"], "disabled", None, False),
    ("other label changes are not affected", ["team-a-admins"], "disabled", "disabled", True),
    ("a new namespace without the label is not affected", ["system:serviceaccounts"], "<new>", None, True),
    (
        "a new namespace with the label needs an allowed group",
        ["system:serviceaccounts"],
        "<new>",
        "disabled",
        False,
    ),
]


@pytest.mark.parametrize(
    ("sentence", "groups", "old", "new", "allowed"), OPT_OUT, ids=[o[0] for o in OPT_OUT]
)
def test_only_allowed_groups_may_change_the_opt_out_label(
    default: Rendering, sentence: str, groups: list[str], old: str | None, new: str | None, allowed: bool
) -> None:
    import cel

    policy = default.find("ValidatingAdmissionPolicy")["spec"]
    rule = policy["matchConstraints"]["resourceRules"][0]
    assert (rule["resources"], rule["operations"]) == (["namespaces"], ["CREATE", "UPDATE"])
    context: Json = {
        "object": _namespace(new),
        "oldObject": None if old == "<new>" else _namespace(old),
        "request": {"userInfo": {"username": "u", "groups": groups}},
    }
    context["variables"] = {
        v["name"]: cel.compile(v["expression"]).execute(context) for v in policy["variables"]
    }
    assert [cel.compile(v["expression"]).execute(context) for v in policy["validations"]] == [allowed]
