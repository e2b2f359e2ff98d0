"""The webhook's access for membership policies (docs/decisions.md §28): network egress only
then (the apiserver's ports and CIDRs, and DNS), and a mutating entry for member pods."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from tests.chart import tools
from tests.chart.dispatcher import Dispatcher
from tests.ports import free_ports

Json = dict[str, t.Any]
DNS: t.Final = [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]


def _egress(values: Json, tmp: Path) -> list[Json]:
    objects = tools.render({"networkPolicy": {"enabled": True}, **values}, tmp=tmp)
    policy = next(o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "wasp")
    return t.cast(list[Json], policy["spec"]["egress"])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param({}, [], id="the default install connects nowhere"),
        pytest.param(
            {"integrations": ["jobset", "raycluster"]},
            [{"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}, *DNS],
            id="stamping integrations: the grouping cache's watch (decision 30)",
        ),
        pytest.param(
            {"integrations": ["leaderworkerset"]},
            [{"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}, *DNS],
            id="membership: the apiserver's ports and DNS",
        ),
        pytest.param(
            {
                "integrations": ["leaderworkerset"],
                "networkPolicy": {"enabled": True, "apiserverCIDRs": ["10.0.0.1/32"]},
            },
            [
                {
                    "ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}],
                    "to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}],
                },
                *DNS,
            ],  # fmt: skip
            id="membership with the apiserver's CIDRs",
        ),
    ],
)
def test_the_webhook_reaches_the_apiserver_only_when_it_stamps(
    tmp_path: Path, values: Json, expected: list[Json]
) -> None:
    assert _egress(values, tmp_path) == expected


LWS_LABEL: t.Final = "leaderworkerset.sigs.k8s.io/name"


def _pod(labels: dict[str, str], *, stamped: bool = False) -> Json:
    spec: Json = {"containers": [{"name": "c", "image": "i"}]}
    if stamped:
        spec["schedulingGroup"] = {"podGroupName": "mine"}
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm", "uid": "u", "controller": True}
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": "vllm-0", "namespace": "ml", "labels": labels, "ownerReferences": [owner]}}  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "called"),
    [
        pytest.param(
            _pod({LWS_LABEL: "vllm"}),
            ["leaderworkerset.members.mutate.wasp.dev"],
            id="a pod with the membership label is sent to wasp",
        ),  # fmt: skip
        pytest.param(_pod({"app": "vllm"}), [], id="a StatefulSet pod without it never reaches wasp"),
        pytest.param(
            _pod({LWS_LABEL: "vllm"}, stamped=True), [], id="nor does a pod with its own schedulingGroup"
        ),
    ],
)
def test_member_pods_reach_the_webhook_through_their_own_entry(
    tmp_path: Path, pod: Json, called: list[str]
) -> None:
    objects = tools.render({"integrations": ["leaderworkerset"]}, tmp=tmp_path)
    port = free_ports(1)[0]  # nothing listens: the call made is the one that fails
    outcome = Dispatcher.from_rendering(objects, ("127.0.0.1", port)).admit(pod)
    assert outcome.called == called


# ------------------------------------------------- scoping that a value or a user's CEL cannot break


def _entries(objects: list[Json], kind: str) -> list[Json]:
    return t.cast(list[Json], next(o for o in objects if o["kind"] == kind)["webhooks"])


def test_a_default_s_condition_is_not_copied_into_a_match_condition(tmp_path: Path) -> None:
    """A default's `when` is wasp's to evaluate: wasp skips a rule whose condition errors, but an
    error in a matchCondition makes the apiserver apply failurePolicy (Fail: every object of the
    kind refused without wasp being asked). So a kind with defaults is sent whole."""
    policy = yaml.safe_load((tools.REPO / "policies" / "batch-job.yaml").read_text())
    policy["spec"]["defaults"] = [
        {"name": "gpu-gang", "when": "object.spec.template.metadata.labels['gpu'] == 'true'",
         "set": {"schedulingPolicy": {"gang": {}}}},
    ]  # fmt: skip
    objects = tools.render({"policies": {"user": {"job-defaults": policy}}}, tmp=tmp_path)
    [entry] = [
        e
        for e in _entries(objects, "MutatingWebhookConfiguration")
        if e["name"] == "batch-job.mutate.wasp.dev"
    ]
    assert "matchConditions" not in entry
    plain = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain", "namespace": "default"},
             "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}  # fmt: skip
    outcome = Dispatcher.from_rendering(objects, ("127.0.0.1", free_ports(1)[0])).admit(plain)
    # wasp is not running: the entry is called (and fails), no condition error decides first.
    assert (
        outcome.error is not None
        and 'failed calling webhook "batch-job.mutate.wasp.dev"' in outcome.error.message
    )


@pytest.mark.parametrize(
    "excluded",
    [
        pytest.param(["gatekeeper-system"], id="a list of others still excludes kube-system"),
        pytest.param([], id="an empty list"),
        pytest.param(None, id="null"),
        pytest.param([""], id="an empty name is dropped"),
    ],
)
def test_kube_system_and_the_release_namespace_are_always_excluded(tmp_path: Path, excluded: object) -> None:
    objects = tools.render({"webhooks": {"excludedNamespaces": excluded}}, tmp=tmp_path)
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        for entry in _entries(objects, kind):
            names = entry["namespaceSelector"]["matchExpressions"][0]["values"]
            assert names[:2] == ["wasp-system", "kube-system"] and "" not in names
            assert names[2:] == [n for n in (excluded or []) if n]


def test_the_post_install_probe_may_reach_the_webhook_through_the_network_policy(tmp_path: Path) -> None:
    """The webhook admits https only from the apiserver's CIDRs; the probe, which asks it as the
    apiserver would, is let in too (else every install and upgrade fails its hook)."""
    objects = tools.render(
        {"networkPolicy": {"enabled": True, "apiserverCIDRs": ["10.0.0.0/24"]}}, tmp=tmp_path
    )
    policy = next(o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "wasp")
    [https] = [rule for rule in policy["spec"]["ingress"] if rule["ports"][0]["port"] == "https"]
    probe = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("-probe"))
    labels = probe["spec"]["template"]["metadata"]["labels"]
    peers = [p["podSelector"]["matchLabels"] for p in https["from"] if "podSelector" in p]
    assert any(all(labels.get(k) == v for k, v in peer.items()) for peer in peers)
    assert {"ipBlock": {"cidr": "10.0.0.0/24"}} in https["from"]


@pytest.mark.parametrize(
    ("selector", "members"),
    [
        pytest.param(
            {}, {"matchExpressions": [{"key": LWS_LABEL, "operator": "Exists"}]}, id="the label alone"
        ),
        pytest.param(
            {
                "matchLabels": {"team": "ml"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}],
            },
            {
                "matchLabels": {"team": "ml"},
                "matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["x"]},
                    {"key": LWS_LABEL, "operator": "Exists"},
                ],
            },
            id="ANDed with the global objectSelector",
        ),  # fmt: skip
    ],
)
def test_member_pods_are_also_selected_by_their_label(tmp_path: Path, selector: Json, members: Json) -> None:
    """admission.md S3: a Pod webhook narrowed by an objectSelector on its label (LWS: Exists), which
    the apiserver checks before any CEL; every other entry keeps the global selector as it is."""
    objects = tools.render(
        {"integrations": ["leaderworkerset"], "webhooks": {"objectSelector": selector}}, tmp=tmp_path
    )
    entries = {
        e["name"]: e["objectSelector"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for e in _entries(objects, kind)
    }
    assert entries.pop("leaderworkerset.members.mutate.wasp.dev") == members
    assert entries and all(found == selector for found in entries.values())


def test_every_pod_the_chart_runs_gets_the_node_selection(tmp_path: Path) -> None:
    """A cluster whose schedulable nodes need a selector or a toleration needs them on the
    install probe and the certificate rotator too (else the hook never runs, the rotation never
    happens)."""
    selection = {
        "nodeSelector": {"pool": "system"},
        "tolerations": [{"key": "dedicated", "operator": "Exists"}],
    }
    objects = tools.render({**selection, "reconciler": {"enabled": True}}, tmp=tmp_path)
    pods = {
        o["metadata"]["name"]: (o["spec"]["jobTemplate"]["spec"] if o["kind"] == "CronJob" else o["spec"])[
            "template"
        ]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "Job", "CronJob")
    }
    assert len(pods) >= 3  # the server, the probe, the rotator
    assert {name: (spec.get("nodeSelector"), spec.get("tolerations")) for name, spec in pods.items()} == {
        name: (selection["nodeSelector"], selection["tolerations"]) for name in pods
    }
