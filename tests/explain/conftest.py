"""Run ``wasp explain`` on a scenario: through the STAND-IN API server, or ``--from`` a dump."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

from click.testing import CliRunner

from tests.explain.scenarios import NS, Scenario
from tests.explain.world import CRDS, POLICY_ARGS, DumpSink, StandinSink
from tests.standin import StandIn
from webhook.cli.main import cli

Json = dict[str, t.Any]


def wasp(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["explain", *args, *POLICY_ARGS], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def via_standin(scenario: Scenario, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    extra = [x for crd in CRDS for x in ("--resource", crd)]
    if scenario.gates_off:
        extra += ["--feature-gates", ",".join(f"{g}=false" for g in sorted(scenario.gates_off))]
    with StandIn(*extra) as standin:
        target = scenario.build(StandinSink(standin))
        for plural in scenario.forbid:
            standin.fault(403, verb="list", plural=plural, count=1000)
        kubeconfig = standin.kubeconfig(tmp_path / "kubeconfig.json")
        return wasp(target, "-n", NS, "--kubeconfig", str(kubeconfig), *args)


def dump_of(scenario: Scenario, path: Path) -> tuple[str, Path]:
    sink = DumpSink(scenario.gates_off)
    target = scenario.build(sink)
    return target, sink.write(path)


def via_dump(scenario: Scenario, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    target, dump = dump_of(scenario, tmp_path / "dump.yaml")
    return wasp(target, "-n", NS, "--from", str(dump), *args)


def as_json(run: tuple[int, str, str]) -> tuple[int, Json]:
    return run[0], json.loads(run[1])
