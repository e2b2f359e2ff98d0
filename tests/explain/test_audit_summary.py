"""``wasp audit`` prints wasp explain's verdict and finding codes per governed object, through
the same functions: the same scenarios give the same codes in both."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.explain import scenarios
from tests.explain.conftest import wasp
from tests.explain.scenarios import NS, SCENARIOS
from tests.explain.world import CRDS, POLICY_ARGS, StandinSink
from tests.standin import StandIn
from webhook.cli.main import cli

pytestmark = pytest.mark.slow
# Scenarios whose findings do not need nodes (the audit estimates no capacity).
CASES: t.Final = (
    "runs",
    "pods-not-created",
    "half-grouped",
    "failed-create",
    "foreign-scheduler",
    "runs-jobset",
    "held-back-sequenced",
    "runs-composite",
)


def audit(kubeconfig: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["audit", "-n", NS, *POLICY_ARGS, "--kubeconfig", str(kubeconfig), *args],
                                catch_exceptions=False)  # fmt: skip
    return result.exit_code, result.stdout


@pytest.mark.parametrize("name", CASES)
def test_audit_gives_explains_verdict_per_governed_object(name: str, tmp_path: Path) -> None:
    with StandIn(*(x for crd in CRDS for x in ("--resource", crd))) as standin:
        target = SCENARIOS[name].build(StandinSink(standin))
        kubeconfig = standin.kubeconfig(tmp_path / "kc.json")
        _, out = audit(kubeconfig, "-o", "json")
        runtime = [f for f in json.loads(out)["findings"] if f["type"] == "Runtime"]
        _, explained, _ = wasp(target, "-n", NS, "--kubeconfig", str(kubeconfig), "-o", "json")
        answer = json.loads(explained)
        assert [(f["object"]["name"], f["severity"]) for f in runtime] == [(answer["target"]["name"], "info")]
        assert runtime[0]["detail"] == {
            "verdict": answer["verdict"],
            "codes": [f["code"] for f in answer["findings"]],
        }
        _, text = audit(kubeconfig)
        assert f"Runtime: {answer['verdict']}" in text
        _, quiet = audit(kubeconfig, "-o", "json", "--no-runtime")
        assert not [f for f in json.loads(quiet)["findings"] if f["type"] == "Runtime"]


@pytest.mark.parametrize("chunk", ["1", "500"])
def test_one_page_of_several_objects_gives_each_its_own_pods(chunk: str, tmp_path: Path) -> None:
    with StandIn(*(x for crd in CRDS for x in ("--resource", crd))) as standin:
        sink = StandinSink(standin)
        for name, order in (("a", {}), ("b", {"startupPolicy": {"startupPolicyOrder": "InOrder"}})):
            obj = sink.create(scenarios.jobset(name, **order))
            scenarios.objects_of(sink, obj)
            scenarios.pods(sink, obj, 6 if name == "a" else 2, running=name == "a", group=scenarios.group_name(obj),
                           controlled=False, labels={"jobset.sigs.k8s.io/jobset-name": name})  # fmt: skip
        obj = sink.create(scenarios.trainer("c"))
        scenarios.objects_of(sink, obj)
        scenarios.pods(sink, obj, 4, running=True, group=scenarios.group_name(obj))
        _, out = audit(standin.kubeconfig(tmp_path / "kc.json"), "-o", "json", "--chunk-size", chunk)
    runtime = {
        f["object"]["name"]: f["detail"] for f in json.loads(out)["findings"] if f["type"] == "Runtime"
    }
    assert runtime == {
        "a": {"verdict": "runs", "codes": []},
        "b": {"verdict": "blocked", "codes": ["held-back-sequenced"]},
        "c": {"verdict": "runs", "codes": []},
    }
