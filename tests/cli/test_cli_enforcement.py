"""``wasp validate`` and ``wasp serve`` with policies in warn mode (issue 19).

An object a warn-mode policy finds invalid is what the webhook admits with warnings: each
output shows its field errors as warnings (status ``warning``), they count as warnings for
``--strict``/``--warning-exit-code``, and ``--enforcement deny`` makes them errors again so
CI can be stricter than the cluster. A warn-mode policy is given two ways: a policy file in
warn mode (``--policies``), and ``--enforcement warn`` over the built-in Job policy.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO_ROOT, Run, dump, job

from webhook.cli.main import cli

Runner = t.Callable[..., Run]
MIN: t.Final = "spec.scheduling.schedulingPolicy.gang.minCount"
LINE: t.Final = f"{MIN}: Invalid value: 9: must be less than or equal to spec.parallelism (4)"
SUMMARY: t.Final = "wasp: 2 objects in 1 file: 1 valid, 0 invalid, 1 warned, 0 skipped, 0 errors, 1 warning"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working directory, holding ``in.yaml`` (an invalid Job at line 1,
    its minCount at line 17, then a valid one at line 19) and ``warn/``, a directory with
    the Job policy in warn mode."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.yaml").write_text(dump(job("bad", min_count=9), job("good")))
    doc = yaml.safe_load((REPO_ROOT / "policies" / "batch-job.yaml").read_text())
    doc["spec"]["enforcement"] = "warn"
    (tmp_path / "warn").mkdir()
    (tmp_path / "warn" / "batch-job.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path


# How a warn-mode policy is given: its own file, or the flag over the built-in policy.
WARN_MODES: t.Final = [
    pytest.param(("--policies", "warn"), id="a warn-mode policy directory"),
    pytest.param(("--enforcement", "warn"), id="--enforcement warn on the built-in Job policy"),
]


@pytest.mark.parametrize("mode", WARN_MODES)
@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        pytest.param("text", f"in.yaml:17: Job ml/bad: warning: {LINE}\n{SUMMARY}\n", id="text"),
        pytest.param(
            "github",
            f"::warning file=in.yaml,line=17,title=wasp%3A Job ml/bad::{LINE}\n{SUMMARY}\n",
            id="github",
        ),
        pytest.param(
            "tap",
            "TAP version 13\nok 1 - in.yaml:1 Job ml/bad\n  ---\n  severity: warning\n  errors:\n"
            f'  - {{"type": "FieldValueInvalid", "field": "{MIN}", "line": 17, "message": "{LINE}"}}\n'
            f"  ...\nok 2 - in.yaml:19 Job ml/good\n1..2\n# {SUMMARY}\n",
            id="tap",
        ),
    ],
)
def test_text_formats_show_the_denial_as_a_warning(
    run: Runner, here: Path, mode: tuple[str, ...], fmt: str, expected: str
) -> None:
    result = run("validate", *mode, "-o", fmt, "in.yaml")
    assert (result.code, result.stdout) == (0, expected)


@pytest.mark.parametrize("mode", WARN_MODES)
def test_the_json_record_is_status_warning_with_its_errors(
    run: Runner, here: Path, mode: tuple[str, ...]
) -> None:
    out = run("validate", *mode, "-o", "json", "in.yaml").json()
    bad, good = out["results"]
    assert (bad["status"], bad["operation"], bad["warnings"]) == ("warning", "CREATE", [])
    assert [(e["type"], e["field"], e["line"], e["severity"]) for e in bad["errors"]] == [
        ("FieldValueInvalid", MIN, 17, "warning")
    ]
    assert bad["errors"][0]["message"] == LINE
    assert good["status"] == "valid"
    assert out["summary"] == {
        "valid": 1, "invalid": 0, "warned": 1, "skipped": 0, "errors": 0, "warnings": 1, "files": 1,
        "unreadable": 0,
    }  # fmt: skip


@pytest.mark.parametrize("mode", WARN_MODES)
def test_the_json_output_meets_the_documented_schema(run: Runner, here: Path, mode: tuple[str, ...]) -> None:
    import jsonschema
    from test_cli_subprocess import output_schema

    jsonschema.validate(run("validate", *mode, "-o", "json", "in.yaml").json(), output_schema())


def test_a_denied_record_says_severity_error(run: Runner, here: Path) -> None:
    [bad, _] = run("validate", "-o", "json", "in.yaml").json()["results"]
    assert bad["status"] == "invalid"
    assert [(e["type"], e["field"], e["severity"]) for e in bad["errors"]] == [
        ("FieldValueInvalid", MIN, "error")
    ]


@pytest.mark.parametrize("mode", WARN_MODES)
def test_junit_and_sarif_report_a_warning_not_a_failure(
    run: Runner, here: Path, mode: tuple[str, ...]
) -> None:
    junit = run("validate", *mode, "-o", "junit", "in.yaml").stdout
    assert 'failures="0"' in junit and "<failure" not in junit
    assert f"<system-out>warning: {LINE}</system-out>" in junit
    sarif = json.loads(run("validate", *mode, "-o", "sarif", "in.yaml").stdout)
    [result] = sarif["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("FieldValueInvalid", "warning")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(("--policies", "warn"), 0, id="warn-mode policy: admitted, exit 0"),
        pytest.param(("--policies", "warn", "--strict"), 1, id="warn-mode policy, --strict: exit 1"),
        pytest.param(("--policies", "warn", "--warning-exit-code", "3"), 3, id="warn-mode policy, --warning-exit-code 3"),
        pytest.param(("--policies", "warn", "--enforcement", "deny"), 1, id="--enforcement deny: invalid again"),
        pytest.param(("--enforcement", "warn"), 0, id="built-in policy, --enforcement warn: exit 0"),
        pytest.param(("--enforcement", "warn", "--strict"), 1, id="built-in policy, --enforcement warn --strict"),
        pytest.param(("--enforcement", "deny"), 1, id="built-in policy, --enforcement deny"),
        pytest.param((), 1, id="built-in policy, no flag: denied"),
    ],
)  # fmt: skip
def test_exit_codes(run: Runner, here: Path, args: tuple[str, ...], code: int) -> None:
    assert run("validate", *args, "in.yaml").code == code


@pytest.mark.parametrize(
    ("mode", "checked"),
    [
        pytest.param(("--enforcement", "warn"), 2, id="a warned object does not stop the run"),
        pytest.param(("--enforcement", "deny"), 1, id="an invalid one does"),
    ],
)
def test_exit_on_error_stops_only_at_an_invalid_object(
    run: Runner, here: Path, mode: tuple[str, ...], checked: int
) -> None:
    result = run("validate", *mode, "--exit-on-error", "-o", "json", "in.yaml")
    assert len(result.json()["results"]) == checked


def test_enforcement_deny_gives_the_denial_verbatim(run: Runner, here: Path) -> None:
    result = run("validate", "--policies", "warn", "--enforcement", "deny", "in.yaml")
    assert result.stdout.splitlines()[0] == f"in.yaml:17: Job ml/bad: {LINE}"


def test_a_hand_written_workload_is_still_invalid_in_warn_mode(run: Runner, here: Path) -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "bad"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 0}}}],
        },
    }
    (here / "w.yaml").write_text(dump(workload))
    result = run("validate", "--enforcement", "warn", "-o", "json", "w.yaml")
    [record] = result.json()["results"]
    assert (result.code, record["status"]) == (1, "invalid")
    assert [(e["type"], e["field"]) for e in record["errors"]] == [
        ("FieldValueRequired", "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount")
    ]


def test_an_unknown_enforcement_is_a_usage_error(run: Runner, here: Path) -> None:
    result = run("validate", "--enforcement", "audit", "in.yaml")
    assert result.code == 2 and "'audit' is not one of 'deny', 'warn'" in result.stderr


def test_parallel_workers_give_the_serial_verdict(run: Runner, here: Path) -> None:
    docs = [job(f"j{i}", min_count=9 if i % 2 else 4) for i in range(40)]
    for i in range(4):
        (here / f"many-{i}.yaml").write_text(dump(*docs))
    files = [f"many-{i}.yaml" for i in range(4)]
    serial = run("validate", "--enforcement", "warn", "-j", "1", "-o", "json", *files)
    forked = run("validate", "--enforcement", "warn", "-j", "2", "-o", "json", *files)
    assert serial.verdicts() == forked.verdicts()
    assert serial.json()["summary"]["warned"] == 80


# ------------------------------------------------------------------------------ wasp serve


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param((), {}, None, id="not given: each policy's own"),
        pytest.param(("--enforcement", "warn"), {}, "warn", id="--enforcement warn"),
        pytest.param((), {"WASP_ENFORCEMENT": "warn"}, "warn", id="WASP_ENFORCEMENT"),
        pytest.param((), {"WASP_SERVE_ENFORCEMENT": "deny"}, "deny", id="WASP_SERVE_ENFORCEMENT"),
    ],
)
def test_serve_takes_the_flag_and_its_variables(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    args: tuple[str, ...],
    env: dict[str, str],
    expected: str | None,
) -> None:
    import webhook.cli.serve
    from webhook.server.settings import Settings

    seen: list[Settings] = []
    monkeypatch.setattr(Settings, "check", lambda self, **kw: None)  # no certificate or port needed
    monkeypatch.setattr(webhook.cli.serve, "_run", lambda settings, policies: seen.append(settings))
    for name in ("WASP_ENFORCEMENT", "WASP_SERVE_ENFORCEMENT"):
        monkeypatch.delenv(name, raising=False)
    files = ("--cert-file", str(tmp_path / "tls.crt"), "--key-file", str(tmp_path / "tls.key"))
    result = CliRunner().invoke(cli, ["serve", *files, *args], env=env, auto_envvar_prefix="WASP")
    assert result.exit_code == 0, result.output
    [settings] = seen
    assert settings.enforcement == expected
