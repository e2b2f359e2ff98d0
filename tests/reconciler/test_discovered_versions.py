"""The scheduling API versions are discovered, never hard-coded or guessed (docs/coexistence.md,
webhook/governed/apis.py): the pure choice, and the reconciler's startup and ``wasp doctor``'s
discovery check against the stand-in with a version removed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.standin import StandIn
from webhook.doctor.checks import Facts, checks
from webhook.governed.apis import choose
from webhook.kube.api import Api, connect
from webhook.reconciler.startup import scheduling_apis

BETA = frozenset({"workloads", "podgroups"})
ALPHA3 = frozenset({"workloads", "podgroups", "compositepodgroups"})


@pytest.mark.parametrize(
    ("served", "write", "versions", "problems"),
    [
        pytest.param({"v1beta1": BETA, "v1alpha3": ALPHA3}, True,
                     {"Workload": "v1beta1", "PodGroup": "v1beta1", "CompositePodGroup": "v1alpha3"}, [], id="1.37"),
        pytest.param({"v1": BETA, "v1beta1": BETA}, True, {"Workload": "v1beta1", "PodGroup": "v1beta1"},
                     ["CompositePodGroup"], id="a newer version beside: wasp's own is used"),
        pytest.param({"v1alpha2": BETA}, True, {}, ["Workload", "PodGroup", "CompositePodGroup"],
                     id="only a version wasp has no schema for: reported"),
        pytest.param({"v1alpha3": ALPHA3}, True, {"CompositePodGroup": "v1alpha3"}, ["Workload", "PodGroup"],
                     id="writing needs the emitted version"),
        pytest.param({"v1alpha3": ALPHA3}, False,
                     {"Workload": "v1alpha3", "PodGroup": "v1alpha3", "CompositePodGroup": "v1alpha3"}, [],
                     id="reading takes any version wasp validates"),
        pytest.param({}, False, {}, ["Workload", "PodGroup", "CompositePodGroup"], id="the group is not served"),
    ],
)  # fmt: skip
def test_the_version_of_each_kind(served: dict, write: bool, versions: dict, problems: list) -> None:
    chosen = choose(served, write=write)
    assert chosen.versions == versions and sorted(chosen.problems) == sorted(problems)


def test_a_version_without_a_schema_is_named_not_guessed() -> None:
    chosen = choose({"v1alpha2": BETA}, write=True)
    assert "v1alpha2" in chosen.problems["Workload"] and "does not guess" in chosen.problems["Workload"]
    assert (
        chosen.missing["Workload"]
        == "scheduling.k8s.io/v1beta1/workloads (served in v1alpha2 only: no schema in this wasp)"
    )


@pytest.mark.parametrize(
    ("args", "versions", "problem"),
    [
        pytest.param((), {"Workload": "v1beta1", "PodGroup": "v1beta1"}, None, id="control: the stand-in as 1.37"),
        pytest.param(("--hide", "scheduling.k8s.io/v1beta1/workloads", "--hide", "scheduling.k8s.io/v1beta1/podgroups",
                      "--resource", "scheduling.k8s.io/v1alpha2/workloads/Workload",
                      "--resource", "scheduling.k8s.io/v1alpha2/podgroups/PodGroup"),
                     {}, "v1alpha2", id="v1beta1 removed, v1alpha2 served"),
        pytest.param(("--hide", "scheduling.k8s.io/v1beta1/workloads"), {"PodGroup": "v1beta1"},
                     "does not serve workloads", id="workloads removed"),
    ],
)  # fmt: skip
def test_reconciler_startup_uses_what_discovery_lists(
    tmp_path: Path, args: tuple[str, ...], versions: dict, problem: str | None
) -> None:
    with StandIn(*args) as standin:
        api = Api(connect(standin.kubeconfig(tmp_path / "kubeconfig")))
        resources, problems = scheduling_apis(api, composite=False)
        doctor = checks(Facts(now=datetime.now(UTC), version={"major": "1", "minor": "37"}, served={
            f"scheduling.k8s.io/{v}": frozenset(names or ()) for v, names in api.group_versions("scheduling.k8s.io").items()
        }))  # fmt: skip
    assert {k: r.version for k, r in resources.items() if k != "CompositePodGroup"} == versions
    if problem is None:
        assert problems == []
    else:
        assert problems and all("kube-apiserver needs" in p for p in problems) and problem in problems[0]
    discovery = {c.id: c for c in doctor if c.id in ("api/workloads", "api/podgroups")}
    if problem == "v1alpha2":
        assert (
            "served in scheduling.k8s.io/v1alpha2, which wasp has no schema for"
            in discovery["api/workloads"].detail
        )
        assert discovery["api/workloads"].verdict == "fail"
