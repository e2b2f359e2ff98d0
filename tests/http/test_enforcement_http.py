"""The webhook with policies in warn mode (issue 19): answers, metrics and the review log.

In warn mode an object the policy would deny is admitted, and the denial's field errors come
back as ``warnings`` worded as the denial's lines (``<field>: <message>`` of each cause), so
kubectl prints ``Warning: <the denial line>``. Each row is checked against the deny-mode
answer for the same review: the same causes, ``(type, field)``, only the verdict changes.
"""

from __future__ import annotations

import logging
import typing as t
from pathlib import Path

import orjson
import pytest
import yaml
from apiserver import build_review
from conftest import BATCH_JOB_POLICY, job, mutating_job_policy
from flask.testing import FlaskClient

from webhook.certs.serving import CertReloader
from webhook.policy import PolicySet
from webhook.server import app as app_module
from webhook.server.app import create_app
from webhook.server.settings import Settings

Json = dict[str, t.Any]
MIN: t.Final = "spec.scheduling.schedulingPolicy.gang.minCount"
S: t.Final = "spec.scheduling.schedulingPolicy"


def in_warn_mode(policy: Path, directory: Path) -> Path:
    doc = yaml.safe_load(policy.read_text())
    doc["spec"]["enforcement"] = "warn"
    out = directory / f"warn-{policy.name}"
    out.write_text(yaml.safe_dump(doc))
    return out


def client_for(policies: PolicySet, enforcement: t.Literal["deny", "warn"] | None = None) -> FlaskClient:
    settings = Settings(cert_file=Path("unused"), key_file=Path("unused"), enforcement=enforcement)
    reloader = CertReloader(Path("unused"), Path("unused"))
    return create_app(settings, policies=policies, reloader=reloader).test_client()


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FlaskClient]:
    """``deny``: the built-in policies; ``policy``: a warn-mode Job policy file; ``flag``: the
    built-in policies with ``--enforcement warn`` (Settings.enforcement)."""
    tmp = tmp_path_factory.mktemp("enforcement")
    builtin = PolicySet.load()
    return {
        "deny": client_for(builtin),
        "policy": client_for(PolicySet.load([in_warn_mode(BATCH_JOB_POLICY, tmp)])),
        "flag": client_for(builtin, "warn"),
    }


def answer(client: FlaskClient, path: str, review: Json) -> Json:
    resp = client.post(path, data=orjson.dumps(review), headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    response: Json = orjson.loads(resp.data)["response"]
    return response


def gang_to_basic() -> tuple[Json, Json]:
    """An UPDATE the Job's elastic rules forbid: gang to basic (the variant is frozen)."""
    old, new = job(min_count=4), job(min_count=4)
    new["spec"]["scheduling"]["schedulingPolicy"] = {"basic": {}}
    return new, old


def two_errors() -> Json:
    obj = job(min_count=10)
    obj["spec"]["scheduling"]["schedulingPolicy"]["basic"] = {}
    return obj


@pytest.mark.parametrize("mode", ["policy", "flag"], ids=["a warn-mode policy file", "--enforcement warn"])
@pytest.mark.parametrize(
    ("obj", "old", "causes"),
    [
        pytest.param(job(min_count=10), None, [("FieldValueInvalid", MIN)], id="a gang bigger than the Job"),
        pytest.param(*gang_to_basic(), [("FieldValueInvalid", S)], id="an update the Job rules forbid"),
        pytest.param(two_errors(), None, [("FieldValueInvalid", S), ("FieldValueInvalid", MIN)],
                     id="two errors: two warnings, in the denial's order"),
    ],
)  # fmt: skip
def test_what_would_be_denied_is_admitted_with_the_denial_as_warnings(
    clients: dict[str, FlaskClient], mode: str, obj: Json, old: Json | None, causes: list[tuple[str, str]]
) -> None:
    operation = "CREATE" if old is None else "UPDATE"
    review = build_review(obj, operation=operation, old=old, uid="u")
    denial = answer(clients["deny"], "/validate", review)
    assert denial["allowed"] is False
    found = denial["status"]["details"]["causes"]
    assert [(c["reason"], c["field"]) for c in found] == causes
    warned = answer(clients[mode], "/validate", review)
    assert warned == {
        "uid": "u",
        "allowed": True,
        "warnings": [f"{c['field']}: {c['message']}" for c in found],
    }


@pytest.mark.parametrize("mode", ["policy", "flag"])
def test_a_valid_job_is_simply_allowed(clients: dict[str, FlaskClient], mode: str) -> None:
    assert answer(clients[mode], "/validate", build_review(job(min_count=8), uid="u")) == {
        "uid": "u",
        "allowed": True,
    }


def test_a_dry_run_is_warned_like_a_real_create(clients: dict[str, FlaskClient]) -> None:
    wet = answer(clients["flag"], "/validate", build_review(job(min_count=10), uid="u"))
    dry = answer(clients["flag"], "/validate", build_review(job(min_count=10), uid="u", dry_run=True))
    assert dry == wet and wet["allowed"] is True


def test_the_workloads_own_validation_is_not_affected(clients: dict[str, FlaskClient]) -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 0}}}],
        },
    }
    response = answer(clients["flag"], "/validate", build_review(workload, uid="u"))
    assert response["allowed"] is False
    assert [(c["reason"], c["field"]) for c in response["status"]["details"]["causes"]] == [
        ("FieldValueRequired", "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")
    ]


