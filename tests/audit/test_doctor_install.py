"""``wasp doctor`` against what ``helm install`` of charts/wasp creates (rendered by real helm,
served by the STAND-IN API server): it judges the install by the configuration the release
wrote on its webhook configurations (the ``wasp.dev/install`` annotation), in ``wasp-system``
by default as README and docs/install.md install it."""

from __future__ import annotations

import base64
import json
import typing as t
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.chart import tools

from .conftest import Cluster, start
from .test_doctor import TlsServer, bundle

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
ADMISSION: t.Final = "/apis/admissionregistration.k8s.io/v1"
PLURALS: t.Final = {"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
                    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations"}  # fmt: skip


def helm_install(cluster: Cluster, values: Json, tmp: Path, port: int, ca: bytes, *, lease: bool,
                 edit: t.Callable[[Json], None] = lambda obj: None) -> None:  # fmt: skip
    """The webhook configurations and Service of ``helm install wasp charts/wasp -n wasp-system``,
    the EndpointSlice the endpoints controller adds (the TLS server), and a held Lease if asked."""
    objects = tools.render(values, tmp=tmp)
    for obj in objects:
        if obj["kind"] in PLURALS:
            for hook in obj["webhooks"] or []:  # the test's CA: the rendered one is generated at install
                hook["clientConfig"]["caBundle"] = base64.b64encode(ca).decode()
            edit(obj)
            cluster.create(f"{ADMISSION}/{PLURALS[obj['kind']]}", obj)
    service = tools.find(objects, "Service", "wasp")
    cluster.create("/api/v1/namespaces/wasp-system/services", service)
    cluster.create("/apis/discovery.k8s.io/v1/namespaces/wasp-system/endpointslices", {
        "metadata": {"name": "wasp-1", "labels": {"kubernetes.io/service-name": "wasp"}}, "ports": [{"port": port}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]})  # fmt: skip
    if lease:
        cluster.create("/apis/coordination.k8s.io/v1/namespaces/wasp-system/leases", {
            "metadata": {"name": "wasp-reconciler"}, "spec": {"holderIdentity": "r-1", "leaseDurationSeconds": 15,
            "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}})  # fmt: skip


CASES: t.Final = [
    pytest.param({}, False, {}, 0, id="default-install"),
    pytest.param({"server": {"enforcement": "warn"}}, False, {}, 0, id="warn-mode-fails-open"),
    pytest.param({"integrations": ["raycluster"]}, True, {}, 0, id="reconciler-with-its-lease"),
    # Controls: what the release was configured to do, and is not there, still fails.
    pytest.param(
        {"integrations": ["raycluster"]}, False, {"lease": "fail"}, 1, id="reconciler-without-lease"
    ),
]


@pytest.mark.parametrize(("values", "lease", "changed", "code"), CASES)
def test_doctor_judges_the_install_by_its_configuration(tmp_path: Path, values: Json, lease: bool,
                                                        changed: dict[str, str], code: int) -> None:  # fmt: skip
    certs = bundle()
    server = TlsServer(certs, tmp_path)
    try:
        for cluster in start(tmp_path):
            helm_install(cluster, values, tmp_path, server.port, certs.ca_pem, lease=lease)
            exit_code, out, _ = cluster.run("doctor", "-o", "json")  # no -n: wasp-system
            doc = json.loads(out)
            verdicts = {c["id"]: c["verdict"] for c in doc["checks"]}
            assert {k: v for k, v in verdicts.items() if v != "pass"} == changed
            assert (exit_code, doc["exitCode"]) == (code, code)
    finally:
        server.close()


def hand_edit(obj: Json) -> None:
    if obj["kind"] == "ValidatingWebhookConfiguration":
        obj["webhooks"][0]["failurePolicy"] = "Fail"  # the release says Ignore (warn mode)
        obj["webhooks"] = obj["webhooks"][:1]  # and one entry removed


def test_a_hand_edited_entry_fails_against_the_releases_configuration(tmp_path: Path) -> None:
    certs = bundle()
    server = TlsServer(certs, tmp_path)
    try:
        for cluster in start(tmp_path):
            helm_install(cluster, {"server": {"enforcement": "warn"}}, tmp_path, server.port, certs.ca_pem,
                         lease=False, edit=hand_edit)  # fmt: skip
            _, out, _ = cluster.run("doctor", "-o", "json")
            check = {c["id"]: c for c in json.loads(out)["checks"]}["webhook-settings/validating"]
            assert check["verdict"] == "fail"
            assert "failurePolicy Fail, the install sets Ignore" in check["detail"]
            assert "it has 1 webhooks, the release rendered 2" in check["detail"]
    finally:
        server.close()
