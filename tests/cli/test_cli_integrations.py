"""``--integrations NAME[,NAME...]`` on validate, compile, serve, reconcile (issue 15, Ship) and
policy check (issue 25: the integrations pages check the shipped policy by name, not by a path
only a clone has), and ``wasp compile`` of a composite tree while the CompositePodGroup gate is
off (item 7)."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import EXAMPLES, REPO_ROOT, Run
from webhook.policy import PolicySet
from webhook.policy import integrations as integrations_module
from webhook.policy.integrations import KNOWN_INTEGRATIONS

Runner = t.Callable[..., Run]
CRDS: t.Final = REPO_ROOT / "tests" / "integrations" / "data"
MPIJOB: t.Final = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": {
        "name": "pi",
        "namespace": "ml",
        "annotations": {"scheduling.wasp.dev/blocks": '{"schedulingPolicy": {"gang": {"minCount": 9}}}'},
    },
    "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}}},
}


@pytest.fixture
def mpijob(write: t.Callable[..., Path]) -> Path:
    return write("mpijob.yaml", MPIJOB)


@pytest.mark.parametrize(
    ("flags", "status"),
    [
        pytest.param([], "skipped", id="not loaded by default"),
        pytest.param(["--integrations", "mpijob"], "invalid", id="one name"),
        pytest.param(["--integrations", "raycluster,mpijob"], "invalid", id="a comma-separated list"),
        pytest.param(["--integrations", "raycluster", "--integrations", "mpijob"], "invalid", id="repeated"),
        pytest.param(["--integrations", " mpijob , "], "invalid", id="blanks around names"),
        pytest.param(["--policy-only", "--integrations", "mpijob"], "invalid", id="with --policy-only"),
    ],
)
def test_validate_loads_the_named_integrations(
    run: Runner, mpijob: Path, flags: list[str], status: str
) -> None:
    result = run("validate", *flags, "-o", "json", mpijob)
    assert [r["status"] for r in result.json()["results"]] == [status]


@pytest.mark.parametrize("command", ["validate", "compile", "reconcile"])
def test_an_unknown_name_is_a_usage_error_listing_the_known_ones(
    run: Runner, mpijob: Path, command: str
) -> None:
    result = run(command, "--integrations", "mpijob,pytorchjob", mpijob)
    assert result.code == 2
    assert "unknown integration 'pytorchjob'" in result.stderr
    assert all(name in result.stderr for name in KNOWN_INTEGRATIONS)


def test_a_known_name_whose_file_is_not_shipped_is_an_error(
    run: Runner, mpijob: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(integrations_module, "INTEGRATION_DIR", tmp_path / "none")
    result = run("validate", "--integrations", "trainjob", mpijob)
    assert result.code == 2
    assert "integration 'trainjob' is not shipped" in result.stderr


def test_compile_uses_the_named_integrations(run: Runner, write: t.Callable[..., Path]) -> None:
    valid = {
        **MPIJOB,
        "metadata": {"name": "pi", "namespace": "ml", "annotations": {"scheduling.wasp.dev/blocks": "{}"}},
    }
    result = run("compile", "--integrations", "mpijob", "--uid", "u1", "-o", "json", write("pi.yaml", valid))
    assert result.code == 0, result.stderr
    assert [i["kind"] for i in result.json()["items"]] == ["Workload", "PodGroup"]


def test_a_user_policy_replaces_an_integration_by_name(
    run: Runner, mpijob: Path, write: t.Callable[..., Path]
) -> None:
    shipped = yaml.safe_load((integrations_module.INTEGRATION_DIR / "mpijob.yaml").read_text())
    shipped["spec"]["allowedPolicies"] = ["basic"]
    own = write("policies/mpijob.yaml", shipped)
    result = run("validate", "--integrations", "mpijob", "--policies", own, "-o", "json", mpijob)
    errors = [(e["type"], e["field"]) for r in result.json()["results"] for e in r["errors"]]
    at = "metadata.annotations[scheduling.wasp.dev/blocks].schedulingPolicy"
    assert errors == [("FieldValueForbidden", at), ("FieldValueInvalid", f"{at}.gang.minCount")]


def test_a_second_policy_for_an_integrations_kind_is_an_error(
    run: Runner, mpijob: Path, write: t.Callable[..., Path]
) -> None:
    shipped = yaml.safe_load((integrations_module.INTEGRATION_DIR / "mpijob.yaml").read_text())
    shipped["metadata"]["name"] = "my-mpijob"
    result = run("validate", "--integrations", "mpijob", "--policies", write("p/mine.yaml", shipped), mpijob)
    assert result.code == 2
    assert "already governed by policy 'mpijob'" in result.stderr


@pytest.mark.parametrize(
    ("args", "env"),
    [
        pytest.param(["--integrations", "mpijob,raycluster"], {}, id="the flag"),
        pytest.param([], {"WASP_SERVE_INTEGRATIONS": "mpijob,raycluster"}, id="its environment variable"),
    ],
)
def test_serve_loads_the_integrations_before_its_policies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    from click.testing import CliRunner

    from webhook.cli import serve as serve_module
    from webhook.cli.main import cli

    seen: list[t.Any] = []
    monkeypatch.setattr(serve_module, "_run", lambda settings, policies: seen.append(settings))
    result = CliRunner().invoke(
        cli, ["serve", "--dev", "--state-dir", str(tmp_path), *args], env=env, auto_envvar_prefix="WASP"
    )
    assert result.exit_code == 0, result.output
    names = [p.name for p in PolicySet.load(seen[0].policy_dirs, builtin=False).policies]
    assert names == ["mpijob", "raycluster"]


def test_serve_refuses_an_unknown_name_from_its_environment_variable(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from webhook.cli.main import cli

    result = CliRunner().invoke(
        cli, ["serve", "--dev", "--state-dir", str(tmp_path)], env={"WASP_SERVE_INTEGRATIONS": "lws"},
        auto_envvar_prefix="WASP",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "unknown integration 'lws'" in result.output


def test_reconcile_runs_with_the_integrations(monkeypatch: pytest.MonkeyPatch, run: Runner) -> None:
    from webhook.reconciler import run as run_module

    seen: list[PolicySet] = []
    monkeypatch.setattr(run_module, "run", lambda settings, policies: seen.append(policies))
    result = run("reconcile", "--no-leader-elect", "--integrations", "volcano-job")
    assert result.code == 0, result.stderr
    assert [p.name for p in seen[0].policies] == ["batch-cronjob", "batch-job", "volcano-job"]


def test_compile_refuses_a_composite_tree_while_its_gate_is_off(run: Runner) -> None:
    """Item 7: upstream's apiserver forbids compositePodGroupTemplates with CompositePodGroup
    off, so wasp compile says why it compiles nothing instead of emitting a CompositePodGroup."""
    args = ("compile", "--policies", EXAMPLES / "rolebased" / "policy.yaml", EXAMPLES / "rolebased" / "inferenceservice.yaml")  # fmt: skip
    off = run(*args, "-o", "json")
    assert (off.code, off.json()["items"]) == (0, [])
    assert "not compiled: a composite tree needs feature gate CompositePodGroup, which is off" in off.stderr
    on = run(*args, "--feature-gates", "CompositePodGroup=true", "-o", "json")
    assert [i["kind"] for i in on.json()["items"]] == [
        "Workload",
        "CompositePodGroup",
        "PodGroup",
        "PodGroup",
    ]


@pytest.mark.parametrize(
    ("blocks", "warned"),
    [
        pytest.param(True, True, id="an object with blocks hears about the gate"),
        pytest.param(False, False, id="an object without blocks does not"),
    ],
)
def test_the_composite_gate_warning_needs_blocks(
    run: Runner, write: t.Callable[..., Path], blocks: bool, warned: bool
) -> None:
    obj = yaml.safe_load((EXAMPLES / "rolebased" / "inferenceservice.yaml").read_text())
    if not blocks:
        del obj["spec"]["scheduling"]
        for role in obj["spec"]["roles"]:
            del role["scheduling"]
    path = write("inferenceservice.yaml", obj)
    result = run("validate", "--strict", "--policies", EXAMPLES / "rolebased" / "policy.yaml", path)
    assert (result.code, "CompositePodGroup" in result.stdout) == (int(warned), warned)


@pytest.mark.parametrize(
    ("args", "code", "lines"),
    [
        pytest.param(
            ["--integrations", "mpijob", "--crd", CRDS / "mpijob" / "crd.yaml"],
            0,
            [f"integration mpijob: fits {CRDS / 'mpijob' / 'crd.yaml'} (kubeflow.org/MPIJob v2beta1)"],
            id="a shipped integration named, labelled by its name",
        ),
        pytest.param(
            ["--integrations", "mpijob", "--crd", CRDS / "jobset" / "crd.yaml"],
            1,
            [
                "integration mpijob: spec.target: targets kubeflow.org/MPIJob, but the CRD defines jobset.x-k8s.io/JobSet"
            ],
            id="a CRD of another kind is a problem",
        ),
        pytest.param(
            [
                EXAMPLES / "trainer" / "policy.yaml",
                "--integrations",
                "trainjob",
                "--crd",
                EXAMPLES / "trainer" / "crd.yaml",
            ],
            1,
            [
                f"{EXAMPLES / 'trainer' / 'policy.yaml'}: fits ",
                "integration trainjob: spec.target: targets trainer.kubeflow.org/TrainJob",
            ],
            id="a policy file and an integration, each checked",
        ),
    ],
)
def test_policy_check_takes_shipped_integrations_by_name(
    run: Runner, args: list[object], code: int, lines: list[str]
) -> None:
    result = run("policy", "check", *args)
    assert result.code == code, result.stdout + result.stderr
    printed = result.stdout.splitlines()
    assert [line for line, want in zip(printed, lines, strict=True) if not line.startswith(want)] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "give a POLICY file or --integrations NAME", id="nothing to check"),
        pytest.param(
            ["--integrations", "pytorchjob"], "unknown integration 'pytorchjob'", id="an unknown name"
        ),
    ],
)
def test_policy_check_needs_a_policy_it_can_find(run: Runner, args: list[str], message: str) -> None:
    result = run("policy", "check", *args, "--crd", CRDS / "mpijob" / "crd.yaml")
    assert (result.code, message in result.stderr) == (2, True), result.stderr
