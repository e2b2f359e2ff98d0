"""The webhook's identity watch against the stand-in API server: list, watch, 410 relist, GET, readiness."""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import sys
import time
import typing as t
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from tests.ports import free_ports
from tests.standin import ROOT, StandIn
from webhook import certs
from webhook.governed.membership import IdentityCache, IdentityUnavailable
from webhook.governed.workloads import pod_group_name
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.policy.model import Identity
from webhook.server.app import create_app, state_of
from webhook.server.settings import Settings
from webhook.watches.identities import IdentityWatch, watch_identities

Json = dict[str, t.Any]
LWS_RESOURCE = "leaderworkerset.x-k8s.io/v1/leaderworkersets/LeaderWorkerSet"
LWSS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ml/leaderworkersets"
LABEL = "leaderworkerset.sigs.k8s.io"


@pytest.fixture
def standin() -> t.Iterator[StandIn]:
    with StandIn("--resource", LWS_RESOURCE, "--bookmark-interval", "0.2") as server:
        yield server


@pytest.fixture
def kubeconfig(standin: StandIn, tmp_path: Path) -> Path:
    return standin.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture(scope="module")
def policies() -> PolicySet:
    return PolicySet.load(integration_paths(["leaderworkerset"]))


def lws(name: str) -> Json:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "ml"}, "spec": {"replicas": 1}}  # fmt: skip


def _uid(cache: IdentityCache, name: str, *, fetch: bool = False) -> str | None:
    found = cache.identity_of("ml", name) if fetch else cache.cached("ml", name)
    return found.uid if found is not None else None


def started(policies: PolicySet, kubeconfig: Path) -> tuple[IdentityWatch, t.Any]:
    attached, watch = watch_identities(policies, kubeconfig=kubeconfig)
    assert watch is not None
    watch.watch_timeout = 2  # short server-side watches: resumes are exercised too
    watch.start()
    assert watch.wait(5.0)
    return watch, attached


def test_list_then_watch_added_and_deleted(standin: StandIn, kubeconfig: Path, policies: PolicySet) -> None:
    before = standin.create(LWSS, lws("before"))
    watch, _ = started(policies, kubeconfig)
    cache = watch.caches["leaderworkerset"]
    try:
        assert cache.cached("ml", "before") == Identity(  # from the list, with the groups planned for it
            before["metadata"]["uid"],
            frozenset({pod_group_name("before", before["metadata"]["uid"], "replica", 0)}),
        )
        after = standin.create(LWSS, lws("after"))
        standin.wait_for(lambda: _uid(cache, "after") == after["metadata"]["uid"], 5, "ADDED")
        standin.request("DELETE", f"{LWSS}/before")
        standin.wait_for(lambda: cache.cached("ml", "before") is None, 5, "DELETED")
    finally:
        watch.stop()


def test_a_compacted_watch_relists_and_sees_what_happened_meanwhile(
    standin: StandIn, kubeconfig: Path, policies: PolicySet
) -> None:
    standin.create(LWSS, lws("gone"))
    watch, _ = started(policies, kubeconfig)
    cache = watch.caches["leaderworkerset"]
    try:
        assert cache.cached("ml", "gone") is not None
        relists = standin.stats().get("list leaderworkersets", 0)
        # While no watch runs: a delete and a create, then the history is compacted away.
        standin.fault(503, verb="watch", plural="leaderworkersets", count=3)
        standin.drop_watches()
        standin.request("DELETE", f"{LWSS}/gone")
        new = standin.create(LWSS, lws("new"))
        standin.compact()
        standin.wait_for(lambda: _uid(cache, "new") == new["metadata"]["uid"], 8, "relist")
        assert cache.cached("ml", "gone") is None
        assert standin.stats().get("list leaderworkersets", 0) > relists
    finally:
        watch.stop()


def test_a_pod_ahead_of_the_watch_is_resolved_by_one_get(
    standin: StandIn, kubeconfig: Path, policies: PolicySet
) -> None:
    watch, _ = started(policies, kubeconfig)
    cache = watch.caches["leaderworkerset"]
    try:
        watch.stop()  # nothing arrives by the watch from now on
        created = standin.create(LWSS, lws("fresh"))
        assert _uid(cache, "fresh", fetch=True) == created["metadata"]["uid"]
        assert cache.identity_of("ml", "missing") is None
        gets = standin.stats().get("get leaderworkersets", 0)
        assert cache.identity_of("ml", "missing") is None  # believed for a while: no second GET
        assert standin.stats().get("get leaderworkersets", 0) == gets
        standin.fault(500, verb="get", plural="leaderworkersets")
        with pytest.raises(IdentityUnavailable, match="HTTP 500"):
            cache.identity_of("ml", "other")
        standin.stop()  # no API at all: refused at once, well inside a webhook's 10 s
        started_at = time.monotonic()
        with pytest.raises(IdentityUnavailable, match="failed"):
            cache.identity_of("ml", "another")
        assert time.monotonic() - started_at < 3.5
    finally:
        watch.stop()


def test_a_kind_the_cluster_does_not_serve_is_listed_and_empty(tmp_path: Path, policies: PolicySet) -> None:
    """Without the LWS CRD no LWS pod can exist: the webhook must not stay unready for it."""
    with StandIn("--bookmark-interval", "0.2") as bare:
        watch, _ = started(policies, bare.kubeconfig(tmp_path / "kubeconfig"))
        try:
            assert watch.synced()
            # Only the grouping cache's feeds (docs/decisions.md §30) are watched, not the LWS.
            assert {i.resource.plural for i in watch.informers} <= {"workloads", "pods"}
            assert watch.caches["leaderworkerset"].identity_of("ml", "vllm") is None  # the GET: 404
        finally:
            watch.stop()


