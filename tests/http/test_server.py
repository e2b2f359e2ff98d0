"""``wasp serve`` for real: gunicorn subprocesses over TLS, driven like kube-apiserver does."""

from __future__ import annotations

import dataclasses
import gc
import http.client
import signal
import socket
import ssl
import subprocess
import time
import typing as t
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from apiserver import ApiServer, build_review, kubectl_error_line
from conftest import (
    EXAMPLE_POLICIES,
    ServerProcess,
    free_ports,
    job,
    pod_of_job,
    policy_args,
    serve_command,
    serve_env,
    start_server,
    worker_pids,
)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from golden import GoldenCase, discover_cases, error_keys

from webhook import certs
from webhook.policy import PolicySet
from webhook.server import serving
from webhook.server.app import create_app
from webhook.server.serving import WaspServer
from webhook.server.settings import Settings

pytestmark = pytest.mark.slow

Json = dict[str, t.Any]
CASES = discover_cases()


def apiserver(server: ServerProcess, **kw: t.Any) -> ApiServer:
    return ApiServer("127.0.0.1", server.port, server.ca_file, **kw)


def metric(server: ServerProcess, name: str, **labels: str) -> float:
    """A sample from the merged /metrics of every worker (0 when absent)."""
    wanted = name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "")
    for line in server.get("/metrics")[1].splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        if key.startswith(name) and _same_labels(key, wanted):
            return float(value)
    return 0.0


def _same_labels(key: str, wanted: str) -> bool:
    def split(k: str) -> tuple[str, frozenset[str]]:
        base, _, rest = k.partition("{")
        return base, frozenset(filter(None, rest.rstrip("}").split(",")))

    return split(key) == split(wanted)


# ------------------------------------------------------------------------------ golden suite


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case_through_the_apiserver(server: ServerProcess, case: GoldenCase) -> None:
    api = apiserver(server)
    try:
        obj = t.cast(Json, case.obj)
        old = t.cast(Json | None, case.old_obj)
        admission = api.admit(obj, operation="UPDATE" if old is not None else "CREATE", old=old)
    finally:
        api.close()
    if case.valid:
        assert admission.allowed, admission.error
        return
    assert not admission.allowed and admission.error is not None
    assert admission.error.code == 403 and admission.error.reason == "Forbidden"
    causes = [(c["type"], c["field"]) for c in admission.error.causes]
    assert error_keys(causes) == case.expected_errors


def test_kubectl_prints_the_denial_of_a_job_whose_gang_exceeds_its_parallelism(server: ServerProcess) -> None:
    api = apiserver(server, validating_name="vjob.wasp.dev")
    admission = api.admit(job(parallelism=8, min_count=10))
    api.close()
    assert admission.error is not None
    assert kubectl_error_line(admission.error, file="job.yaml") == (
        'Error from server (Forbidden): error when creating "job.yaml": admission webhook "vjob.wasp.dev" '
        "denied the request: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 10: "
        "must be less than or equal to spec.parallelism (8)"
    )


def test_the_mutating_webhook_defaults_jobs_and_stamps_their_pods(mutating_server: ServerProcess) -> None:
    api = apiserver(mutating_server)
    admitted_job = api.admit(job())
    admitted_pod = api.admit(pod_of_job(), dry_run=True)
    api.close()
    assert admitted_job.allowed and admitted_job.object["spec"]["scheduling"] == {
        "schedulingPolicy": {"gang": {}}
    }
    assert admitted_pod.allowed and admitted_pod.object["spec"]["schedulingGroup"]["podGroupName"]


# ------------------------------------------------------------------------------- connections


def test_many_reviews_reuse_one_kept_alive_connection(server: ServerProcess) -> None:
    api = apiserver(server)
    conn = api.connection("/validate")
    for _ in range(100):
        api.post("/validate", build_review(job(min_count=4)))
        first_sock = first_sock if _ else conn.sock  # noqa: F821 - bound on the first pass
        assert conn.sock is first_sock, "the server closed a kept-alive connection"
    api.close()