def test_defaulting_still_applies_in_warn_mode(tmp_path: Path) -> None:
    mutating = mutating_job_policy(tmp_path)
    review = build_review(job(), uid="u")  # no spec.scheduling: the policy defaults a gang
    denying = answer(client_for(PolicySet.load([mutating])), "/mutate", review)
    warning = answer(client_for(PolicySet.load([in_warn_mode(mutating, tmp_path)])), "/mutate", review)
    flagged = answer(client_for(PolicySet.load([mutating]), "warn"), "/mutate", review)
    assert "patch" in denying and warning == flagged == denying


# ------------------------------------------------------------------------ metrics and logs


def sample(labels: dict[str, str]) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("wasp_admission_requests_total", labels) or 0.0


@pytest.mark.parametrize(
    ("mode", "obj", "outcome", "code", "causes", "level"),
    [
        pytest.param(
            "flag", two_errors(), "warned", None, 2, "INFO", id="warned: no status code, two causes"
        ),
        pytest.param("deny", two_errors(), "denied", 403, 2, "INFO", id="denied: 403, two causes"),
        pytest.param("flag", job(min_count=8), "allowed", None, None, "DEBUG", id="allowed: a debug line"),
    ],
)
def test_metrics_and_the_review_log_record_the_outcome(
    clients: dict[str, FlaskClient],
    caplog: pytest.LogCaptureFixture,
    mode: str,
    obj: Json,
    outcome: str,
    code: int | None,
    causes: int | None,
    level: str,
) -> None:
    labels = {"endpoint": "validate", "kind": "Job", "operation": "CREATE", "outcome": outcome}
    before = sample(labels)
    with caplog.at_level(logging.DEBUG, logger=app_module.log.name):
        answer(clients[mode], "/validate", build_review(obj, uid="logged"))
    assert sample(labels) == before + 1
    [record] = [r for r in caplog.records if r.getMessage() == "review"]
    line = t.cast(dict[str, object], record.fields)  # type: ignore[attr-defined]  # what the JSON line carries
    assert (record.levelname, line["uid"], line["outcome"], line["code"], line["causes"]) == (
        level,
        "logged",
        outcome,
        code,
        causes,
    )


def test_an_allowed_review_writes_no_line_at_the_default_level(
    clients: dict[str, FlaskClient], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=app_module.log.name):
        answer(clients["flag"], "/validate", build_review(job(min_count=8), uid="quiet"))
        answer(clients["deny"], "/validate", build_review(two_errors(), uid="loud"))
    assert [r.fields["uid"] for r in caplog.records if r.getMessage() == "review"] == ["loud"]  # type: ignore[attr-defined]