def review(pod: Json) -> bytes:
    request = {"uid": str(uuid.uuid4()), "kind": {"group": "", "version": "v1", "kind": "Pod"},
               "resource": {"group": "", "version": "v1", "resource": "pods"}, "operation": "CREATE",
               "namespace": "ml", "object": pod, "userInfo": {"username": "system:serviceaccount:kube-system:statefulset-controller"}}  # fmt: skip
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


def member_pod() -> Json:
    meta = {"name": "vllm-0", "namespace": "ml", "labels": {f"{LABEL}/name": "vllm", f"{LABEL}/group-index": "0"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm", "uid": "s", "controller": True}]}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def test_the_webhook_is_unready_and_refuses_member_pods_until_it_has_listed(
    standin: StandIn, kubeconfig: Path, policies: PolicySet, tmp_path: Path
) -> None:
    dev = certs.ensure_dev_certs(tmp_path / "certs", now=datetime.now(UTC))
    settings = Settings(cert_file=dev.cert_file, key_file=dev.key_file)
    created = standin.create(LWSS, lws("vllm"))
    app = create_app(settings, policies=policies)
    client, watch = app.test_client(), state_of(app).identities
    assert watch is not None
    assert not watch.synced()  # the worker takes no connection yet (readiness: the test below)
    answer = orjson.loads(
        client.post("/mutate", data=review(member_pod()), content_type="application/json").data
    )
    status = answer["response"]["status"]
    assert (answer["response"]["allowed"], status["code"], "retry" in status["message"]) == (False, 503, True)
    watch.kubeconfig = kubeconfig  # in a cluster: the in-cluster config
    watch.start()
    try:
        assert watch.wait(5.0)
        assert watch.synced()
        answer = orjson.loads(
            client.post("/mutate", data=review(member_pod()), content_type="application/json").data
        )
        patch = orjson.loads(base64.b64decode(answer["response"]["patch"]))
        assert patch == [{"op": "add", "path": "/spec/schedulingGroup", "value": {
            "podGroupName": pod_group_name("vllm", created["metadata"]["uid"], "replica", 0)}}]  # fmt: skip
    finally:
        watch.stop()


def test_without_a_membership_policy_there_is_no_watch(tmp_path: Path) -> None:
    dev = certs.ensure_dev_certs(tmp_path / "certs", now=datetime.now(UTC))
    app = create_app(Settings(cert_file=dev.cert_file, key_file=dev.key_file), policies=PolicySet.load())
    assert state_of(app).identities is None


# What building the app loads, in a fresh interpreter (other tests import the client here).
_LOADS = """
import json, sys
from datetime import UTC, datetime
from pathlib import Path
from webhook import certs
from webhook.policy import PolicySet
from webhook.policy.integrations import integration_paths
from webhook.server.app import create_app
from webhook.server.settings import Settings
dev = certs.ensure_dev_certs(Path(sys.argv[1]), now=datetime.now(UTC))
policies = PolicySet.load(integration_paths(sys.argv[2:]))
create_app(Settings(cert_file=dev.cert_file, key_file=dev.key_file), policies=policies)
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize(
    ("integrations", "loaded"),
    [
        pytest.param([], False, id="no stamping policy: no client"),
        pytest.param(["leaderworkerset"], True, id="a membership policy: the watches load it (control)"),
    ],
)
def test_the_server_loads_the_kubernetes_client_only_for_a_stamping_policy(
    tmp_path: Path, integrations: list[str], loaded: bool
) -> None:
    # The import-linter contract lets create_app import webhook.watches because it does so lazily.
    argv = [sys.executable, "-c", _LOADS, str(tmp_path / "certs"), *integrations]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
    modules = set(orjson.loads(out))
    assert ("kubernetes" in modules, "webhook.watches" in modules) == (loaded, loaded)


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:  # a probe waits 2 s for a handshake
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def test_wasp_serve_is_ready_only_once_its_workers_have_listed(
    standin: StandIn, kubeconfig: Path, tmp_path: Path
) -> None:
    """The real server (gunicorn, forked workers): not ready while listing fails, then ready
    and stamping a member pod with the UID its worker's watch delivered."""
    created = standin.create(LWSS, lws("vllm"))
    standin.fault(503, verb="list", plural="leaderworkersets", count=1000)
    port, metrics_port = free_ports(2)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONPATH": str(ROOT)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    args = ["serve", "--dev", "--state-dir", str(tmp_path / "state"), "--integrations", "leaderworkerset",
            "--port", str(port), "--metrics-port", str(metrics_port), "--workers", "1"]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", "from webhook.cli.main import main; main()", *args],
                                cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
    readyz = f"http://127.0.0.1:{metrics_port}/readyz"
    try:
        # The worker runs and lists (refused), so it has not listed: the pod is not ready.
        standin.wait_for(lambda: standin.stats().get("list leaderworkersets", 0) > 0, 10, "a list")
        assert _get(readyz) == 503
        standin.clear_faults()
        standin.wait_for(lambda: _get(readyz) == 200, 10, "readiness")
        context = ssl.create_default_context(cafile=str(tmp_path / "state" / "ca.crt"))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/mutate", data=review(member_pod()),
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=5, context=context) as resp:
            answer = orjson.loads(resp.read())
        patch = orjson.loads(base64.b64decode(answer["response"]["patch"]))
        assert patch[0]["value"] == {
            "podGroupName": pod_group_name("vllm", created["metadata"]["uid"], "replica", 0)
        }
    finally:
        proc.terminate()
        proc.wait(timeout=15)
