"""`wasp certs rotate` (the chart's CronJob) against a fake apiserver, with the real client.

The fake serves exactly the calls the rotator's RBAC allows: get/update of one Secret and
get/patch of the two webhook configurations, as rendered by the chart. Anything else is 404
(or 403 for a verb the Role does not grant), so a call outside the RBAC fails the test.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import typing as t
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonpatch
import pytest
import yaml
from click.testing import CliRunner

from tests.chart.conftest import Rendering
from webhook.certs import not_after, problems
from webhook.cli.certs_rotate import bundle_patch

Json = dict[str, t.Any]
SECRET_PATH: t.Final = "/api/v1/namespaces/wasp-system/secrets/wasp-tls"
CONFIG_PATHS: t.Final = {
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/wasp-validating": "validating",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/wasp-mutating": "mutating",
}


class FakeApi:
    def __init__(self, rendering: Rendering) -> None:
        self.objects: dict[str, Json] = {SECRET_PATH: copy.deepcopy(rendering.find("Secret", "-tls"))}
        self.objects[SECRET_PATH]["metadata"]["resourceVersion"] = "1"
        for path, kind in CONFIG_PATHS.items():
            name = (
                "ValidatingWebhookConfiguration" if kind == "validating" else "MutatingWebhookConfiguration"
            )
            self.objects[path] = copy.deepcopy(rendering.find(name))
        self.calls: list[tuple[str, str, str]] = []  # method, path, content type

    def handle(self, method: str, path: str, content_type: str, body: bytes) -> tuple[int, Json]:
        self.calls.append((method, path, content_type))
        obj = self.objects.get(path)
        if obj is None:
            return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}
        allowed = {"GET", "PUT"} if path == SECRET_PATH else {"GET", "PATCH"}
        if method not in allowed:
            return 403, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403}
        if method == "PUT":
            new = json.loads(body)
            if new["metadata"].get("resourceVersion") != obj["metadata"]["resourceVersion"]:
                return 409, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 409}
            new["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
            self.objects[path] = obj = new
        if method == "PATCH":
            assert content_type == "application/json-patch+json"
            self.objects[path] = obj = jsonpatch.apply_patch(obj, json.loads(body))
        return 200, obj


@pytest.fixture
def api(default: Rendering, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> t.Iterator[FakeApi]:
    yield from serve_fake(default, tmp_path, monkeypatch)


@pytest.fixture
def api_with_user_policies(
    renderings: dict[str, Rendering], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> t.Iterator[FakeApi]:
    # Both webhook configurations have entries here (the mutating one has none by default).
    yield from serve_fake(renderings["user policies beside the built-in ones"], tmp_path, monkeypatch)


def serve_fake(rendering: Rendering, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> t.Iterator[FakeApi]:
    fake = FakeApi(rendering)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, answer = fake.handle(self.command, self.path.split("?")[0], self.headers.get("Content-Type", ""),
                                         body)  # fmt: skip
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_PUT = do_PATCH = _serve

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "fake", "user": {"token": "rotator"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
    }  # fmt: skip
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    yield fake
    server.shutdown()
    server.server_close()


def cronjob_args(rendering: Rendering, **overrides: str) -> list[str]:
    args = list(
        rendering.find("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    for key, value in overrides.items():
        args = [a for a in args if not a.startswith(f"--{key}=")] + [f"--{key}={value}"]
    return args


def run_wasp(args: list[str]) -> tuple[int, str]:
    from webhook.cli.main import cli

    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.output


def secret_data(api: FakeApi) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in api.objects[SECRET_PATH]["data"].items()}


def bundles(api: FakeApi) -> set[bytes]:
    return {
        base64.b64decode(e["clientConfig"]["caBundle"])
        for path in CONFIG_PATHS
        for e in api.objects[path]["webhooks"]
    }


def test_with_nothing_due_the_rotator_only_reads(api: FakeApi, default: Rendering) -> None:
    code, _ = run_wasp(cronjob_args(default))
    assert code == 0
    assert {m for m, _, _ in api.calls} == {"GET"}


def test_a_renewal_window_renews_the_serving_certificate_and_keeps_the_bundles(
    api: FakeApi, default: Rendering
) -> None:
    before = secret_data(api)
    days_left = (not_after(before["tls.crt"]) - not_after(before["tls.crt"]).now(tz=None).astimezone()).days
    code, _ = run_wasp(cronjob_args(default, **{"renew-before-days": str(days_left + 10)}))
    assert code == 0
    after = secret_data(api)
    assert after["tls.crt"] != before["tls.crt"] and after["ca.crt"] == before["ca.crt"]
    assert bundles(api) == {after["ca-bundle.crt"]}
    assert problems(after["tls.crt"], after["tls.key"], now=not_after(before["tls.crt"]) - timedelta(days=1),
                    ca_pem=after["ca-bundle.crt"], hostnames=["wasp.wasp-system.svc"]) == []  # fmt: skip
    methods = [(m, p) for m, p, _ in api.calls if m != "GET"]
    assert [m for m, _ in methods] == ["PUT"]  # same CA: the caBundles were already right


def test_a_ca_near_its_end_is_staged_into_both_caBundles_before_the_secret_changes(
    api: FakeApi, default: Rendering
) -> None:
    code, _ = run_wasp(cronjob_args(default, **{"ca-validity-days": "3650", "serving-validity-days": "365",
                                                "renew-before-days": "3300"}))  # fmt: skip
    assert code == 0
    after = secret_data(api)
    assert after["ca-bundle.crt"].count(b"BEGIN CERTIFICATE") == 2 and "next-ca.crt" in after
    assert bundles(api) == {after["ca-bundle.crt"]}
    writes = [(m, CONFIG_PATHS.get(p, "secret")) for m, p, _ in api.calls if m != "GET"]
    # webhooks first, then the Secret; the default mutating configuration has no entries
    assert writes == [("PATCH", "validating"), ("PUT", "secret")]


def test_bundle_patch_touches_only_entries_that_differ() -> None:
    entries = [
        {"name": "a.wasp.dev", "clientConfig": {"caBundle": base64.b64encode(b"X").decode()}},
        {"name": "b.wasp.dev", "clientConfig": {}},
    ]
    assert [op["path"] for op in bundle_patch(entries, b"X")] == [
        "/webhooks/1/name",
        "/webhooks/1/clientConfig/caBundle",
    ]


def test_a_staged_ca_reaches_every_entry_of_both_webhook_configurations(
    api_with_user_policies: FakeApi, renderings: dict[str, Rendering]
) -> None:
    rendering = renderings["user policies beside the built-in ones"]
    code, _ = run_wasp(cronjob_args(rendering, **{"renew-before-days": "3300"}))
    assert code == 0
    after = secret_data(api_with_user_policies)
    assert after["ca-bundle.crt"].count(b"BEGIN CERTIFICATE") == 2
    entries = [e for path in CONFIG_PATHS for e in api_with_user_policies.objects[path]["webhooks"]]
    assert len(entries) > 4
    assert bundles(api_with_user_policies) == {after["ca-bundle.crt"]}
    writes = [(m, CONFIG_PATHS.get(p, "secret")) for m, p, _ in api_with_user_policies.calls if m != "GET"]
    assert writes == [("PATCH", "validating"), ("PATCH", "mutating"), ("PUT", "secret")]
