"""wasp explain reads the scheduling objects in the versions discovery lists, as audit and
doctor do (webhook/governed/apis.py): a version wasp has no schema for is named, never read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.explain.conftest import wasp
from tests.explain.scenarios import NS, job_no_workload
from tests.explain.world import CRDS, StandinSink
from tests.standin import StandIn

V1ALPHA2 = ("--hide", "scheduling.k8s.io/v1beta1/workloads", "--hide", "scheduling.k8s.io/v1beta1/podgroups",
            "--resource", "scheduling.k8s.io/v1alpha2/workloads/Workload",
            "--resource", "scheduling.k8s.io/v1alpha2/podgroups/PodGroup")  # fmt: skip


@pytest.mark.parametrize(
    ("hidden", "codes", "named"),
    [
        pytest.param((), ["no-workload"], False, id="control: v1beta1 served, the Workload is missing"),
        pytest.param(V1ALPHA2, ["schedulinggroup-dropped"], True, id="only v1alpha2: named, not read"),
    ],
)
def test_the_scheduling_versions_are_discovered(
    tmp_path: Path, hidden: tuple[str, ...], codes: list[str], named: bool
) -> None:
    extra = [x for crd in CRDS for x in ("--resource", crd)]
    with StandIn(*extra, *hidden) as standin:
        target = job_no_workload(StandinSink(standin))
        kubeconfig = standin.kubeconfig(tmp_path / "kubeconfig.json")
        code, out, _ = wasp(target, "-n", NS, "--kubeconfig", str(kubeconfig), "-o", "json")
    doc = json.loads(out)
    assert (code, [f["code"] for f in doc["findings"]]) == (1, codes)
    assert any("v1alpha2" in note and "no schema" in note for note in doc["notes"]) is named
