"""In-cluster configuration: with no ``--kubeconfig``, ``wasp reconcile`` (and ``wasp audit``,
``wasp doctor``) talk to ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` with the
pod's service-account token and CA, as every in-cluster client does.

The API server here is a one-route HTTPS stand-in (no kube-apiserver can be obtained on these
machines); it records what the client sent. The service-account files live where the official
client reads them, which the test points at a temporary directory.
"""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import typing as t
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes.config import incluster_config

from webhook.certs.files import write_bundle
from webhook.certs.generate import generate_bundle
from webhook.kube.api import Api, connect

TOKEN: t.Final = "in-cluster-token-1"


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: t.ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        body = json.dumps(
            {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, Path]]:
    """An HTTPS server for 127.0.0.1 and a service-account directory trusting its CA."""
    bundle = generate_bundle(
        dns_names=["kubernetes.default.svc"], ip_addresses=["127.0.0.1"], now=datetime.now(UTC)
    )
    ca, crt, key = write_bundle(tmp_path, bundle)
    (tmp_path / "token").write_text(TOKEN)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(crt, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.server_address[1]))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "must-not-be-read"))
    _Recorder.seen = []
    try:
        yield server.server_address[1], ca
    finally:
        server.shutdown()
        server.server_close()


def test_without_a_kubeconfig_the_pods_service_account_is_used(cluster: tuple[int, Path]) -> None:
    port, ca = cluster
    api_client = connect(None)
    configuration = api_client.configuration
    assert configuration.host == f"https://127.0.0.1:{port}"
    assert configuration.ssl_ca_cert == str(ca)
    assert Api(api_client).call("GET", "/api")["kind"] == "APIVersions"
    # Verified TLS against the service-account CA, and the token as a bearer credential (the
    # scheme is case-insensitive, RFC 7235; the official client writes it in lower case).
    [(path, authorization)] = _Recorder.seen
    scheme, _, token = (authorization or "").partition(" ")
    assert (path, scheme.lower(), token) == ("/api", "bearer", TOKEN)


def test_a_server_the_service_account_ca_did_not_sign_is_refused(
    cluster: tuple[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = generate_bundle(dns_names=["elsewhere"], now=datetime.now(UTC))
    (tmp_path / "other").mkdir()
    other_ca, _, _ = write_bundle(tmp_path / "other", other)
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(other_ca))
    api = Api(connect(None))
    with pytest.raises(Exception, match="(?i)certificate verify failed"):
        api.call("GET", "/api", timeout=(2.0, 2.0))
    assert _Recorder.seen == []
