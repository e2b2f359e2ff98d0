"""Parity: for every golden example, `wasp validate -o json` and the validating webhook agree.

Both run in process here: the CLI through click's runner with the golden policies, the
webhook through its Flask app answering the AdmissionReview the apiserver would send.
They must agree on allowed/denied, on every cause (type, field, message), on the denial
message (the apimachinery aggregate of the CLI's errors) and on the warnings.
"""

from __future__ import annotations

import json
import typing as t
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from golden import REPO_ROOT, GoldenCase, discover_cases, golden_policies

from tests.http.apiserver import build_review
from webhook import certs
from webhook.cli.main import cli
from webhook.server.app import create_app
from webhook.server.settings import Settings
from webhook.vocab.field import aggregate

CASES = discover_cases()
POLICY_ARGS = [
    arg
    for policy in ("examples/trainer/policy.yaml", "examples/rolebased/policy.yaml")
    for arg in ("--policies", str(REPO_ROOT / policy))
]


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    # Module-scoped: generating the dev CA and certificate once is enough for every case.
    dev = certs.ensure_dev_certs(tmp_path_factory.mktemp("certs"), now=datetime.now(UTC))
    settings = Settings(cert_file=dev.cert_file, key_file=dev.key_file)
    return create_app(settings, policies=golden_policies()).test_client()


def cli_record(case: GoldenCase) -> dict[str, t.Any]:
    args = ["validate", "-o", "json", *POLICY_ARGS]
    old = case.path.with_name(case.path.name.replace(".yaml", ".old.yaml"))
    if old.exists():
        args += ["--old", str(old)]
    outcome = CliRunner().invoke(cli, [*args, str(case.path)], catch_exceptions=False)
    assert outcome.exit_code in (0, 1), outcome.output
    [record] = json.loads(outcome.stdout)["results"]
    return t.cast(dict[str, t.Any], record)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_cli_json_verdict_equals_the_webhook_verdict(
    case: GoldenCase, webhook: FlaskClient, structural_engine: str
) -> None:
    record = cli_record(case)
    assert isinstance(case.obj, dict)
    old = case.old_obj if isinstance(case.old_obj, dict) else None
    review = build_review(case.obj, operation="UPDATE" if old is not None else "CREATE", old=old)
    answer = webhook.post("/validate", json=review).get_json()["response"]

    cli_causes = [(e["type"], e["field"], e["message"]) for e in record["errors"]]
    status = answer.get("status", {})
    hook_causes = [
        (c["type"], c["field"], f"{c['field']}: {c['message']}")
        for c in status.get("details", {}).get("causes", [])
    ]
    assert (record["status"] == "invalid") is (answer["allowed"] is False)
    assert cli_causes == hook_causes
    if cli_causes:
        assert status["message"] == _aggregate_of(record)
    assert record["warnings"] == answer.get("warnings", [])


def _aggregate_of(record: dict[str, t.Any]) -> str:
    messages = [e["message"] for e in record["errors"]]
    if len(messages) == 1:
        return str(messages[0])
    # The same dedupe-and-bracket rule as webhook.vocab.field.aggregate, applied to rendered lines.
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def test_aggregate_rule_matches_the_library() -> None:
    """The helper above must be the library's rule, or the parity assertion proves nothing."""
    from webhook.vocab.field import FieldPath, invalid, required

    errors = [required(FieldPath.of("a")), invalid(FieldPath.of("b"), 1, "x"), required(FieldPath.of("a"))]
    record = {"errors": [{"message": e.error()} for e in errors]}
    assert _aggregate_of(record) == aggregate(errors)


def test_every_golden_case_is_compared() -> None:
    assert len(CASES) >= 40
    assert all(isinstance(c.path, Path) for c in CASES)
