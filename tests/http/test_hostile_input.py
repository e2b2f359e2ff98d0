"""Hostile input in-process (issue 17 items 3–6): every answer an AdmissionReview with a 4xx,
echoed and logged values capped, errors capped with a count, and the rules at the edges."""

from __future__ import annotations

import logging
import ssl
import typing as t
from pathlib import Path

import orjson
import pytest
from apiserver import build_review
from conftest import job
from flask import Flask
from flask.testing import FlaskClient
from gunicorn.http import errors as gerrors

from webhook.admission.echo import ECHO_LIMIT, cut, shown
from webhook.admission.response import MAX_REPORTED_ERRORS, denied, warned
from webhook.certs.serving import DEFAULT_CIPHER_SUITES, TlsOptions, new_server_context, peer_allowed
from webhook.server import edge, metrics
from webhook.server.logs import JsonFormatter, ReviewEntry
from webhook.server.probes import create_probe_app
from webhook.server.settings import Settings
from webhook.vocab.field import FieldPath, Key, forbidden, invalid

Json = dict[str, t.Any]
JSON = {"Content-Type": "application/json"}
FIVE_MIB = "x" * (5 << 20)


def post(client: FlaskClient, path: str, body: Json | bytes) -> tuple[int, Json]:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    resp = client.post(path, data=data, headers=JSON)
    answer = orjson.loads(resp.data)
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    return resp.status_code, answer["response"]


def with_request(**fields: object) -> Json:
    review = build_review(job(min_count=4), uid="hostile-1")
    review["request"].update(fields)
    return review


# ------------------------------------------------------------- no 500: a 4xx with the uid


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"operation": []}, "request.operation an array is not one of"),
        ({"operation": {}}, "request.operation an object is not one of"),
        ({"operation": 7}, "request.operation 7 is not one of"),
        ({"operation": None}, "request.operation null is not one of"),
        ({"operation": "PATCH"}, "request.operation 'PATCH' is not one of"),
        ({"operation": "UPDATE", "oldObject": None}, "request.oldObject is required on UPDATE"),
        ({"kind": []}, "request.kind must be an object"),
        ({"object": []}, "request.object must be an object or null, not an array"),
    ],
    ids=[
        "an operation that is an array is a 400, not a TypeError",
        "an operation that is an object is a 400, not a TypeError",
        "an operation that is a number is a 400",
        "an operation that is null is a 400",
        "an unknown operation is a 400",
        "an UPDATE without oldObject is a 400: the update rules could not run",
        "a kind that is an array is a 400",
        "an object that is an array is a 400",
    ],
)
def test_a_bad_request_field_is_a_400_that_echoes_the_uid(
    client: FlaskClient, fields: Json, expected: str
) -> None:
    status, response = post(client, "/validate", with_request(**fields))
    assert status == 400 and response["uid"] == "hostile-1" and response["allowed"] is False
    assert response["status"]["reason"] == "BadRequest" and expected in response["status"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [("GET", "/nope", 404), ("GET", "/validate", 405), ("PUT", "/mutate", 405)],
    ids=["an unknown path is a 404 AdmissionReview", "GET on /validate is a 405 AdmissionReview",
         "PUT on /mutate is a 405 AdmissionReview"],
)  # fmt: skip
def test_routing_errors_answer_an_admission_review(
    client: FlaskClient, method: str, path: str, code: int
) -> None:
    resp = client.open(path, method=method)
    answer = orjson.loads(resp.data)
    assert resp.status_code == code and resp.content_type == "application/json"
    assert answer["kind"] == "AdmissionReview" and answer["response"]["status"]["code"] == code


