"""``wasp audit`` against the STAND-IN API server: the scenario of tests/audit/scenario.py
(valid, invalid, drifted, missing and extra objects, foreign gangs of the three systems)."""

from __future__ import annotations

import json
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from . import scenario
from .conftest import POLICY_ARGS, Cluster, start

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[tuple[Cluster, dict[str, Json]]]:
    for cluster in start(tmp_path_factory.mktemp("audit")):
        yield cluster, scenario.build(cluster)


def keys(doc: Json) -> set[tuple[str, str, str, str]]:
    """(type, object kind, object name, path) of every finding."""
    return {(f["type"], f["object"]["kind"], f["object"]["name"], f["path"]) for f in doc["findings"]}


def named(made: dict[str, Json], key: str) -> str:
    return str(made[key]["metadata"]["name"])


EXPECTED = [
    pytest.param(("FieldValueInvalid", "Trainer", "invalid", "spec.scheduling.schedulingPolicy.gang.minCount"), id="invalid-field"),
    pytest.param(("MinCountDrift", "PodGroup", "@drifted-group", "spec.schedulingPolicy.gang.minCount"), id="mincount-drift"),
    pytest.param(("Missing", "Workload", "*", ""), id="missing-workload"),
    pytest.param(("Missing", "PodGroup", "*", ""), id="missing-podgroup"),
    pytest.param(("Extra", "PodGroup", "good-leftover", ""), id="extra-group"),
    pytest.param(("NameTaken", "Trainer", "taken", ""), id="owned-by-someone-else"),
    pytest.param(("Orphaned", "Workload", "@deleted-workload", ""), id="orphaned"),
    pytest.param(("SeveralPodGroups", "Trainer", "several", ""), id="several-matches"),
    pytest.param(("PodGroupNotFound", "Pod", "orphan", "spec.schedulingGroup.podGroupName"), id="pod-names-missing-group"),
    pytest.param(("ForeignGang", "PodGroup", "vc", ""), id="volcano"),
    pytest.param(("ForeignGang", "PodGroup", "co", ""), id="scheduler-plugins"),
    pytest.param(("ForeignGang", "KueuePodGroup", "kq", ""), id="kueue"),
    pytest.param(("BothGangs", "PodGroup", "vc", ""), id="both-gangs"),
]  # fmt: skip


@pytest.mark.parametrize("expected", EXPECTED)
def test_each_kind_of_finding_is_reported_with_its_type_and_path(world, expected) -> None:
    cluster, made = world
    code, doc = cluster.audit("-n", "ml", "--chunk-size", "2")
    kind, name = expected[1], expected[2]
    if name.startswith("@"):
        name = named(made, name[1:])
    found = keys(doc)
    if name == "*":  # a missing object: named by the compiler, owned by the Trainer "missing"
        assert any(f["type"] == expected[0] and f["object"]["kind"] == kind and f["owner"]["name"] == "missing"
                   for f in doc["findings"])  # fmt: skip
    else:
        assert (expected[0], kind, name, expected[3]) in found
    assert code == 1


def test_objects_in_sync_and_other_namespaces_give_no_finding(world) -> None:
    cluster, made = world
    _, doc = cluster.audit("-n", "ml")
    about = {f["object"]["name"] for f in doc["findings"]} | {
        (f["owner"] or {}).get("name") for f in doc["findings"]
    }
    assert named(made, "stamped-pod") not in about
    # The good Trainer's only finding is the leftover group it controls.
    assert [
        f["type"] for f in doc["findings"] if "good" in (f["object"]["name"], (f["owner"] or {}).get("name"))
    ] == ["Extra"]
    assert "elsewhere" not in about  # -n ml only
    assert doc["summary"]["namespaces"] == 1 and doc["summary"]["objects"] == 6


def test_all_namespaces_and_a_selector_scope_the_governed_objects(world) -> None:
    cluster, made = world
    _, everywhere = cluster.audit("-A")
    assert (
        "FieldValueInvalid",
        "Trainer",
        "elsewhere",
        "spec.scheduling.schedulingPolicy.gang.minCount",
    ) in keys(everywhere)
    assert everywhere["summary"]["namespaces"] >= 2  # ml and other (tests below add more)
    _, none = cluster.audit("-n", "ml", "-l", "app=nothing-has-this")
    assert none["summary"]["objects"] == 0
    # Unselected owners are not taken for missing ones: no orphans with a selector.
    assert "Orphaned" not in {f["type"] for f in none["findings"]}


