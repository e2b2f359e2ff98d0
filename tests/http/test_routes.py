"""The Flask edge in-process: status codes, bodies, caps, uid round trip, probes, errors."""

from __future__ import annotations

import base64
import io
import logging
import threading
import typing as t
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jsonpatch
import orjson
import pytest
from apiserver import build_review
from conftest import job, pod_of_job
from flask.testing import FlaskClient

from webhook import certs
from webhook.admission import handler
from webhook.admission.response import limit_warnings
from webhook.admission.review import MAX_BODY_BYTES
from webhook.certs.serving import CertReloader
from webhook.policy import PolicySet
from webhook.server import metrics
from webhook.server.app import create_app, state_of
from webhook.server.probes import create_probe_app
from webhook.server.settings import Settings

Json = dict[str, t.Any]
JSON = {"Content-Type": "application/json"}


def post(client: FlaskClient, path: str, review: Json | bytes, **kw: t.Any) -> tuple[int, Json, str]:
    body = review if isinstance(review, bytes) else orjson.dumps(review)
    headers = kw.pop("headers", JSON)
    resp = client.post(path, data=body, headers=headers, **kw)
    return resp.status_code, orjson.loads(resp.data), resp.content_type


def response_of(answer: Json) -> Json:
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response: Json = answer["response"]
    return response


def sample(name: str, labels: dict[str, str]) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


# --------------------------------------------------------------------------- admission answers


def test_a_valid_job_is_allowed_and_the_uid_is_echoed(client: FlaskClient) -> None:
    review = build_review(job(min_count=4), uid="uid-1")
    status, answer, content_type = post(client, "/validate", review)
    assert (status, content_type) == (200, "application/json")
    assert response_of(answer) == {"uid": "uid-1", "allowed": True}


def test_an_invalid_job_is_denied_with_forbidden_and_one_cause_per_error(client: FlaskClient) -> None:
    status, answer, _ = post(client, "/validate", build_review(job(min_count=10), uid="uid-2"))
    response = response_of(answer)
    assert status == 200 and response["uid"] == "uid-2" and response["allowed"] is False
    field = "spec.scheduling.schedulingPolicy.gang.minCount"
    body = "Invalid value: 10: must be less than or equal to spec.parallelism (8)"
    assert response["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": f"{field}: {body}",
        # "reason" is metav1.StatusCause's key for the type; "type" repeats it (docs/decisions.md §15).
        "details": {
            "causes": [
                {"reason": "FieldValueInvalid", "type": "FieldValueInvalid", "field": field, "message": body}
            ]
        },
    }
    assert "patch" not in response and "patchType" not in response


def test_dry_run_gets_the_same_verdict(client: FlaskClient) -> None:
    wet = response_of(post(client, "/validate", build_review(job(min_count=10), uid="u"))[1])
    dry = response_of(post(client, "/validate", build_review(job(min_count=10), uid="u", dry_run=True))[1])
    assert dry == wet


