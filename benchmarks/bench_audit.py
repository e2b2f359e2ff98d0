"""Benchmark: ``wasp audit`` over governed objects and their groups on the STAND-IN API server.

A script, not a test. For each case a fresh stand-in (tests/standin, a Python process, not
kube-apiserver) is filled with Trainers, each with the Workload and PodGroup wasp compiles
for it (1% with a drifted ``minCount``, so findings are written too), spread over namespaces;
then ``wasp audit -A -o json`` runs as its own process and the benchmark reports:

* wall time from process start to exit, and governed objects per second (and all objects
  read per second: Trainers + Workloads + PodGroups) net of an empty cluster's audit time;
* the audit process's peak resident memory (its VmHWM, polled every 20 ms), and the same for
  an audit of an empty cluster (the interpreter, wasp and the client: the floor).

The default cases: 1,000 and 10,000 objects, 100 per namespace, and 10,000 in one namespace.
Memory should grow in none of them: the audit holds one page of governed objects and the
scheduling objects that page can match; the rest of a namespace's index is in a temporary
SQLite file (webhook/audit/index.py; see docs/audit.md).

Run:  python benchmarks/bench_audit.py [--cases 1000:100 10000:100 10000:0] [--chunk-size 500]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import os
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

POLICY = ROOT / "examples/trainer/policy.yaml"
TRAINERS = Resource("ml.example.com", "v1", "trainers", "Trainer")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace")


def trainer(i: int) -> dict:
    return {"metadata": {"name": f"t{i}"},
            "spec": {"workers": 4, "scheduling": {"schedulingPolicy": {"gang": {}}},
                     "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}}  # fmt: skip


def fill(api: Api, n: int, per_namespace: int, threads: int = 4) -> None:
    policy = PolicySet.load([POLICY]).for_kind("ml.example.com/v1", "Trainer")
    assert policy is not None
    count = -(-n // per_namespace) if per_namespace else 1
    for ns in range(count):
        api.call("POST", NAMESPACES.path(), body={"metadata": {"name": f"ns{ns}"}})

    def one(i: int) -> None:
        ns = f"ns{i // per_namespace if per_namespace else 0}"
        obj = api.create(TRAINERS, ns, trainer(i))
        compiled = compile_object(policy, obj, uid=obj["metadata"]["uid"])
        groups = copy.deepcopy(compiled.pod_groups)
        if i % 100 == 0:
            groups[0]["spec"]["schedulingPolicy"]["gang"]["minCount"] = 99
        api.create(WORKLOADS, ns, compiled.workload)
        for group in groups:
            api.create(POD_GROUPS, ns, group)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n)))


def _high_water(pid: int) -> int:
    """VmHWM of ``pid`` in KiB: its peak RSS since exec (0 once it is gone).

    Not ``ru_maxrss`` from ``wait4``: that also counts the pages of the forked benchmark
    process before the exec, which hold the 10,000 objects this script filled in.
    """
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def audit(kubeconfig: Path, chunk_size: int, out: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB, exit code) of one ``wasp audit -A -o json`` process."""
    cmd = [sys.executable, "-c", "from webhook.cli.main import main; main()", "audit", "--kubeconfig",
           str(kubeconfig), "-A", "-o", "json", "--no-progress", "--chunk-size", str(chunk_size),
           "--policy-only", "--policies", str(POLICY)]  # fmt: skip
    peak = 0
    start = time.perf_counter()
    with out.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, env={**os.environ, "PYTHONPATH": str(ROOT)})
        while proc.poll() is None:
            peak = max(peak, _high_water(proc.pid))
            time.sleep(0.02)
    return time.perf_counter() - start, peak, proc.returncode


def run_case(n: int, per_namespace: int, chunk_size: int, tmp: Path) -> dict:
    with StandIn("--resource", "ml.example.com/v1/trainers/Trainer", "--log-size", "1000") as standin:
        kubeconfig = standin.kubeconfig(tmp / "kc.json")
        api = Api(connect(kubeconfig))
        began = time.perf_counter()
        fill(api, n, per_namespace)
        filled = time.perf_counter() - began
        seconds, peak, code = audit(kubeconfig, chunk_size, tmp / "audit.json")
    return {
        "n": n,
        "per_namespace": per_namespace,
        "fill": filled,
        "seconds": seconds,
        "peak": peak,
        "code": code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", nargs="+", default=["1000:100", "10000:100", "10000:0"],
                        help="OBJECTS:PER_NAMESPACE (0: all in one namespace)")  # fmt: skip
    parser.add_argument("--chunk-size", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        with StandIn("--resource", "ml.example.com/v1/trainers/Trainer") as standin:
            base, floor, _ = audit(standin.kubeconfig(tmp / "kc.json"), args.chunk_size, tmp / "empty.json")
        print(f"empty cluster: {base:.2f} s, peak RSS {floor / 1024:.1f} MiB (interpreter, wasp, client)")
        print("rates are net of the empty cluster's time (process start, imports, discovery)")
        print(f"{'objects':>8} {'per ns':>7} {'fill s':>7} {'audit s':>8} {'governed/s':>11} {'all/s':>8} "
              f"{'peak MiB':>9} {'over empty':>11} exit")  # fmt: skip
        for case in args.cases:
            n, per_ns = (int(x) for x in case.split(":"))
            r = run_case(n, per_ns, args.chunk_size, tmp)
            print(f"{r['n']:>8,} {r['per_namespace'] or 'all':>7} {r['fill']:>7.1f} {r['seconds']:>8.2f} "
                  f"{r['n'] / (r['seconds'] - base):>11,.0f} {3 * r['n'] / (r['seconds'] - base):>8,.0f} {r['peak'] / 1024:>9.1f} "
                  f"{(r['peak'] - floor) / 1024:>11.1f} {r['code']}")  # fmt: skip


if __name__ == "__main__":
    main()
