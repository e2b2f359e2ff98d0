"""``wasp reconcile``'s command line: registration, flags, and the refusals before any API call."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from webhook.cli.main import cli

from .worlds import EXAMPLES


def test_reconcile_is_a_subcommand_with_the_policy_flags() -> None:
    result = CliRunner().invoke(cli, ["reconcile", "--help"])
    assert result.exit_code == 0
    for flag in (
        "--kubeconfig",
        "--policies",
        "--feature-gates",
        "--leader-elect / --no-leader-elect",
        "--lease-namespace",
    ):
        assert flag in result.output


def test_only_job_policies_leave_nothing_to_reconcile_exit_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("{}")
    result = CliRunner().invoke(cli, ["reconcile", "--kubeconfig", str(kubeconfig), "--no-leader-elect"])
    assert result.exit_code == 2
    assert "Jobs are the Job controller's" in result.output


def test_lease_timings_must_nest_exit_2() -> None:
    args = ["reconcile", "--policies", str(EXAMPLES[0]), "--lease-duration", "5", "--renew-deadline", "6"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "--lease-duration > --renew-deadline" in result.output


def test_an_unreachable_api_server_is_one_line_and_exit_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.json"
    kubeconfig.write_text(
        '{"apiVersion": "v1", "kind": "Config", "current-context": "x",'
        ' "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],'
        ' "users": [{"name": "x", "user": {}}], "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}'
    )
    args = ["reconcile", "--kubeconfig", str(kubeconfig), "--policies", str(EXAMPLES[0]), "--no-leader-elect"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "cannot reach the API server" in result.output
