"""Benchmark: ``wasp explain`` on one workload in a busy namespace, on the STAND-IN API server.

A script, not a test. A fresh stand-in (tests/standin, a Python process, not kube-apiserver)
holds 500 nodes and one namespace with 5,000 pods: the pods of one JobSet being explained
(64 pods, one gang) and of other JobSets (8 pods each, bound to the nodes and running), each
JobSet with the Workload and PodGroup wasp compiles for it. Two cases run ``wasp explain
jobset/train -o json`` as its own process:

* ``runs``: the explained gang is placed; explain reads only what the workload needs;
* ``pending``: the explained gang's pods exist but are not placed; explain also reads the
  nodes and the requests bound to them, for the capacity estimate.

For each it prints the wall time and CPU time from process start to exit (and, as the floor,
those of ``wasp explain --help`` in the same environment), the verdict, and the API calls the stand-in
counted by verb and resource (discovery requests are not counted: two GETs). The goal
(issue 27): under 2 s, and reads bounded by what the workload needs.

Run:  python benchmarks/bench_explain.py [--pods 5000] [--nodes 500] [--gang 64]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from tests.standin import StandIn  # noqa: E402
from webhook.governed.workloads import compile_object  # noqa: E402
from webhook.kube.api import POD_GROUPS, WORKLOADS, Api, Resource, connect  # noqa: E402
from webhook.policy import PolicySet  # noqa: E402

JOBSET_POLICY = ROOT / "webhook/policies/integrations/jobset.yaml"
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node")
NS = "ml"
OTHER_SIZE = 8


def jobset(name: str, pods: int) -> dict:
    job = {"parallelism": pods, "completions": pods,
           "template": {"spec": {"containers": [{"name": "w", "image": "x"}], "restartPolicy": "Never"}}}  # fmt: skip
    return {"metadata": {"name": name, "annotations": {"scheduling.wasp.dev/blocks": '{"schedulingPolicy": {"gang": {}}}'}},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job}}]}}  # fmt: skip


def pod(name: str, owner: str, group: str, node: str) -> dict:
    spec = {"containers": [{"name": "w", "image": "x", "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}],
            "schedulingGroup": {"podGroupName": group}}  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/jobset-name": owner}}, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}  # fmt: skip


def fill(api: Api, pods: int, nodes: int, gang: int, pending: bool, threads: int = 8) -> None:
    policy = PolicySet.load([JOBSET_POLICY]).for_kind("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert policy is not None
    for i in range(nodes):
        api.call("POST", NODES.path(), body={"metadata": {"name": f"node-{i}", "labels": {
            "topology.kubernetes.io/rack": f"r{i // 20}"}}, "status": {"allocatable": {
                "cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}}})  # fmt: skip
    workloads = [("train", gang)] + [(f"other-{i}", OTHER_SIZE) for i in range((pods - gang) // OTHER_SIZE)]

    def one(index: int) -> None:
        name, size = workloads[index]
        obj = api.create(JOBSETS, NS, jobset(name, size))
        compiled = compile_object(policy, obj, uid=obj["metadata"]["uid"])
        api.create(WORKLOADS, NS, compiled.workload)
        group = api.create(POD_GROUPS, NS, compiled.pod_groups[0])["metadata"]["name"]
        for p in range(size):
            placed = not (pending and name == "train")
            node = f"node-{(index * OTHER_SIZE + p) % nodes}" if placed else ""
            api.create(PODS, NS, pod(f"{name}-{p}", name, group, node))

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(len(workloads))))


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes: on a busy machine, the
    figure that does not count the time the process waited for a core."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def case(label: str, args: argparse.Namespace, pending: bool) -> None:
    with (
        StandIn("--resource", "jobset.x-k8s.io/v1alpha2/jobsets/JobSet") as standin,
        tempfile.TemporaryDirectory() as tmp,
    ):
        kubeconfig = standin.kubeconfig(Path(tmp) / "kubeconfig.json")
        started = time.perf_counter()
        fill(Api(connect(kubeconfig)), args.pods, args.nodes, args.gang, pending)
        filled = time.perf_counter() - started
        before = standin.stats()
        cmd = [sys.executable, "-c", "from webhook.cli.main import main; main()", "explain", "jobset/train", "-n", NS, "-o", "json",
               "--policies", str(JOBSET_POLICY), "--kubeconfig", str(kubeconfig)]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
        # The floor: the same process answering --help (the interpreter, wasp's imports, click).
        started, floor_cpu = time.perf_counter(), _children_cpu()
        subprocess.run([*cmd, "--help"], env=env, capture_output=True, check=False)
        floor, floor_cpu = time.perf_counter() - started, _children_cpu() - floor_cpu
        after = standin.stats()
    calls = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
    calls.pop("list stats", None)
    doc = json.loads(done.stdout)
    print(f"{label}: {args.pods} pods in namespace {NS}, {args.nodes} nodes (filled in {filled:.1f} s)")
    print(f"  wall time {wall:.2f} s, CPU {cpu:.2f} s (process start to exit; --help takes {floor:.2f} s, CPU "
          f"{floor_cpu:.2f} s), exit {done.returncode}, "
          f"verdict {doc['verdict']}, "
          f"findings {[f['code'] for f in doc['findings']]}")  # fmt: skip
    print(f"  API calls: {sum(calls.values())}: " + ", ".join(f"{k} {v}" for k, v in sorted(calls.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gang", type=int, default=64)
    args = parser.parse_args()
    case("runs", args, pending=False)
    case("pending", args, pending=True)


if __name__ == "__main__":
    main()
