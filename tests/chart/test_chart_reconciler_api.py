"""The chart's reconciler RBAC against what `wasp reconcile` really requests.

`wasp reconcile` runs with the chart's rendered args (its policy files from the rendered
ConfigMap) against the stand-in API server (tests/standin; no kube-apiserver binary can be
obtained here), through every path that writes: cold start, a Lease, composite groups, an
`AlreadyExists` answer that is read back, an elastic resize, Events. The stand-in counts each
request by verb and resource; the set must be exactly what the rendered ClusterRole and Role
grant: nothing used that is not granted, and nothing granted that is never used.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
import yaml

from tests.chart import tools
from tests.standin import StandIn

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
TRAINERS: t.Final = "/apis/ml.example.com/v1/namespaces/ml/trainers"
SERVICES: t.Final = "/apis/serving.example.com/v1/namespaces/serving/inferenceservices"
CRDS: t.Final = (
    "ml.example.com/v1/trainers/Trainer",
    "serving.example.com/v1/inferenceservices/InferenceService",
)
NAMESPACE: t.Final = "wasp-system"


def _policy(path: str) -> Json:
    return t.cast(Json, yaml.safe_load((tools.REPO / path).read_text()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _trainer(name: str, workers: int) -> Json:
    return {
        "metadata": {"name": name},
        "spec": {"workers": workers, "scheduling": {"schedulingPolicy": {"gang": {}}}},
    }


def _service(name: str) -> Json:
    role = {"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {"spec": {}}}
    return {"metadata": {"name": name}, "spec": {"scheduling": {"schedulingPolicy": {"gang": {}}},
                                                 "roles": [{"name": "a", **role}, {"name": "b", **role}]}}  # fmt: skip


def _granted(objects: list[Json]) -> set[tuple[str, str]]:
    """What the roles grant as requests; ``<kind>/finalizers`` update is for the
    OwnerReferencesPermissionEnforcement plugin's check on blockOwnerDeletion, never a request."""
    rules = [r for kind in ("ClusterRole", "Role") for r in tools.find(objects, kind, "-reconciler")["rules"]]
    return {
        (verb, resource)
        for r in rules
        for resource in r["resources"]
        for verb in r["verbs"]
        if not resource.endswith("/finalizers")
    }


def _args(objects: list[Json], policies: Path, port: int, kubeconfig: Path) -> list[str]:
    [deployment] = [
        d for d in objects if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-reconciler")
    ]
    rendered = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    local = {"--policies": str(policies), "--probe-address": f"127.0.0.1:{port}"}
    args = [f"{a.split('=', 1)[0]}={local[a.split('=', 1)[0]]}" if a.split("=", 1)[0] in local else a
            for a in rendered]  # fmt: skip
    # Only the stand-in's address and short Lease timings are added.
    return [*args, f"--kubeconfig={kubeconfig}", "--identity=r", "--lease-duration=3", "--renew-deadline=2",
            "--retry-period=1", "--watch-timeout=5"]  # fmt: skip


def test_the_reconciler_uses_exactly_the_verbs_the_chart_grants(tmp_path: Path) -> None:
    values = {"server": {"featureGates": "CompositePodGroup=true"},
              "policies": {"user": {"trainer": _policy("examples/trainer/policy.yaml"),
                                    "inferenceservice": _policy("examples/rolebased/policy.yaml")}}}  # fmt: skip
    objects = tools.render(values, tmp=tmp_path, namespace=NAMESPACE)
    policies = tmp_path / "policies"
    policies.mkdir()
    for name, text in tools.find(objects, "ConfigMap", "-policies")["data"].items():
        (policies / name).write_text(text)
    with StandIn(*(x for r in CRDS for x in ("--resource", r)), "--bookmark-interval", "0.2") as standin:
        # One AlreadyExists per kind: the reconciler reads the object back (get), then retries.
        for plural in ("workloads", "podgroups", "compositepodgroups"):
            standin.fault(409, verb="create", plural=plural)
        standin.create(TRAINERS, _trainer("t0", 4))
        standin.create(SERVICES, _service("s0"))
        port = _free_port()
        args = _args(objects, policies, port, standin.kubeconfig(tmp_path / "kubeconfig.json"))
        log = (tmp_path / "reconcile.log").open("w")
        proc = subprocess.Popen([sys.executable, "-c", "from webhook.cli.main import main; main()", *args],
                                cwd=tools.REPO, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONPATH": str(tools.REPO)})  # fmt: skip
        try:
            standin.wait_for(lambda: len(standin.objects("scheduling.k8s.io/v1beta1/podgroups")) == 3, timeout=60,
                             what="the PodGroups of a Trainer and an InferenceService")  # fmt: skip
            standin.create(TRAINERS, _trainer("t1", 2))  # after the first list: a watch event
            standin.request(
                "PATCH", f"{TRAINERS}/t0", {"spec": {"workers": 6}}, "application/merge-patch+json"
            )
            standin.wait_for(lambda: {"patch workloads", "patch podgroups", "create events"} <= set(standin.stats())
                             and len(standin.objects("scheduling.k8s.io/v1beta1/podgroups")) == 4, timeout=60,
                             what="a resize patched and t1's groups created")  # fmt: skip
            time.sleep(2.5)  # at least one Lease renewal (retry period 1 s)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            log.close()
        used = {tuple(key.split(" ", 1)) for key in standin.stats()}
        leases = standin.objects("coordination.k8s.io/v1/leases")
    # The test's own requests: creating and patching the governed objects.
    used -= {("create", "trainers"), ("create", "inferenceservices"), ("patch", "trainers")}
    assert used == _granted(objects), (tmp_path / "reconcile.log").read_text()[-3000:]
    role = tools.find(objects, "Role", "-reconciler")
    names = {n for r in role["rules"] for n in r.get("resourceNames", [])}
    assert [(x["metadata"]["namespace"], x["metadata"]["name"]) for x in leases] == [
        (role["metadata"]["namespace"], n) for n in names
    ]
