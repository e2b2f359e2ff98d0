"""Native mode for every integration (docs/policy-format.md ``spec.native``, docs/coexistence.md):
the stand-in API server serves the integration's CRD; a policy marks a schema field as the
controller's native WAS field; while objects exist the CRD is upgraded to carry it. Before: the
adapter (wasp stamps, the reconciler creates). After: a new object gets nothing from wasp (no
stamp, no write, a ``ManagedNatively`` report), and an object wasp already manages keeps its
groups and stamps (stopping halfway would half-group it)."""

from __future__ import annotations

import copy
import typing as t
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.integrations.chain import Chain
from tests.integrations.test_all_or_nothing import REPLAYS
from tests.standin import StandIn
from webhook.governed.reconcile import Observed, plan
from webhook.policy import PolicySet
from webhook.policy.native import Native
from webhook.watches.identities import watch_identities

Json = dict[str, t.Any]
DATA = Path(__file__).parent / "data"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# A field no released controller has: the test's stand-in for each controller's native marker.
MARKER = ("spec", "nativeScheduling")
CRD_FILES = {"jobset": "jobset", "trainjob": "trainjob", "trainjob+jobset": "trainjob", "rayjob": "rayjob",
             "raycluster": "raycluster", "mpijob": "mpijob", "volcano-job": "volcano-job",
             "leaderworkerset": "leaderworkerset"}  # fmt: skip


def _with_marker(policies: PolicySet, kind: str) -> PolicySet:
    marked = [
        replace(p, native=Native(crd_fields=(MARKER,))) if p.kind == kind else p for p in policies.policies
    ]
    return PolicySet(marked, gates=policies.gates, notes=policies.notes)


def _crd(name: str) -> Json:
    return t.cast(Json, yaml.safe_load((DATA / CRD_FILES[name] / "crd.yaml").read_text()))


def _upgraded(crd: Json) -> Json:
    out = copy.deepcopy(crd)
    for version in out["spec"]["versions"]:
        schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
        schema["properties"]["spec"].setdefault("properties", {})[MARKER[1]] = {"type": "object"}
        version["schema"] = {"openAPIV3Schema": schema}
    return out


def _stamped(chain: Chain) -> list[str]:
    return [p.pod for p in chain.landings() if p.group is not None]


@pytest.mark.parametrize("name", REPLAYS)
def test_a_crd_upgrade_switches_the_kind_from_adapter_to_native_while_objects_exist(
    name: str, tmp_path: Path
) -> None:
    make, replay, exempt = REPLAYS[name]
    probe = Chain(make())
    replay(probe)
    root = probe.objects[0]
    group, kind = root["apiVersion"].rpartition("/")[0], root["kind"]
    policies = _with_marker(make(), kind)
    crd = _crd(name)
    with StandIn("--resource", "apiextensions.k8s.io/v1/customresourcedefinitions/CustomResourceDefinition/cluster",
                 "--bookmark-interval", "0.2") as standin:  # fmt: skip
        stored = standin.create(CRDS, crd)
        attached, watch = watch_identities(policies, kubeconfig=standin.kubeconfig(tmp_path / "kubeconfig"))
        assert watch is not None and attached.grouping is not None
        watch.start()
        try:
            assert watch.wait(5.0)
            assert attached.grouping.native(group, kind) is None  # the adapter, before the upgrade
            before = Chain(policies)
            replay(before)
            assert _stamped(before)
            ours = before._planned()[0]
            assert ours  # the reconciler creates the Workload
            upgraded = _upgraded(crd)
            upgraded["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            standin.request("PUT", f"{CRDS}/{crd['metadata']['name']}", upgraded)
            standin.wait_for(lambda: attached.grouping.native(group, kind) is not None, 5, "native mode")
            why = attached.grouping.native(group, kind)
            assert why is not None and "nativeScheduling" in why

            # A new object of the kind: nothing stamped, nothing created, reported.
            after = Chain(policies)
            after.natives = {(group, kind): why}
            replay(after)
            assert _stamped(after) == [p for p in _stamped(after) if p.startswith(exempt or ("\0",))] == []
            decided = plan(after.objects[0], after.policies.with_grouping(after.grouping()), Observed())
            assert decided.writes == () and [r.reason for r in decided.reports] == ["ManagedNatively"]

            # The object wasp already manages keeps its groups: a replacement pod is stamped.
            before.natives = {(group, kind): why}
            before.foreign = ours
            # A replacement of the last member wasp stamped (a pod, or a child such as a Job).
            key = next(
                k
                for k in reversed(list(before.patched))
                if before.patched[k] and k != "/".join((kind, root["metadata"]["name"]))
            )
            again = copy.deepcopy(before.admitted[key])
            again["metadata"]["name"] += "-replacement"
            assert before.create(again) != again and before.patched[f"{key}-replacement"]
            kept = plan(
                before.objects[0], before.policies.with_grouping(before.grouping()), Observed(workloads=ours)
            )
            assert "ManagedNatively" not in [r.reason for r in kept.reports]
        finally:
            watch.stop()