def test_a_bug_outside_the_review_handlers_is_an_internal_error_answer_logged_and_counted(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    def boom() -> None:
        raise RuntimeError("a bug")

    app.add_url_rule("/boom", "boom", boom)
    before = _internal_errors("http")
    with caplog.at_level(logging.ERROR, logger="wasp.review"):
        resp = app.test_client().get("/boom")
    answer = orjson.loads(resp.data)
    assert resp.status_code == 500 and answer["response"]["status"]["reason"] == "InternalError"
    assert _internal_errors("http") == before + 1
    assert any(r.exc_info and "a bug" in str(r.exc_info[1]) for r in caplog.records)


def _internal_errors(endpoint: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("wasp_internal_errors_total", {"endpoint": endpoint}) or 0.0


# ------------------------------------------------------------------ echoed values capped


@pytest.mark.parametrize(
    "review",
    [
        {**build_review(job(), uid="u"), "apiVersion": FIVE_MIB},
        {**build_review(job(), uid="u"), "kind": FIVE_MIB},
        with_request(operation=FIVE_MIB),
        with_request(uid=FIVE_MIB),
    ],
    ids=["a 5 MiB apiVersion", "a 5 MiB kind", "a 5 MiB operation", "a 5 MiB uid"],
)
def test_a_huge_value_is_not_echoed_whole_in_a_400(client: FlaskClient, review: Json) -> None:
    resp = client.post("/validate", data=orjson.dumps(review), headers=JSON)
    assert resp.status_code == 400 and len(resp.data) < 2048, resp.data[:300]
    assert "characters" in orjson.loads(resp.data)["response"]["status"]["message"]


def test_a_denial_shows_a_huge_bad_value_cut_in_the_message_and_in_its_cause() -> None:
    error = invalid(FieldPath.parse("metadata.name"), FIVE_MIB, "must be short: " + FIVE_MIB)
    status = denied("u", [error])["status"]
    assert len(status["message"]) < 6 * ECHO_LIMIT
    assert len(status["details"]["causes"][0]["message"]) < 6 * ECHO_LIMIT
    assert "more characters cut" in status["message"]


@pytest.mark.parametrize(
    "field",
    [
        pytest.param(FieldPath.of("spec", "scheduling", FIVE_MIB), id="an unknown field's 5 MiB name"),
        pytest.param(FieldPath.of("metadata", "annotations", Key(FIVE_MIB)), id="a 5 MiB map key"),
    ],
)
def test_a_denial_shows_a_huge_field_name_cut_in_the_message_and_in_its_cause(
    field: FieldPath, client: FlaskClient
) -> None:
    """The path was echoed whole, twice (message and cause): a 6 MB answer for a 3 MiB key."""
    for answer in (
        denied("u", [forbidden(field, "unknown field")]),
        warned("u", [forbidden(field, "unknown field")]),
    ):
        text = orjson.dumps(answer)
        assert len(text) < 8 * ECHO_LIMIT and b"more characters cut" in text
    unknown = {"schedulingPolicy": {"gang": {"minCount": 2}}, FIVE_MIB: 1}
    review = build_review({**job(), "spec": {**job()["spec"], "scheduling": unknown}}, uid="u")
    resp = client.post("/validate", data=orjson.dumps(review), headers=JSON)
    assert resp.status_code == 200 and len(resp.data) < 16 * ECHO_LIMIT, len(resp.data)


def test_a_denial_reports_at_most_the_error_cap_and_says_how_many_were_left_out() -> None:
    errors = [invalid(FieldPath.parse(f"spec.x[{i}]"), i, "bad") for i in range(MAX_REPORTED_ERRORS + 50)]
    status = denied("u", errors)["status"]
    assert len(status["details"]["causes"]) == MAX_REPORTED_ERRORS
    assert status["message"].endswith("(and 50 more errors not shown)")


@pytest.mark.parametrize(
    "field", ["uid", "kind", "namespace", "name", "operation", "error"],
    ids=lambda f: f"a 5 MiB {f} makes a short log line",
)  # fmt: skip
def test_a_review_log_line_caps_every_client_string(field: str) -> None:
    values: dict[str, t.Any] = dict(
        endpoint="validate", uid="u", kind="Job", namespace="ns", name="n", operation="CREATE", dry_run=False,
        outcome="malformed", pid=1, latency_ms=0.1, code=400, error="e",
    )  # fmt: skip
    values[field] = FIVE_MIB
    record = logging.makeLogRecord({"msg": "review", "levelno": logging.INFO, "levelname": "INFO",
                                    "fields": ReviewEntry(**values).fields()})  # fmt: skip
    line = JsonFormatter().format(record)  # what the handler writes
    assert len(line) < 2048 and "more characters cut" in line


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("short", "'short'"),
        ("y" * (ECHO_LIMIT + 10), repr("y" * ECHO_LIMIT + "… (10 more characters cut)")),
        ([1, 2], "an array"),
        ({"a": 1}, "an object"),
        (None, "null"),
        (True, "true"),
        (12, "12"),
    ],
    ids=["a short string is quoted whole", "a long string is cut and says by how much",
         "an array is shown by its type", "an object is shown by its type", "null is null",
         "a boolean is JSON", "a number is itself"],
)  # fmt: skip
def test_a_client_value_is_shown_capped(value: object, expected: str) -> None:
    assert shown(value) == expected
    assert len(cut("z" * 10_000)) < ECHO_LIMIT + 40