def test_an_8_mib_body_gets_413(server: ServerProcess) -> None:
    # Like Go's http client (the apiserver's), keep reading the answer when the server stops
    # taking the body: http.client would report the broken pipe instead of the response.
    context = ssl.create_default_context(cafile=str(server.ca_file))
    body = b" " * (8 << 20)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            head = (
                "POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            tls.sendall(head.encode())
            try:
                for start in range(0, len(body), 1 << 16):
                    tls.sendall(body[start : start + (1 << 16)])
            except OSError:
                pass  # the server answered early and stopped reading
            resp = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
            resp.begin()
            answer = orjson.loads(resp.read())
    assert resp.status == 413 and answer["response"]["status"]["code"] == 413


def test_metrics_count_every_review_across_both_workers(server: ServerProcess) -> None:
    # Denials: each one is logged at the default level (an allowed review only at debug).
    labels = {"endpoint": "validate", "kind": "Job", "operation": "CREATE", "outcome": "denied"}
    before = metric(server, "wasp_admission_requests_total", **labels)
    count_before = metric(server, "wasp_admission_duration_seconds_count", endpoint="validate")
    for _ in range(40):  # a fresh connection each: the kernel spreads them over the workers
        api = apiserver(server)
        api.post("/validate", build_review(job(min_count=10)))
        api.close()
    deadline = time.monotonic() + 10
    while metric(server, "wasp_admission_requests_total", **labels) < before + 40:
        assert time.monotonic() < deadline, "the workers never published their counts"
        time.sleep(0.2)
    assert metric(server, "wasp_admission_requests_total", **labels) == before + 40
    assert metric(server, "wasp_admission_duration_seconds_count", endpoint="validate") >= count_before + 40
    assert metric(server, "wasp_admission_duration_seconds_bucket", endpoint="validate", le="+Inf") >= (
        count_before + 40
    )
    assert metric(server, "wasp_admission_in_flight_requests") == 0
    assert metric(server, "wasp_certificate_expiry_timestamp_seconds") > time.time()
    reviews = [orjson.loads(line) for line in server.stderr().splitlines() if '"msg":"review"' in line]
    assert len(reviews) >= 40
    assert len({r["pid"] for r in reviews}) == 2, "reuse_port spreads fresh connections over both workers"


def test_probes_answer_on_the_plain_http_port(server: ServerProcess) -> None:
    assert server.get("/healthz") == (200, "ok\n")
    assert server.get("/readyz") == (200, "ok\n")


# ----------------------------------------------------------------------- partial requests


def open_request(server: ServerProcess, context: ssl.SSLContext, review: Json) -> tuple[ssl.SSLSocket, bytes]:
    """Send the headers and half the body of a review; return the socket and the rest."""
    body = orjson.dumps(review)
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=15)
    tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
    head = (
        f"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    half = len(body) // 2
    tls.sendall(head + body[:half])
    return tls, body[half:]


def finish_request(tls: ssl.SSLSocket, rest: bytes) -> tuple[int, Json]:
    tls.sendall(rest)
    resp = http.client.HTTPResponse(tls)  # type: ignore[arg-type]
    resp.begin()
    answer = orjson.loads(resp.read())
    tls.close()
    return resp.status, answer


def served_certificate(server: ServerProcess) -> bytes:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        with context.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def test_a_rotated_certificate_is_served_without_restart_or_failing_in_flight_reviews(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--workers", "1")
    try:
        old_context = ssl.create_default_context(cafile=str(server.ca_file))
        pid_before = server.proc.pid
        tls, rest = open_request(server, old_context, build_review(job(min_count=4), uid="in-flight"))
        before = served_certificate(server)
        now = datetime.now(UTC)
        bundle = certs.generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"], now=now)
        new_ca = tmp_path / "new-ca.crt"
        new_ca.write_bytes(bundle.ca_pem)
        certs.write_bundle(server.state_dir, bundle)  # what a Secret volume update does
        deadline = time.monotonic() + 10
        while served_certificate(server) == before:
            assert time.monotonic() < deadline, "the rotated certificate was not picked up"
            time.sleep(0.2)
        status, answer = finish_request(tls, rest)
        assert status == 200 and answer["response"] == {"uid": "in-flight", "allowed": True}
        fresh = ApiServer("127.0.0.1", server.port, new_ca)
        assert fresh.admit(job(min_count=4), mutate=False).allowed
        fresh.close()
        # A broken replacement (the key of another pair) is refused; the good pair keeps serving.
        other = certs.generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"], now=now)
        (server.state_dir / "tls.key").write_bytes(other.key_pem)
        deadline = time.monotonic() + 10
        while metric(server, "wasp_certificate_reloads_total", result="rejected") < 1:
            served_certificate(server)  # the files are looked at when connections arrive
            assert time.monotonic() < deadline, "the broken pair was not noticed"
            time.sleep(0.3)
        fresh = ApiServer("127.0.0.1", server.port, new_ca)
        assert fresh.admit(job(min_count=4), mutate=False).allowed
        fresh.close()
        assert server.get("/readyz")[0] == 200
        assert server.proc.pid == pid_before and server.proc.poll() is None
        assert "not loading the changed serving certificate" in server.stderr()
    finally:
        server.stop()


def test_sigterm_lets_the_in_flight_review_finish_and_exits_0(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--workers", "1")
    context = ssl.create_default_context(cafile=str(server.ca_file))
    tls, rest = open_request(server, context, build_review(job(min_count=10), uid="last"))
    time.sleep(0.2)  # the worker is now reading the body
    server.proc.terminate()
    time.sleep(0.5)
    status, answer = finish_request(tls, rest)
    assert status == 200 and answer["response"]["uid"] == "last" and answer["response"]["allowed"] is False
    assert server.proc.wait(10) == 0
    assert "Traceback" not in server.stderr()


# -------------------------------------------------------------------------- refusing to start


def _pair(tmp: Path, *, now: datetime, valid_for: timedelta, key_of_other: bool = False) -> tuple[Path, Path]:
    ca = certs.generate_ca(common_name="test-ca", now=now)
    served = certs.generate_serving_cert(
        ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"], now=now, valid_for=valid_for
    )
    key_pem = served.key_pem
    if key_of_other:
        key_pem = certs.generate_serving_cert(ca, dns_names=["localhost"], now=now).key_pem
    crt, key = tmp / "tls.crt", tmp / "tls.key"
    crt.write_bytes(served.cert_pem)
    key.write_bytes(key_pem)
    return crt, key


@pytest.mark.parametrize(
    ("when", "key_of_other", "expected"),
    [(timedelta(days=-30), False, "expired"), (timedelta(0), True, "does not belong")],
    ids=["an expired pair", "a mismatched pair"],
)
def test_serve_refuses_to_start_on_an_unusable_pair(
    tmp_path: Path, when: timedelta, key_of_other: bool, expected: str
) -> None:
    crt, key = _pair(
        tmp_path, now=datetime.now(UTC) + when, valid_for=timedelta(days=1), key_of_other=key_of_other
    )
    done = subprocess.run(
        serve_command("--cert-file", str(crt), "--key-file", str(key), "--port", "1", "--metrics-port", "2"),
        env=serve_env(), cwd=tmp_path, capture_output=True, timeout=30,
    )  # fmt: skip
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert expected in stderr and str(crt) in stderr
    assert "Traceback" not in stderr


# ---------------------------------------------------------------------- client certificates


def _client_pki(tmp: Path) -> tuple[Path, tuple[Path, Path], tuple[Path, Path]]:
    """A client CA, a client certificate it signed, and one signed by a stranger."""
    now = datetime.now(UTC)

    def issue(
        issuer_key: ec.EllipticCurvePrivateKey | None, issuer: x509.Name | None, cn: str, is_ca: bool
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:  # noqa: E501
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer or name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        )
        if not is_ca:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
            )
        return key, builder.sign(issuer_key or key, hashes.SHA256())

    def write(name: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> tuple[Path, Path]:
        crt, pem = tmp / f"{name}.crt", tmp / f"{name}.key"
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pem.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )  # noqa: E501
        return crt, pem

    ca_key, ca_cert = issue(None, None, "client-ca", True)
    ca_file, _ = write("client-ca", ca_key, ca_cert)
    client = write("apiserver", *issue(ca_key, ca_cert.subject, "kube-apiserver", False))
    stranger_key, stranger_ca = issue(None, None, "stranger-ca", True)
    stranger = write("stranger", *issue(stranger_key, stranger_ca.subject, "stranger", False))
    return ca_file, client, stranger


def test_client_certificates_are_required_with_a_client_ca(tmp_path: Path) -> None:
    ca_file, client, stranger = _client_pki(tmp_path)
    server = start_server(tmp_path, "--client-ca-file", str(ca_file), "--workers", "1")
    try:
        trusted = ApiServer("127.0.0.1", server.port, server.ca_file, client_cert=client)
        assert trusted.admit(job(min_count=4), mutate=False).allowed
        trusted.close()
        for cert in (None, stranger):
            api = ApiServer("127.0.0.1", server.port, server.ca_file, client_cert=cert)
            with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
                api.post("/validate", build_review(job(min_count=4)))
            api.close()
        assert server.get("/readyz")[0] == 200
    finally:
        assert server.stop() == 0


def test_the_dev_command_prints_a_working_curl_line(tmp_path: Path) -> None:
    server = start_server(tmp_path, *policy_args(*EXAMPLE_POLICIES), "--workers", "1")
    try:
        example = orjson.loads((server.state_dir / "example-review.json").read_bytes())
        api = apiserver(server)
        answer = api.post("/validate", example)
        api.close()
        assert answer["response"]["allowed"] is False
    finally:
        server.stop()


def test_a_replaced_workers_metrics_and_log_lines_outlive_it(tmp_path: Path) -> None:
    # Each review is counted and logged as it is answered; a graceful worker replacement
    # (SIGHUP) must lose neither counts nor review lines.
    server = start_server(tmp_path, "--workers", "1", "--log-level", "debug")  # a line for every review
    try:
        labels = {"endpoint": "validate", "kind": "Job", "operation": "CREATE", "outcome": "allowed"}
        api = apiserver(server)
        for _ in range(7):
            api.post("/validate", build_review(job(min_count=4)))
        api.close()
        assert metric(server, "wasp_admission_requests_total", **labels) == 7
        old = worker_pids(server)
        server.proc.send_signal(signal.SIGHUP)  # gunicorn: new worker, old one exits gracefully
        deadline = time.monotonic() + 20
        while worker_pids(server) == old:
            assert time.monotonic() < deadline, server.stderr()
            time.sleep(0.2)
        assert metric(server, "wasp_admission_requests_total", **labels) == 7
        assert metric(server, "wasp_admission_duration_seconds_count", endpoint="validate") == 7
        reviews = [line for line in server.stderr().splitlines() if '"msg":"review"' in line]
        assert len(reviews) == 7
        server.wait_ready()  # and the new worker serves
        api = apiserver(server)
        assert api.post("/validate", build_review(job(min_count=4)))["response"]["allowed"]
        api.close()
    finally:
        assert server.stop() == 0


def test_workers_are_forked_with_what_the_arbiter_loaded_frozen(
    settings: Settings, policies: PolicySet
) -> None:
    # pre_fork moves the modules, policies and schemas into the collector's permanent
    # generation, so a worker's full collections never walk (or dirty the shared pages of) them.
    server = WaspServer(settings, create_app(settings, policies=policies))
    gc.unfreeze()
    try:
        server.cfg.pre_fork(None, None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_readiness_is_a_started_worker_and_a_listening_port_without_any_tls(
    settings: Settings, policies: PolicySet, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The arbiter answers /readyz and forks workers: no handshake of its own (OpenSSL's locks
    # held across a fork hung workers), and a busy worker that still accepts stays ready.
    port, metrics_port = free_ports(2)
    settings = dataclasses.replace(settings, bind_address="127.0.0.1", port=port, metrics_port=metrics_port)
    server = WaspServer(settings, create_app(settings, policies=policies))

    def no_tls(*args: object, **kwargs: object) -> t.NoReturn:
        raise AssertionError("readiness must not handshake")

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", no_tls)
    server.cfg.when_ready(None)
    url = f"http://127.0.0.1:{metrics_port}/readyz"
    try:
        with pytest.raises(urllib.error.HTTPError) as unready:
            urllib.request.urlopen(url, timeout=5)
        assert unready.value.code == 503
        assert b"no worker has started" in unready.value.read()
        serving._SHARED[1] = 1
        with socket.create_server(("127.0.0.1", port)):  # a worker listens, however busy
            with urllib.request.urlopen(url, timeout=5) as resp:
                assert resp.status == 200
    finally:
        serving._SHARED[1] = 0
        assert server.probes is not None
        server.probes.stop()


@pytest.mark.parametrize("which", ["--port", "--metrics-port"])
def test_serve_refuses_a_port_something_else_listens_on(tmp_path: Path, which: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        port, metrics_port = free_ports(2)
        ports = {"--port": str(port), "--metrics-port": str(metrics_port), which: str(busy)}
        started = time.monotonic()
        done = subprocess.run(
            serve_command("--dev", "--state-dir", str(tmp_path / "state"), *[a for kv in ports.items() for a in kv]),
            env=serve_env(), cwd=tmp_path, capture_output=True, timeout=60,
        )  # fmt: skip
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert f"{which} {busy}: cannot listen on 127.0.0.1:{busy}" in stderr
    assert "Traceback" not in stderr
    assert time.monotonic() - started < 30  # refused up front, not after gunicorn's bind retries
