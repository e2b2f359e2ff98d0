"""``wasp doctor`` against the STAND-IN API server: a ready cluster, then one fault at a time
(an expired caBundle, a gate off, a missing API group, an old server, a stale Lease...)."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import typing as t
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from webhook.certs.generate import CertBundle, generate_ca, generate_serving_cert

from .conftest import Cluster, start

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
NOW = datetime.now(UTC)


def bundle(*, expired: bool = False) -> CertBundle:
    born = NOW - timedelta(days=400) if expired else NOW
    ca = generate_ca(common_name="wasp test CA", now=born, valid_for=timedelta(days=365))
    leaf = generate_serving_cert(ca, dns_names=["wasp.wasp-system.svc"], ip_addresses=["127.0.0.1"], now=born)
    return CertBundle(ca.cert_pem, leaf.cert_pem, leaf.key_pem)


class TlsServer:
    """Completes TLS handshakes with ``certs`` on 127.0.0.1: the webhook's endpoint."""

    def __init__(self, certs: CertBundle, tmp: Path) -> None:
        (tmp / "tls.crt").write_bytes(certs.cert_pem)
        (tmp / "tls.key").write_bytes(certs.key_pem)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(tmp / "tls.crt", tmp / "tls.key")
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(conn, server_side=True):
                    pass
            except (OSError, ssl.SSLError):
                pass

    def close(self) -> None:
        self.sock.close()


def hook(name: str, ca: bytes, timeout: int, condition: str) -> Json:
    return {"name": name, "failurePolicy": "Fail", "timeoutSeconds": timeout,
            "matchConditions": [{"name": condition, "expression": "true"}],
            "clientConfig": {"service": {"namespace": "wasp-system", "name": "wasp", "port": 443},
                             "caBundle": base64.b64encode(ca).decode()}}  # fmt: skip


def install(cluster: Cluster, port: int, ca: bytes, *, fault: str) -> None:
    """wasp as charts/wasp installs it, with ``fault`` applied."""
    admission = "/apis/admissionregistration.k8s.io/v1"
    validating = hook(
        "trainer.validate.wasp.dev", ca, 10 if fault == "timeout" else 3, "has-scheduling-blocks"
    )
    cluster.create(f"{admission}/validatingwebhookconfigurations",
                   {"metadata": {"name": "wasp-validating"}, "webhooks": [validating]})  # fmt: skip
    if fault != "no-mutating":
        cluster.create(f"{admission}/mutatingwebhookconfigurations",
                       {"metadata": {"name": "wasp-mutating"}, "webhooks": [hook("trainer.mutate.wasp.dev", ca, 2, "stamp")]})  # fmt: skip
    cluster.create(
        "/api/v1/namespaces/wasp-system/services",
        {"metadata": {"name": "wasp"}, "spec": {"ports": [{"port": 443}]}},
    )
    cluster.create("/apis/discovery.k8s.io/v1/namespaces/wasp-system/endpointslices", {
        "metadata": {"name": "wasp-1", "labels": {"kubernetes.io/service-name": "wasp"}}, "ports": [{"port": port}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": fault != "not-ready"}}]})  # fmt: skip
    now = datetime.now(UTC)  # not NOW: a session longer than the lease would make it stale
    renewed = now - timedelta(minutes=10) if fault == "stale-lease" else now
    cluster.create("/apis/coordination.k8s.io/v1/namespaces/wasp-system/leases", {"metadata": {"name": "wasp-reconciler"},
        "spec": {"holderIdentity": "r-1", "leaseDurationSeconds": 15,
                 "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}})  # fmt: skip


CASES = [
    pytest.param((), "none", {}, 0, id="ready"),
    pytest.param((), "expired-ca", {"ca-bundle/validating": "fail", "ca-bundle/mutating": "fail"}, 1, id="expired-cabundle"),
    pytest.param((), "timeout", {"webhook-settings/validating": "fail"}, 1, id="timeout-not-the-charts"),
    pytest.param((), "no-mutating", {"webhook/mutating": "fail"}, 1, id="no-mutating-configuration"),
    pytest.param((), "not-ready", {"service": "fail", "ca-bundle/validating": "warn", "ca-bundle/mutating": "warn"}, 1, id="no-ready-endpoint"),
    pytest.param((), "stale-lease", {"lease": "fail"}, 1, id="stale-lease"),
    pytest.param(("--server-version", "1.36"), "none", {"server-version": "fail"}, 1, id="old-server"),
    pytest.param(("--feature-gates", "TopologyAwareWorkloadScheduling=false"), "none",
                 {"gate/TopologyAwareWorkloadScheduling": "warn"}, 0, id="field-gate-off"),
    pytest.param(("--feature-gates", "WorkloadWithJob=false,DRAWorkloadResourceClaims=false"), "none",
                 {"gate/WorkloadWithJob": "warn", "gate/DRAWorkloadResourceClaims": "warn"}, 0, id="two-field-gates-off"),
    pytest.param(("--feature-gates", "CompositePodGroup=false"), "none",
                 {"api/compositepodgroups": "warn", "gate/CompositePodGroup": "warn"}, 0, id="composite-off"),
    pytest.param(("--feature-gates", "GenericWorkload=false"), "none",
                 {"api/workloads": "fail", "api/podgroups": "fail", "gate/GenericWorkload": "fail",
                  "gate/TopologyAwareWorkloadScheduling": "warn", "gate/DRAWorkloadResourceClaims": "warn"}, 1,
                 id="missing-api-group"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "fault", "changed", "code"), CASES)
def test_each_check_has_a_verdict_and_a_fix(tmp_path: Path, args: tuple[str, ...], fault: str,
                                            changed: dict[str, str], code: int) -> None:  # fmt: skip
    certs = bundle(expired=fault == "expired-ca")
    server = TlsServer(certs, tmp_path)
    try:
        for cluster in start(tmp_path, *args):
            install(cluster, server.port, certs.ca_pem, fault=fault)
            exit_code, out, _ = cluster.run("doctor", "-o", "json")
            doc = json.loads(out)
            verdicts = {c["id"]: c["verdict"] for c in doc["checks"]}
            assert {k: v for k, v in verdicts.items() if v != "pass"} == changed
            assert all(c["fix"] for c in doc["checks"] if c["verdict"] != "pass")
            assert (exit_code, doc["exitCode"], doc["ready"]) == (code, code, code == 0)
            if fault == "none":  # the served certificate itself was fetched and verified
                assert (
                    f"verified at 127.0.0.1:{server.port}"
                    in {c["id"]: c for c in doc["checks"]}["ca-bundle/validating"]["detail"]
                )
            _, text, _ = cluster.run("doctor")
            assert text.count("\n") >= len(doc["checks"]) + 1 and "wasp doctor:" in text
    finally:
        server.close()


def test_an_unreachable_cluster_exits_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.json"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "x", "user": {}}], "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
    }))  # fmt: skip
    code, out, err = Cluster(t.cast(t.Any, None), kubeconfig).run("doctor")
    assert (code, out) == (2, "") and "cannot read the cluster" in err
