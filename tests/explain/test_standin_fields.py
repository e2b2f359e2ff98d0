"""What the STAND-IN API server (tests/standin) gained for explain: Nodes (cluster-scoped) and
field selectors on the fields kube-apiserver indexes for Pods, Events and Nodes."""

from __future__ import annotations

import urllib.error

import orjson
import pytest

from tests.standin import StandIn

pytestmark = pytest.mark.slow
PODS = "/api/v1/namespaces/ml/pods"


def names(standin: StandIn, path: str) -> list[str]:
    return [i["metadata"]["name"] for i in standin.request("GET", path)["items"]]


def test_field_selectors_and_nodes() -> None:
    with StandIn() as standin:
        for name, node, phase in (("a", "n1", "Running"), ("b", "", "Pending"), ("c", "n2", "Succeeded")):
            spec = {"containers": [], **({"nodeName": node} if node else {})}
            standin.create(PODS, {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}})
        standin.create("/api/v1/namespaces/ml/events", {"metadata": {"name": "e"}, "reason": "FailedScheduling",
                                                        "involvedObject": {"kind": "Pod", "name": "b"}})  # fmt: skip
        standin.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        assert names(standin, PODS + "?fieldSelector=spec.nodeName%21%3D") == ["a", "c"]
        bound = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
        assert names(
            standin, "/api/v1/pods?fieldSelector=" + bound.replace("!", "%21").replace("=", "%3D")
        ) == ["a"]
        assert names(standin, PODS + "?fieldSelector=metadata.name%3Db") == ["b"]
        assert names(standin, "/api/v1/namespaces/ml/events?fieldSelector=reason%3DFailedScheduling") == ["e"]
        assert names(standin, "/api/v1/namespaces/ml/events?fieldSelector=reason%3DFailedCreate") == []
        assert names(standin, "/api/v1/nodes") == ["n1"]
        with pytest.raises(urllib.error.HTTPError) as exc:
            standin.request("GET", PODS + "?fieldSelector=spec.foo%3D1")
        assert exc.value.code == 400
        assert orjson.loads(exc.value.read())["message"] == "field label not supported: spec.foo"
