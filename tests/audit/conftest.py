"""Fixtures for `wasp audit` and `wasp doctor`: the STAND-IN API server (tests/standin) with
the examples' CRDs and the foreign gang CRDs, and the commands run in process against it."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reconciler.worlds import EXAMPLES
from tests.standin import StandIn
from webhook.cli.main import cli

Json = dict[str, t.Any]
CRDS: t.Final = (
    "ml.example.com/v1/trainers/Trainer",
    "serving.example.com/v1/inferenceservices/InferenceService",
    "scheduling.volcano.sh/v1beta1/podgroups/PodGroup",
    "scheduling.x-k8s.io/v1alpha1/podgroups/PodGroup",
)
POLICY_ARGS: t.Final = (
    *(x for p in EXAMPLES for x in ("--policies", str(p))),
    "--feature-gates",
    "CompositePodGroup=true",
)


class Cluster:
    """A running stand-in and a kubeconfig for it."""

    def __init__(self, standin: StandIn, kubeconfig: Path) -> None:
        self.standin, self.kubeconfig = standin, kubeconfig

    def create(self, path: str, body: Json) -> Json:
        return self.standin.create(path, body)

    def run(self, *args: str) -> tuple[int, str, str]:
        """``wasp ARGS --kubeconfig ...``: (exit code, stdout, stderr)."""
        result = CliRunner().invoke(
            cli, [*args, "--kubeconfig", str(self.kubeconfig)], catch_exceptions=False
        )
        return result.exit_code, result.stdout, result.stderr

    def audit(self, *args: str) -> tuple[int, Json]:
        # The runtime summary (wasp explain's verdict) is tested with explain: tests/explain.
        code, out, _ = self.run("audit", "-o", "json", "--no-runtime", *POLICY_ARGS, *args)
        return code, json.loads(out)


def start(tmp_path: Path, *args: str) -> t.Iterator[Cluster]:
    extra = [x for crd in CRDS for x in ("--resource", crd)]
    with StandIn(*extra, *args) as standin:
        yield Cluster(standin, standin.kubeconfig(tmp_path / "kubeconfig.json"))


@pytest.fixture
def cluster(tmp_path: Path) -> t.Iterator[Cluster]:
    yield from start(tmp_path)