@pytest.mark.parametrize(
    ("obj", "operation"),
    [
        ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}, "CREATE"),
        (job(min_count=10), "DELETE"),
        (job(min_count=10), "CONNECT"),
    ],
    ids=["a kind no policy governs", "a delete", "a connect"],
)
def test_what_wasp_does_not_govern_is_allowed_without_work(
    client: FlaskClient, obj: Json, operation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in ("/validate", "/mutate"):
        status, answer, _ = post(client, path, build_review(obj, operation=operation, uid="u"))
        assert status == 200 and response_of(answer) == {"uid": "u", "allowed": True}


def test_warnings_are_returned_with_an_allowed_answer(client: FlaskClient, policies: PolicySet) -> None:
    gated = create_app(
        Settings(cert_file=Path("unused"), key_file=Path("unused")),
        policies=PolicySet(policies.policies, gates=policies.gates.parse("WorkloadWithJob=false")),
        reloader=CertReloader(Path("unused"), Path("unused")),
    ).test_client()
    response = response_of(post(gated, "/validate", build_review(job(min_count=4), uid="u"))[1])
    assert response["allowed"] is True
    assert any("WorkloadWithJob" in w for w in response["warnings"])
    assert not any(w.lower().startswith("warning:") for w in response["warnings"])


# ----------------------------------------------------------------------------------- mutation


def decode_patch(response: Json) -> list[Json]:
    assert response["patchType"] == "JSONPatch"
    ops: list[Json] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


def test_a_job_without_scheduling_gets_the_default_as_a_json_patch(client: FlaskClient) -> None:
    original = job()
    response = response_of(post(client, "/mutate", build_review(original, uid="m1"))[1])
    assert response["uid"] == "m1" and response["allowed"] is True
    patched = jsonpatch.apply_patch(original, decode_patch(response))
    assert patched["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}


def test_a_pod_of_a_governed_job_gets_its_scheduling_group(client: FlaskClient) -> None:
    pod = pod_of_job()
    response = response_of(post(client, "/mutate", build_review(pod, uid="m2", dry_run=True))[1])
    patched = jsonpatch.apply_patch(pod, decode_patch(response))
    assert patched["spec"]["schedulingGroup"]["podGroupName"]


def test_nothing_to_change_answers_with_neither_patch_nor_patch_type(client: FlaskClient) -> None:
    response = response_of(post(client, "/mutate", build_review(job(min_count=4), uid="m3"))[1])
    assert response == {"uid": "m3", "allowed": True}


def test_updates_are_not_mutated(client: FlaskClient) -> None:
    review = build_review(job(), operation="UPDATE", old=job(), uid="m4")
    assert response_of(post(client, "/mutate", review)[1]) == {"uid": "m4", "allowed": True}


# -------------------------------------------------------------------------- malformed requests

GOOD = build_review(job(min_count=4), uid="known-uid")


def _without(key: str) -> bytes:
    review = orjson.loads(orjson.dumps(GOOD))
    review["request"].pop(key)
    return orjson.dumps(review)


def _with(**request: object) -> bytes:
    review = orjson.loads(orjson.dumps(GOOD))
    review["request"].update(request)
    return orjson.dumps(review)


def _review_with(**top: object) -> bytes:
    review = orjson.loads(orjson.dumps(GOOD))
    review.update(top)
    return orjson.dumps(review)


MALFORMED = [
    ("an empty body", b"", JSON, ""),
    ("a body that is not JSON", b"{not json", JSON, ""),
    ("a JSON array", b"[1, 2]", JSON, ""),
    ("a review of another apiVersion echoes the uid", _review_with(apiVersion="admission.k8s.io/v1beta1"), JSON, "known-uid"),
    ("a review of another kind", _review_with(kind="TokenReview"), JSON, "known-uid"),
    ("a review without request", _review_with(request=None), JSON, ""),
    ("a request without uid", _without("uid"), JSON, ""),
    ("a request with an empty uid", _with(uid=""), JSON, ""),
    ("a request without kind", _without("kind"), JSON, "known-uid"),
    ("an unknown operation", _with(operation="PATCH"), JSON, "known-uid"),
    ("an object that is a string", _with(object="job"), JSON, "known-uid"),
    ("a text/plain content type", orjson.dumps(GOOD), {"Content-Type": "text/plain"}, "known-uid"),
    ("no content type", orjson.dumps(GOOD), {}, "known-uid"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "headers", "uid"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_a_malformed_request_gets_400_with_an_admission_review(
    client: FlaskClient, path: str, body: bytes, headers: dict[str, str], uid: str
) -> None:
    status, answer, content_type = post(client, path, body, headers=headers)
    response = response_of(answer)
    assert (status, content_type) == (400, "application/json")
    assert response["uid"] == uid
    assert response["allowed"] is False
    assert response["status"]["code"] == 400 and response["status"]["reason"] == "BadRequest"
    assert response["status"]["message"]


def test_a_null_object_on_create_is_a_bad_request_inside_a_200(client: FlaskClient) -> None:
    status, answer, _ = post(client, "/validate", _with(object=None))
    response = response_of(answer)
    assert status == 200 and response["uid"] == "known-uid" and response["status"]["code"] == 400


def test_a_declared_oversized_body_gets_413_without_being_read(client: FlaskClient) -> None:
    class Unreadable(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, b: t.Any) -> int:
            raise AssertionError("the body must not be read")

    resp = client.post(
        "/validate",
        headers=JSON,
        environ_overrides={"wsgi.input": Unreadable(), "CONTENT_LENGTH": str(MAX_BODY_BYTES + 1)},
    )
    assert resp.status_code == 413
    assert response_of(orjson.loads(resp.data))["status"]["reason"] == "RequestEntityTooLarge"


def test_an_undeclared_oversized_body_is_cut_off_at_the_cap(client: FlaskClient) -> None:
    body = b" " * (MAX_BODY_BYTES + 10)
    resp = client.post(
        "/validate",
        input_stream=io.BytesIO(body),
        headers=JSON,
        environ_overrides={"wsgi.input_terminated": True},  # what gunicorn sets for chunked bodies
    )
    assert resp.status_code == 413
    assert response_of(orjson.loads(resp.data))["status"]["code"] == 413


def test_a_body_at_the_cap_is_read(client: FlaskClient) -> None:
    body = orjson.dumps(GOOD)
    padded = body + b" " * (MAX_BODY_BYTES - len(body))
    status, answer, _ = post(client, "/validate", padded)
    assert status == 200 and response_of(answer)["allowed"] is True


# ------------------------------------------------------------------------------ internal error


@pytest.mark.parametrize(("path", "target"), [("/validate", "validate_object"), ("/mutate", None)])
def test_a_core_exception_becomes_an_internal_error_for_that_review_only(
    client: FlaskClient,
    path: str,
    target: str | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom(*args: object, **kwargs: object) -> t.NoReturn:
        raise RuntimeError("bug in the core")

    if target is not None:
        monkeypatch.setattr(handler, target, boom)
    else:
        import webhook.governed.mutation

        monkeypatch.setattr(webhook.governed.mutation, "mutate_object", boom)
    endpoint = path.strip("/")
    before = sample("wasp_internal_errors_total", {"endpoint": endpoint})
    with caplog.at_level(logging.ERROR, logger="wasp.review"):
        status, answer, _ = post(client, path, build_review(job(), uid="boom"))
    response = response_of(answer)
    assert status == 200
    assert response["uid"] == "boom" and response["allowed"] is False
    assert response["status"]["code"] == 500 and response["status"]["reason"] == "InternalError"
    assert "bug in the core" not in response["status"]["message"]  # details stay in the log
    [record] = [r for r in caplog.records if r.name == "wasp.review" and r.levelno == logging.ERROR]
    assert record.exc_info is not None and "boom" in str(getattr(record, "fields", {}))
    assert sample("wasp_internal_errors_total", {"endpoint": endpoint}) == before + 1
    monkeypatch.undo()
    status, answer, _ = post(client, path, build_review(job(min_count=4), uid="next"))
    assert status == 200 and response_of(answer)["allowed"] is True


# ------------------------------------------------------------------------------------- metrics


def test_requests_are_counted_by_endpoint_kind_operation_and_outcome(client: FlaskClient) -> None:
    labels = {"endpoint": "validate", "kind": "Job", "operation": "CREATE", "outcome": "denied"}
    other = {"endpoint": "validate", "kind": "other", "operation": "CREATE", "outcome": "skipped"}
    before, before_other = (
        sample("wasp_admission_requests_total", labels),
        sample("wasp_admission_requests_total", other),
    )
    post(client, "/validate", build_review(job(min_count=10)))
    made_up = {"apiVersion": "x.example/v1", "kind": "MadeUp", "metadata": {"name": "m"}}
    post(client, "/validate", build_review(made_up))
    assert sample("wasp_admission_requests_total", labels) == before + 1
    assert sample("wasp_admission_requests_total", other) == before_other + 1
    assert sample("wasp_admission_in_flight_requests", {}) == 0


def test_a_review_being_handled_is_in_flight(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    real = handler.validate_object

    def slow(*args: t.Any, **kwargs: t.Any) -> t.Any:
        entered.set()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(handler, "validate_object", slow)
    worker = threading.Thread(target=post, args=(client, "/validate", build_review(job())))
    worker.start()
    try:
        assert entered.wait(10)
        assert sample("wasp_admission_in_flight_requests", {}) == 1
    finally:
        release.set()
        worker.join(10)
    assert sample("wasp_admission_in_flight_requests", {}) == 0


def _texts(count: int, size: int) -> list[str]:
    return [f"{i:03d}".ljust(size, "w") for i in range(count)]


LIMITS = [
    pytest.param(["a" * 300], ["a" * 300], id="one long warning under the 4,096-rune total is kept whole"),
    pytest.param(_texts(20, 200), _texts(20, 200), id="4,000 runes in all: every warning whole"),
    pytest.param(
        _texts(30, 200), _texts(21, 200), id="past 4,096: added while fewer than 4,096 runes are written (21)"
    ),
    pytest.param(
        _texts(20, 300),
        [t[:255] + "…" for t in _texts(16, 300)],
        id="past 4,096: each cut to 256 runes, marked, 16 of them",
    ),
    pytest.param(["x", "x", "y"], ["x", "y"], id="a repeated warning once, as the apiserver records it"),
    pytest.param(["", "x"], ["x"], id="empty warnings are dropped"),
]


@pytest.mark.parametrize(("warnings", "expected"), LIMITS)
def test_warnings_are_what_the_apiserver_passes_on(warnings: list[str], expected: list[str]) -> None:
    """k8s.io/apiserver endpoints/filters/warning.go: whole while the total fits, then truncating."""
    assert limit_warnings(warnings) == expected


# -------------------------------------------------------------------------------------- probes


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_probes_are_not_on_the_serving_port(client: FlaskClient, path: str) -> None:
    # The kubelet and scrapers use the plain-HTTP probe port, whose readiness also knows
    # whether a worker serves; the serving port answers reviews only.
    resp = client.get(path)
    assert resp.status_code == 404 and resp.json is not None and resp.json["kind"] == "AdmissionReview"


def test_a_loaded_certificate_is_not_ready_once_it_has_expired(settings: Settings) -> None:
    later = datetime.now(UTC) + timedelta(days=3650)
    loaded = CertReloader(settings.cert_file, settings.key_file)
    assert loaded.load() == [] and loaded.problems() == []
    # The same pair, looked at ten years later (the reloader's wall clock is injectable).
    reloader = CertReloader(settings.cert_file, settings.key_file, now=lambda: later)
    reloader._current = loaded.current
    assert any("expired" in p for p in reloader.problems())


def test_no_certificate_is_not_ready(tmp_path: Path, policies: PolicySet) -> None:
    settings = Settings(cert_file=tmp_path / "missing.crt", key_file=tmp_path / "missing.key")
    state = state_of(create_app(settings, policies=policies))  # builds: wasp serve refused the pair earlier
    assert state.reloader.problems() == ["no serving certificate loaded"]


def test_the_probe_app_reports_readiness_and_metrics() -> None:
    problems: list[str] = ["TLS port 127.0.0.1:1 does not complete a handshake"]
    probe = create_probe_app(lambda: problems).test_client()
    assert probe.get("/healthz").status_code == 200
    resp = probe.get("/readyz")
    assert resp.status_code == 503 and b"handshake" in resp.data
    problems.clear()
    assert probe.get("/readyz").status_code == 200
    resp = probe.get("/metrics")
    assert resp.status_code == 200 and b"wasp_admission_requests_total" in resp.data
    assert resp.content_type.startswith("text/plain")
    assert metrics.MULTIPROC_ENV == "PROMETHEUS_MULTIPROC_DIR"


def test_a_rotated_pair_is_used_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    now = datetime.now(UTC)

    def bundle() -> certs.CertBundle:
        return certs.generate_bundle(dns_names=["localhost"], ip_addresses=["127.0.0.1"], now=now)

    _, crt, key = certs.write_bundle(tmp_path, bundle())
    clock = [0.0]
    events: list[str] = []
    reloader = CertReloader(
        crt, key, interval=2.0, clock=lambda: clock[0], observer=lambda e, p: events.append(e)
    )
    assert reloader.load() == []
    old = reloader.context()
    certs.write_bundle(tmp_path, bundle())
    assert reloader.context() is old, "files are looked at only every interval"
    clock[0] = 2.0
    new = reloader.context()
    assert new is not old and events == ["loaded"]
    # A half-written rotation: a key that does not belong to the certificate.
    key.write_bytes(bundle().key_pem)
    clock[0] = 4.0
    assert reloader.context() is new and events == ["loaded", "rejected"]
    clock[0] = 6.0
    assert reloader.context() is new and events == ["loaded", "rejected"], "refused once per content"
