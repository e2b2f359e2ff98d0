"""Fixtures for the reconciler's loop tests: the stand-in API server and ``wasp reconcile``
processes pointed at it (bounded: every wait has a timeout, every process is stopped)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import typing as t
import urllib.request
from pathlib import Path

import pytest

from tests.standin import StandIn
from webhook.governed.workloads import compile_object

from .worlds import EXAMPLES, policies

ROOT = Path(__file__).resolve().parents[2]
CRDS = ("ml.example.com/v1/trainers/Trainer", "serving.example.com/v1/inferenceservices/InferenceService")
TRAINERS = "/apis/ml.example.com/v1/namespaces/ml/trainers"
SERVICES = "/apis/serving.example.com/v1/namespaces/serving/inferenceservices"
Json = dict[str, t.Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    """One ``wasp reconcile`` process."""

    def __init__(self, standin: StandIn, tmp: Path, *args: str, identity: str = "r") -> None:
        self.port = free_port()
        self.log = tmp / f"reconcile-{identity}-{self.port}.log"
        cmd = [sys.executable, "-c", "from webhook.cli.main import main; main()", "reconcile",
               "--kubeconfig", str(standin.kubeconfig(tmp / "kubeconfig.json")),
               *(x for p in EXAMPLES for x in ("--policies", str(p))), "--feature-gates", "CompositePodGroup=true",
               "--lease-duration", "3", "--renew-deadline", "2", "--retry-period", "1", "--watch-timeout", "5",
               "--probe-address", f"127.0.0.1:{self.port}", "--identity", identity, *args]  # fmt: skip
        self.out = self.log.open("w")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.out, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except OSError:
            return 0, ""

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels``."""
        _, text = self.get("/metrics")
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            series, _, value = line.rpartition(" ")
            if series.split("{")[0] == name and all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
        return total

    def ready(self) -> bool:
        return self.get("/readyz")[0] == 200

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return self.proc.returncode


@pytest.fixture
def standin() -> t.Iterator[StandIn]:
    with StandIn(*(x for r in CRDS for x in ("--resource", r)), "--bookmark-interval", "0.2") as server:
        yield server


@pytest.fixture
def replicas(standin: StandIn, tmp_path: Path) -> t.Iterator[t.Callable[..., Replica]]:
    started: list[Replica] = []

    def start(*args: str, identity: str = "r") -> Replica:
        replica = Replica(standin, tmp_path, *args, identity=identity)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.stop()


def trainer_body(name: str, workers: int = 4, **spec: t.Any) -> Json:
    return {"metadata": {"name": name},
            "spec": {"workers": workers, "scheduling": {"schedulingPolicy": {"gang": {}}}, **spec}}  # fmt: skip


def service_body(name: str) -> Json:
    role = {"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {"spec": {}}}
    return {"metadata": {"name": name},
            "spec": {"scheduling": {"schedulingPolicy": {"gang": {}}},
                     "roles": [{"name": "a", **role}, {"name": "b", **role}]}}  # fmt: skip


SCHEDULING = {"Workload": "scheduling.k8s.io/v1beta1/workloads", "PodGroup": "scheduling.k8s.io/v1beta1/podgroups",
              "CompositePodGroup": "scheduling.k8s.io/v1alpha3/compositepodgroups"}  # fmt: skip


def expected(standin: StandIn) -> dict[tuple[str, str, str], Json]:
    """What every governed object in the stand-in compiles to, by (kind, namespace, name)."""
    ps = policies()
    out = {}
    for resource in ("ml.example.com/v1/trainers", "serving.example.com/v1/inferenceservices"):
        for obj in standin.objects(resource):
            for want in compile_object(ps.for_object(obj), obj, uid=obj["metadata"]["uid"]).objects():
                out[(want["kind"], want["metadata"]["namespace"], want["metadata"]["name"])] = want
    return out


def actual(standin: StandIn) -> dict[tuple[str, str, str], Json]:
    out = {}
    for kind, resource in SCHEDULING.items():
        for obj in standin.objects(resource):
            key = (kind, obj["metadata"]["namespace"], obj["metadata"]["name"])
            assert key not in out
            out[key] = obj
    return out


def converged(standin: StandIn) -> bool:
    """Exactly the compiled objects exist (no duplicate, none lost), with the compiled specs."""
    want, have = expected(standin), actual(standin)
    return set(want) == set(have) and all(have[k]["spec"] == want[k]["spec"] for k in want)


def writes(standin: StandIn) -> int:
    stats = standin.stats()
    return sum(v for k, v in stats.items() if k.split()[0] in ("create", "patch", "update")
               and k.split()[1] in ("workloads", "podgroups", "compositepodgroups"))  # fmt: skip


def wait_converged(standin: StandIn, timeout: float = 60.0, what: str = "convergence") -> None:
    """Wait for :func:`converged`, polling gently: each check lists and compiles everything."""
    standin.wait_for(lambda: converged(standin), timeout=timeout, what=what, step=0.25)