def test_foreign_gangs_carry_their_native_equivalent(world) -> None:
    cluster, _ = world
    _, doc = cluster.audit("-n", "ml")
    gangs = {f["detail"]["system"]: f["detail"] for f in doc["findings"] if f["type"] == "ForeignGang"}
    assert gangs["volcano"]["native"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
    assert set(gangs["volcano"]["untranslated"]) == {"queue"}
    assert gangs["scheduler-plugins"]["native"] == {"schedulingPolicy": {"gang": {"minCount": 2}}}
    assert set(gangs["scheduler-plugins"]["untranslated"]) == {"scheduleTimeoutSeconds"}
    assert (gangs["kueue"]["native"], gangs["kueue"]["pods"]) == (
        {"schedulingPolicy": {"gang": {"minCount": 2}}},
        2,
    )
    assert (gangs["volcano"]["pods"], gangs["volcano"]["podsInNativeGroups"]) == (2, 1)


def test_lists_are_read_a_page_at_a_time(world) -> None:
    cluster, _ = world
    before = cluster.standin.stats().get("list pods", 0)
    cluster.audit("-n", "ml", "--chunk-size", "2")
    # 8 pods in ml: 4 pages of 2 (the last one says there is no more).
    assert cluster.standin.stats()["list pods"] - before == 4


@pytest.mark.parametrize("output", [pytest.param("text", id="text"), pytest.param("junit", id="junit")])
def test_text_and_junit_name_the_findings_and_the_summary(world, output: str) -> None:
    cluster, _ = world
    code, out, _ = cluster.run("audit", "-n", "ml", "-o", output, *POLICY_ARGS)
    assert code == 1
    assert "PodGroupNotFound" in out and "wasp audit: 6 governed objects" in out
    if output == "junit":
        assert (
            out.startswith("<?xml")
            and '<testsuite name="ml"' in out
            and '<failure type="FieldValueInvalid"' in out
        )
        # Well formed, and each suite's counts are its own cases' (they wait in a spooled file).
        every = cluster.run("audit", "-A", "-o", "junit", *POLICY_ARGS)[1]
        suites = ET.fromstring(every).findall("testsuite")
        assert len(suites) >= 2
        for suite in suites:
            cases = suite.findall("testcase")
            assert int(suite.get("tests", "-1")) == len(cases) > 0
            assert int(suite.get("failures", "-1")) == sum(1 for c in cases if c.find("failure") is not None)


def test_a_clean_namespace_exits_0(world) -> None:
    cluster, _ = world
    cluster.create("/api/v1/namespaces", {"metadata": {"name": "empty"}})
    code, doc = cluster.audit("-n", "empty")
    assert (code, doc["findings"], doc["exitCode"]) == (0, [], 0)


def test_an_unreachable_cluster_exits_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.json"
    kubeconfig.write_text('{"apiVersion": "v1", "kind": "Config", "current-context": "x", "clusters": [{"name": "x", '
                          '"cluster": {"server": "http://127.0.0.1:9"}}], "users": [{"name": "x", "user": {}}], '
                          '"contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}')  # fmt: skip
    code, out, err = Cluster(t.cast(t.Any, None), kubeconfig).run("audit", "-n", "ml")
    assert code == 2 and "cannot read the cluster" in err


def test_without_the_was_apis_objects_are_only_validated(tmp_path: Path) -> None:
    for cluster in start(tmp_path, "--feature-gates", "GenericWorkload=false,CompositePodGroup=false"):
        scenario.governed(cluster, "bad", objects=False, min_count=-3)
        scenario.governed(cluster, "fine", objects=False)
        code, doc = cluster.audit("-n", "ml")
        assert {(f["type"], f["path"]) for f in doc["findings"]} == {
            ("FieldValueInvalid", "spec.scheduling.schedulingPolicy.gang.minCount")
        }
        assert "scheduling.k8s.io/v1beta1/workloads" in doc["summary"]["notServed"] and code == 1


@pytest.mark.parametrize(
    ("flag", "shown"),
    [pytest.param("--progress", True, id="forced-on"), pytest.param(None, False, id="not-a-terminal")],
)
def test_the_progress_line_is_only_on_a_terminal(world, flag: str | None, shown: bool) -> None:
    cluster, _ = world
    _, _, err = cluster.run("audit", "-n", "ml", *POLICY_ARGS, *([flag] if flag else []))
    assert ("wasp audit: namespace ml (1/1)" in err) == shown


def test_warnings_exit_0_unless_strict(world) -> None:
    cluster, _ = world
    ns = "warn-only"
    cluster.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    cluster.create(scenario.POD_GROUPS.format(ns=ns), {"metadata": {"name": "native"},
                   "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})  # fmt: skip
    cluster.create(scenario.VOLCANO.format(ns=ns), {"metadata": {"name": "vc"}, "spec": {"minMember": 1}})
    scenario.pod(cluster, "both", ns=ns, group="native", annotations={"scheduling.k8s.io/group-name": "vc"})
    code, doc = cluster.audit("-n", ns)
    assert [(f["type"], f["severity"]) for f in doc["findings"]] == [
        ("ForeignGang", "info"),
        ("BothGangs", "warning"),
    ]
    assert code == 0
    assert cluster.audit("-n", ns, "--strict")[0] == 1


def test_a_failing_list_mid_audit_exits_2_with_the_json_closed(world) -> None:
    cluster, _ = world
    cluster.standin.fault(500, verb="list", plural="pods")
    code, out, err = cluster.run("audit", "-n", "ml", "-o", "json", *POLICY_ARGS)
    doc = json.loads(out)
    assert (code, doc["exitCode"]) == (2, 2) and "cannot read the cluster: 500" in err


def test_without_n_the_contexts_namespace_is_audited(world, tmp_path: Path) -> None:
    cluster, _ = world
    config = json.loads(cluster.kubeconfig.read_text())
    config["contexts"][0]["context"]["namespace"] = "other"
    (tmp_path / "kc.json").write_text(json.dumps(config))
    code, out, _ = Cluster(cluster.standin, tmp_path / "kc.json").run("audit", "-o", "json", *POLICY_ARGS)
    assert {f["object"]["name"] for f in json.loads(out)["findings"]} == {"elsewhere"}