# --------------------------------------------------------- what gunicorn cannot parse


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (gerrors.InvalidRequestLine("GARBAGE"), 400),
        (gerrors.InvalidChunkSize(b"zz"), 400),
        (gerrors.LimitRequestLine(9000, 4094), 414),
        (gerrors.LimitRequestHeaders("too many"), 431),
        (gerrors.UnsupportedTransferCoding("gzip"), 400),
        (ssl.SSLError("bad record"), 400),
        (RuntimeError("a bug"), 500),
    ],
    ids=["a bad request line is a 400", "a bad chunk size is a 400", "a long request line is a 414",
         "too many headers is a 431", "an unsupported transfer coding is a 400, not a 501",
         "a TLS error on a request is a 400", "anything else is a bug: 500 InternalError"],
)  # fmt: skip
def test_the_worker_answers_what_gunicorn_cannot_parse_with_an_admission_review(
    exc: BaseException, code: int
) -> None:
    got, message = edge.classify(exc)
    raw = edge.response_bytes(got, message)
    head, _, body = raw.partition(b"\r\n\r\n")
    answer = orjson.loads(body)
    assert got == code and head.startswith(f"HTTP/1.1 {code} ".encode()) and b"Connection: close" in head
    assert answer["response"]["status"]["code"] == code
    assert (answer["response"]["status"]["reason"] == "InternalError") == (code == 500)


# ------------------------------------------------------------------------- TLS and mTLS


@pytest.mark.parametrize(
    ("cert", "allowed", "expected"),
    [
        ({"subject": ((("commonName", "kube-apiserver"),),)}, {"kube-apiserver"}, True),
        ({"subject": ((("commonName", "x"),),), "subjectAltName": (("DNS", "apiserver.local"),)},
         {"apiserver.local"}, True),
        ({"subject": ((("commonName", "kubelet"),),)}, {"kube-apiserver"}, False),
        (None, {"kube-apiserver"}, False),
    ],
    ids=["the common name matches", "a DNS subjectAltName matches", "another name is refused",
         "no certificate is refused"],
)  # fmt: skip
def test_client_allowed_names_match_the_cn_or_a_san(
    cert: Json | None, allowed: set[str], expected: bool
) -> None:
    assert peer_allowed(cert, allowed) is expected


def test_tls_1_2_offers_only_aead_suites_by_default(settings: Settings) -> None:
    context = new_server_context(settings.cert_file, settings.key_file, None, TlsOptions())
    tls12 = [c for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 and all(c["aead"] for c in tls12), [c["name"] for c in tls12 if not c["aead"]]
    assert TlsOptions(cipher_suites=DEFAULT_CIPHER_SUITES).problems() == []


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (TlsOptions(min_version="VersionTLS11"), "--tls-min-version"),
        (TlsOptions(cipher_suites=("TLS_NOPE",)), "--tls-cipher-suites: unknown TLS_NOPE"),
        (TlsOptions(cipher_suites=()), "--tls-cipher-suites is empty"),
    ],
    ids=["TLS 1.1 is refused", "an unknown suite is refused", "no suite at all is refused"],
)
def test_tls_settings_are_checked_at_start_up(options: TlsOptions, problem: str) -> None:
    assert any(problem in p for p in options.problems())


# --------------------------------------------------------------------------- the rest


def test_an_unwritable_temp_dir_is_a_start_up_problem(settings: Settings, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    problems = Settings(settings.cert_file, settings.key_file, temp_dir=blocked / "sub").temp_dir_problems()
    assert len(problems) == 1 and "--temp-dir" in problems[0]


def test_the_probe_port_names_no_python_version() -> None:
    resp = create_probe_app(lambda: []).test_client().get("/healthz")
    assert resp.headers["Server"] == "wasp"


def test_connection_closes_are_counted_by_reason() -> None:
    metrics.CONNECTIONS_CLOSED.labels("head_timeout").inc()
    from prometheus_client import REGISTRY

    assert (REGISTRY.get_sample_value("wasp_connections_closed_total", {"reason": "head_timeout"}) or 0) >= 1
