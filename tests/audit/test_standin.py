"""What the STAND-IN API server (tests/standin) gained for audit and doctor: /version, dry-run
creates, gated fields dropped, paginated lists with continue tokens and 410, label selectors."""

from __future__ import annotations

import typing as t
import urllib.error
from pathlib import Path

import orjson
import pytest

from tests.standin import StandIn
from webhook.cli.cluster import Cluster
from webhook.kube.api import PODS, Api, connect

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/ml/podgroups"
GATED: t.Final = {"schedulingPolicy": {"basic": {}}, "schedulingConstraints": {"topology": [{"key": "zone"}]},
                  "resourceClaims": [{"name": "c", "resourceClaimTemplateName": "t"}]}  # fmt: skip


def error(standin: StandIn, method: str, path: str, body: object = None) -> tuple[int, Json]:
    with pytest.raises(urllib.error.HTTPError) as exc:
        standin.request(method, path, body)
    return exc.value.code, orjson.loads(exc.value.read())


def test_version_and_discovery_of_what_audit_and_doctor_read() -> None:
    with StandIn("--server-version", "1.36") as standin:
        assert standin.request("GET", "/version")["gitVersion"] == "v1.36.0-standin"
        hooks = standin.request("GET", "/apis/admissionregistration.k8s.io/v1")["resources"]
        assert {(r["name"], r["namespaced"]) for r in hooks} == {
            ("validatingwebhookconfigurations", False), ("mutatingwebhookconfigurations", False)}  # fmt: skip
        assert "endpointslices" in {
            r["name"] for r in standin.request("GET", "/apis/discovery.k8s.io/v1")["resources"]
        }


def test_a_dry_run_create_answers_but_stores_nothing() -> None:
    with StandIn() as standin:
        answer = standin.create(PODGROUPS + "?dryRun=All", {"metadata": {"name": "a"}, "spec": GATED})
        assert answer["spec"] == GATED and answer["metadata"]["uid"]
        assert standin.objects("scheduling.k8s.io/v1beta1/podgroups") == []
        standin.create(PODGROUPS, {"metadata": {"name": "a"}, "spec": {}})
        assert error(standin, "POST", PODGROUPS + "?dryRun=All", {"metadata": {"name": "a"}})[0] == 409


@pytest.mark.parametrize(
    ("gates", "kept"),
    [
        pytest.param("", {"schedulingPolicy", "schedulingConstraints", "resourceClaims"}, id="all-on"),
        pytest.param(
            "TopologyAwareWorkloadScheduling=false", {"schedulingPolicy", "resourceClaims"}, id="tas-off"
        ),
        pytest.param(
            "DRAWorkloadResourceClaims=false", {"schedulingPolicy", "schedulingConstraints"}, id="dra-off"
        ),
    ],
)
def test_a_gate_off_drops_its_fields_on_create(gates: str, kept: set[str]) -> None:
    with StandIn(*(("--feature-gates", gates) if gates else ())) as standin:
        for query in ("?dryRun=All", ""):
            assert (
                set(standin.create(PODGROUPS + query, {"metadata": {"name": "a"}, "spec": GATED})["spec"])
                == kept
            )


def test_generic_workload_off_serves_no_workloads_or_podgroups() -> None:
    with StandIn("--feature-gates", "GenericWorkload=false") as standin:
        assert error(standin, "GET", "/apis/scheduling.k8s.io/v1beta1")[0] == 404  # nothing left in it
        assert error(standin, "GET", PODGROUPS)[0] == 404
        assert "compositepodgroups" in {
            r["name"] for r in standin.request("GET", "/apis/scheduling.k8s.io/v1alpha3")["resources"]
        }


def test_pages_follow_continue_tokens_in_name_order_with_a_selector() -> None:
    with StandIn() as standin:
        for i in range(5):
            standin.create(
                "/api/v1/namespaces/ml/pods", {"metadata": {"name": f"p{4 - i}", "labels": {"n": str(i % 2)}}}
            )
        names, token = [], ""
        while True:
            doc = standin.request(
                "GET", f"/api/v1/namespaces/ml/pods?limit=2&labelSelector=n%3D0&continue={token}"
            )
            names += [p["metadata"]["name"] for p in doc["items"]]
            token = doc["metadata"].get("continue", "")
            if not token:
                break
        assert names == ["p0", "p2", "p4"]
        assert error(standin, "GET", "/api/v1/namespaces/ml/pods?limit=2&continue=garbage")[0] == 400


def test_a_token_from_before_a_compaction_is_410_with_a_token_to_go_on(tmp_path: Path) -> None:
    with StandIn() as standin:
        for i in range(4):
            standin.create("/api/v1/namespaces/ml/pods", {"metadata": {"name": f"p{i}"}})
        first = standin.request("GET", "/api/v1/namespaces/ml/pods?limit=2")
        standin.compact()
        code, status = error(
            standin, "GET", f"/api/v1/namespaces/ml/pods?limit=2&continue={first['metadata']['continue']}"
        )
        assert (code, status["reason"]) == (410, "Expired") and status["metadata"]["continue"]
        # The client goes on with the new token, and counts the list as inconsistent.
        cluster = Cluster(Api(connect(standin.kubeconfig(tmp_path / "kc.json"))), page_size=2)
        pages = cluster.pages(PODS, "ml")
        assert [p["metadata"]["name"] for p in next(pages)] == ["p0", "p1"]
        standin.compact()
        assert [p["metadata"]["name"] for page in pages for p in page] == ["p2", "p3"]
        assert cluster.inconsistent == 1


def test_an_extra_resource_may_be_cluster_scoped() -> None:
    with StandIn("--resource", "example.com/v1/clusterthings/ClusterThing/cluster") as standin:
        (found,) = standin.request("GET", "/apis/example.com/v1")["resources"]
        assert (found["name"], found["namespaced"]) == ("clusterthings", False)
        made = standin.create("/apis/example.com/v1/clusterthings", {"metadata": {"name": "a"}})
        assert "namespace" not in made["metadata"]
