"""The webhook's access for membership policies (docs/decisions.md §28): network egress only
then (the apiserver's ports and CIDRs, and DNS), and a mutating entry for member pods."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

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
        pytest.param({"integrations": ["jobset", "raycluster"]}, [], id="integrations without membership"),
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
def test_the_webhook_reaches_the_apiserver_only_for_membership(
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
