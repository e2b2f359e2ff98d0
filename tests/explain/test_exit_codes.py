"""What cannot be read exits 2 with one clear line (and, with -o json, a closed document);
colour only when asked or on a terminal; a namespace-scoped user still gets an answer."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.explain.conftest import dump_of, wasp
from tests.explain.scenarios import NS, SCENARIOS
from tests.explain.world import CRDS, StandinSink
from tests.standin import StandIn

Json = dict[str, t.Any]
UNREACHABLE: t.Final = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:9"}}],
                        "users": [{"name": "x", "user": {}}],
                        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}  # fmt: skip


def closed(out: str) -> Json:
    doc = t.cast(Json, json.loads(out))
    assert (doc["exitCode"], doc["verdict"], doc["findings"]) == (2, "unknown", [])
    return doc


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(None, "no such file or directory", id="missing"),
        pytest.param("items: [\n", "cannot read it", id="bad-yaml"),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems: []\n", "Trainer ml/resnet is not in the dump", id="not-in-it"
        ),
    ],
)
def test_a_dump_that_cannot_answer_exits_2(content: str | None, message: str, tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    if content is not None:
        dump.write_text(content)
    for output in ("text", "json"):
        code, out, err = wasp("trainer/resnet", "-n", NS, "--from", str(dump), "-o", output)
        assert code == 2 and message in err
        if output == "json":
            assert message in closed(out)["error"]


def test_an_unreachable_cluster_exits_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc.json"
    kubeconfig.write_text(json.dumps(UNREACHABLE))
    code, out, err = wasp("trainer/resnet", "-n", NS, "--kubeconfig", str(kubeconfig), "-o", "json")
    assert code == 2 and "cannot read the cluster" in err
    closed(out)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "message"),
    [
        pytest.param(None, "not found", id="not-found"),
        pytest.param("pods", "cannot read the cluster: 500", id="500"),
    ],
)
def test_a_cluster_that_cannot_answer_exits_2(fault: str | None, message: str, tmp_path: Path) -> None:
    with StandIn(*(x for crd in CRDS for x in ("--resource", crd))) as standin:
        if fault:
            SCENARIOS["can-run"].build(StandinSink(standin))
            standin.fault(500, verb="list", plural=fault)
        kubeconfig = standin.kubeconfig(tmp_path / "kc.json")
        code, out, err = wasp("trainer/resnet", "-n", NS, "--kubeconfig", str(kubeconfig), "-o", "json")
    assert code == 2 and message in err
    closed(out)


@pytest.mark.slow
def test_without_events_permission_the_answer_says_so(tmp_path: Path) -> None:
    scenario = SCENARIOS["pods-not-created"]
    with StandIn(*(x for crd in CRDS for x in ("--resource", crd))) as standin:
        scenario.build(StandinSink(standin))
        standin.fault(403, verb="list", plural="events", count=100)
        code, out, _ = wasp(
            "trainer/resnet", "-n", NS, "--kubeconfig", str(standin.kubeconfig(tmp_path / "kc")), "-o", "json"
        )
    doc = json.loads(out)
    assert (code, [f["code"] for f in doc["findings"]]) == (1, ["pods-not-created"])
    assert any(n.startswith("not read: events: 403") for n in doc["notes"])


@pytest.mark.parametrize(("flag", "ansi"), [("always", True), ("never", False), ("auto", False)])
def test_colour_only_when_asked_or_on_a_terminal(flag: str, ansi: bool, tmp_path: Path) -> None:
    target, dump = dump_of(SCENARIOS["pods-not-created"], tmp_path / "dump.yaml")
    _, out, _ = wasp(target, "-n", NS, "--from", str(dump), "--color", flag)
    assert ("\x1b[" in out) == ansi


def test_a_directory_of_lists_gives_the_same_answer(tmp_path: Path) -> None:
    target, dump = dump_of(SCENARIOS["insufficient-capacity"], tmp_path / "dump.yaml")
    whole = wasp(target, "-n", NS, "--from", str(dump), "-o", "json")
    split = tmp_path / "dir"
    split.mkdir()
    items = yaml.safe_load(dump.read_text())["items"]
    for kind in {i["kind"] for i in items}:
        (split / f"{kind}.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "List", "items": [i for i in items if i["kind"] == kind]}))  # fmt: skip
    assert wasp(target, "-n", NS, "--from", str(split), "-o", "json") == whole


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert wasp("resnet")[0] == 2
    assert wasp("nosuchkind/x", "--from", str(tmp_path))[0] == 2


def test_with_from_the_namespace_is_the_objects_when_it_is_the_only_one(tmp_path: Path) -> None:
    target, dump = dump_of(SCENARIOS["pods-not-created"], tmp_path / "dump.yaml")
    code, out, _ = wasp(target, "--from", str(dump), "-o", "json")
    assert (code, json.loads(out)["target"]["namespace"]) == (1, NS)
    items = yaml.safe_load(dump.read_text())["items"]
    other = [
        dict(i, metadata={**i["metadata"], "namespace": "other"}) for i in items if i["kind"] == "Trainer"
    ]
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items + other}))
    code, _, err = wasp(target, "--from", str(dump))
    assert code == 2 and "several namespaces" in err and "give -n" in err
