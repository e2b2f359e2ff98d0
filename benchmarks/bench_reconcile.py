"""Benchmark: ``wasp reconcile`` against the STAND-IN API server (a script, not a test).

The stand-in (tests/standin, a Python process, not kube-apiserver) is the ceiling of this
setup, so every rate is also given as a ratio to it, measured in the same run:

* cold start: governed Trainers already exist (1,000, then 10,000, each on a fresh stand-in);
  ``wasp reconcile --no-leader-elect`` starts, and the time until the last PodGroup exists is
  measured from the process start and from its first list (the reconciler's own rate);
* API writes per governed object (creates and patches of scheduling objects; Events apart);
* writes during a resync of the unchanged world (every object re-planned once);
* watch event to objects created: Trainers created one at a time at a steady pace while the
  benchmark watches PodGroups itself; p50/p99 from the Trainer's 201 to its PodGroup's ADDED;
* resident memory per cached object: the reconciler's RSS at 10,000 minus at 1,000, over the
  objects cached in between (Trainer + Workload + PodGroup per governed object);
* the stand-in's ceiling: a client that only creates the same Workloads and PodGroups (bodies
  compiled beforehand), with the same client library and as many threads as the reconciler;
* the least any reconciler does, as a ratio to the ceiling in the same round: the same four
  watches through the same informer, each object compiled, the same two creates (nothing
  validated, planned, queued or announced). It bounds the ratio any design on this client
  library can reach here.

* CPU per governed object (user + system, from /proc) of the reconciler and the stand-in while
  it converges, and of the ceiling client and the stand-in during the ceiling run;
* ``--rounds`` ceiling runs alternated with as many convergence runs of the largest size (the
  first is the full run above): the ratio is the median of the rounds' ratios.

Run:  python benchmarks/bench_reconcile.py [--sizes 1000 10000] [--latency 200] [--workers 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.standin import StandIn  # noqa: E402
from webhook.governed.workloads import compile_object  # noqa: E402
from webhook.kube.api import POD_GROUPS, WORKLOADS, Api, Resource, connect  # noqa: E402
from webhook.policy import PolicySet  # noqa: E402

POLICY = ROOT / "examples/trainer/policy.yaml"
TRAINERS = Resource("ml.example.com", "v1", "trainers", "Trainer")
SCHEDULING = ("workloads", "podgroups", "compositepodgroups")


def trainer(i: int) -> dict:
    return {"metadata": {"name": f"t{i}"},
            "spec": {"workers": 4, "scheduling": {"schedulingPolicy": {"gang": {}}}}}  # fmt: skip


def fill(api: Api, n: int, threads: int = 4) -> None:
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: api.create(TRAINERS, f"ns{i % 10}", trainer(i)), range(n)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def writes(stats: dict[str, int]) -> int:
    return sum(
        v
        for k, v in stats.items()
        if k.split()[0] in ("create", "patch", "update") and k.split()[1] in SCHEDULING
    )


def metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.split("{")[0].split(" ")[0] == name
    )


def start_reconciler(
    standin: StandIn, tmp: Path, port: int, workers: int, resync: float
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", "from webhook.cli.main import main; main()", "reconcile",
           "--kubeconfig", str(standin.kubeconfig(tmp / "kubeconfig.json")), "--policies", str(POLICY),
           "--no-leader-elect", "--workers", str(workers), "--resync-period", str(resync),
           "--probe-address", f"127.0.0.1:{port}", "--log-level", "warning"]  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)


def wait(predicate, timeout: float, what: str, step: float = 0.02) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(step)
    raise SystemExit(f"timed out waiting for {what}")


class PodGroupWatch(threading.Thread):
    """Records when each Trainer's PodGroup is first seen (ADDED) on a watch of its own."""

    def __init__(self, api: Api, since: str) -> None:
        super().__init__(daemon=True)
        self.api, self.since, self.seen = api, since, {}

    def run(self) -> None:
        from kubernetes.watch.watch import iter_resp_lines
        from urllib3.exceptions import HTTPError

        response = self.api.watch(POD_GROUPS, self.since, 600)
        try:
            self._read(iter_resp_lines(response))
        except HTTPError:
            pass  # the stand-in stopped

    def _read(self, lines) -> None:
        for line in lines:
            if line:
                event = json.loads(line)
                if event["type"] == "ADDED":
                    owner = event["object"]["metadata"]["ownerReferences"][0]["name"]
                    self.seen.setdefault(owner, time.monotonic())


def run_size(n: int, args: argparse.Namespace, tmp: Path, port: int, *, full: bool = True) -> dict:
    """One cold start over ``n`` objects; ``full`` adds the latency and resync measurements."""
    with StandIn("--resource", "ml.example.com/v1/trainers/Trainer", "--bookmark-interval", "1") as standin:
        api = Api(connect(standin.kubeconfig(tmp / "fill.json")))
        fill(api, n)
        base = writes(standin.stats())
        assert standin.proc is not None
        standin_cpu = cpu_seconds(standin.proc.pid)
        started = time.monotonic()
        proc = start_reconciler(standin, tmp, port, args.workers, args.resync)
        try:
            listed = wait(lambda: standin.stats().get("list pods", 0) >= 1, 60, "the first list", 0.005)
            own_cpu = cpu_seconds(proc.pid)  # start-up (imports, policies) apart
            # Polled every 20 ms: each poll is a request the stand-in serves beside the reconciler's.
            done = wait(lambda: standin.stats().get("create podgroups", 0) >= n, 600, "convergence", 0.02)
            own_cpu, standin_cpu = (
                cpu_seconds(proc.pid) - own_cpu,
                cpu_seconds(standin.proc.pid) - standin_cpu,
            )
            made = writes(standin.stats()) - base
            events = standin.stats().get("create events", 0)
            rss = metric(port, "process_resident_memory_bytes")
            result: dict = {"n": n, "total": done - started, "from_list": done - listed, "writes": made / n,
                      "events": events / n, "rss": rss, "cpu": own_cpu / n, "standin_cpu": standin_cpu / n}  # fmt: skip
            if not full:
                return result
            if n == max(args.sizes):
                # Before the first resync (--resync is longer than convergence plus this), as in
                # a cluster, where resyncs are minutes apart.
                result["latency"] = latency(api, standin, args.latency)
                made += writes(standin.stats()) - base - made
            # Resync of the unchanged world: wait until every object has been planned again.
            reconciled = metric(port, "wasp_reconcile_objects_total")
            wait(
                lambda: metric(port, "wasp_reconcile_objects_total") >= reconciled + n,
                args.resync * 3 + 120,
                "a resync",
                0.2,
            )
            result["resync_writes"] = writes(standin.stats()) - base - made
        finally:
            proc.terminate()
            proc.wait(30)
        return result


def latency(api: Api, standin: StandIn, count: int) -> list[float]:
    since = str(standin.request("GET", "/standin/stats")["resourceVersion"])
    watcher = PodGroupWatch(api, since)
    watcher.start()
    time.sleep(0.5)
    created = {}
    for i in range(count):
        api.create(TRAINERS, "lat", {"metadata": {"name": f"lat{i}"}, "spec": trainer(i)["spec"]})
        created[f"lat{i}"] = time.monotonic()
        time.sleep(0.02)  # a steady 50 objects/s, well under saturation
    wait(lambda: len(watcher.seen) >= count, 60, "latency objects")
    return sorted(watcher.seen[k] - v for k, v in created.items())


def ceiling(n: int, threads: int, tmp: Path) -> tuple[float, float, float]:
    """Objects/s of a client that only creates the reconciler's objects, and the CPU seconds
    per governed object of that client (this process) and of the stand-in."""
    policies = PolicySet.load([POLICY])
    with StandIn("--resource", "ml.example.com/v1/trainers/Trainer") as standin:
        api = Api(connect(standin.kubeconfig(tmp / "ceiling.json")))
        bodies = []
        for i in range(n):
            obj = {"apiVersion": "ml.example.com/v1", "kind": "Trainer",
                   "metadata": {"name": f"t{i}", "namespace": f"ns{i % 10}", "uid": f"u{i}"}, "spec": trainer(i)["spec"]}  # fmt: skip
            compiled = compile_object(policies.for_object(obj), obj, uid=f"u{i}")
            bodies.append((obj["metadata"]["namespace"], compiled.workload, compiled.pod_groups[0]))

        def create(item: tuple[str, dict, dict]) -> None:
            namespace, workload, group = item
            api.create(WORKLOADS, namespace, workload)
            api.create(POD_GROUPS, namespace, group)

        assert standin.proc is not None
        own, other = time.process_time(), cpu_seconds(standin.proc.pid)
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, bodies))
        elapsed = time.monotonic() - started
        return 2 * n / elapsed, (time.process_time() - own) / n, (cpu_seconds(standin.proc.pid) - other) / n


def floor(n: int, threads: int, tmp: Path) -> tuple[float, float]:
    """Objects/s and client CPU per object of the least any reconciler must do: the same four
    watches (Trainers, Workloads, PodGroups, Pods, each read into a cache by the same
    informer), every Trainer compiled (no validation, no plan, no queue, no Event), and the same
    two creates, the PodGroup owned by its Workload."""
    from webhook.governed.reconcile_model import workload_owner
    from webhook.kube.api import PODS
    from webhook.kube.informer import Informer

    policies = PolicySet.load([POLICY])
    policy = policies.policies[0]
    with StandIn("--resource", "ml.example.com/v1/trainers/Trainer", "--bookmark-interval", "1") as standin:
        api = Api(connect(standin.kubeconfig(tmp / "floor.json")))
        fill(api, n)
        own = time.process_time()
        started = time.monotonic()
        informers = [
            Informer(api, r, lambda old, new: None).start() for r in (TRAINERS, WORKLOADS, POD_GROUPS, PODS)
        ]
        for informer in informers:
            informer.synced.wait(60)

        def create(obj: dict) -> None:
            uid = obj["metadata"]["uid"]
            compiled = compile_object(policy, obj, uid=uid)
            namespace = obj["metadata"]["namespace"]
            workload = api.create(WORKLOADS, namespace, compiled.workload)
            group = compiled.pod_groups[0]
            owners = [*group["metadata"].get("ownerReferences", []), workload_owner(workload)]
            api.create(
                POD_GROUPS, namespace, {**group, "metadata": {**group["metadata"], "ownerReferences": owners}}
            )

        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, list(informers[0].cache.values())))
        elapsed = time.monotonic() - started
        cpu = (time.process_time() - own) / n
        for informer in informers:
            informer.stop()
        return 2 * n / elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--latency", type=int, default=200, help="objects for the event-to-objects latency")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--resync", type=float, default=45.0, help="the reconciler's --resync-period")
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="ceiling and largest-size convergence runs, alternated; the ratio is the median of the rounds'",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        port = 18900
        results = [run_size(n, args, tmp, port + i) for i, n in enumerate(args.sizes)]
        top = results[-1]
        # The machine is shared: one ceiling run beside one reconciler run swings by ±30%, so the
        # ratio is taken per round (a ceiling run, then a reconciler run) and the median kept.
        ceilings, floors, runs = [], [], [top]
        for r in range(max(1, args.rounds)):
            ceilings.append(ceiling(top["n"], args.workers, tmp))
            floors.append(floor(top["n"], args.workers, tmp))
            if r + 1 < args.rounds:
                runs.append(run_size(top["n"], args, tmp, port + len(args.sizes) + r, full=False))
        ratios = sorted(
            (2 * run["n"] / run["from_list"]) / c[0] for run, c in zip(runs, ceilings, strict=False)
        )
        limit = statistics.median(c[0] for c in ceilings)
        limit_cpu = statistics.median(c[1] for c in ceilings)
        limit_standin_cpu = statistics.median(c[2] for c in ceilings)
    print("wasp reconcile against the STAND-IN API server (tests/standin; not kube-apiserver)\n")
    print(f"{'governed objects':>17} {'converge (s)':>13} {'from 1st list (s)':>18} {'objects/s':>10} "
          f"{'writes/object':>14} {'events/object':>14} {'resync writes':>14} {'RSS (MiB)':>10}")  # fmt: skip
    for r in results:
        rate = 2 * r["n"] / r["from_list"]
        print(f"{r['n']:>17,} {r['total']:>13.2f} {r['from_list']:>18.2f} {rate:>10,.0f} {r['writes']:>14.2f} "
              f"{r['events']:>14.2f} {r['resync_writes']:>14} {r['rss'] / 2**20:>10.1f}")  # fmt: skip
    rates = [2 * run["n"] / run["from_list"] for run in runs]
    rate = statistics.median(rates)
    print(
        f"\nstand-in ceiling (create-only client, {args.workers} threads): {limit:,.0f} objects/s (median of "
        f"{len(ceilings)}: {', '.join(f'{c[0]:,.0f}' for c in ceilings)}); reconciler {rate:,.0f} objects/s "
        f"(median of {len(runs)}: {', '.join(f'{x:,.0f}' for x in rates)})"
    )
    print(
        f"ratio to the ceiling: {statistics.median(ratios):.2f}x (median of the rounds: "
        f"{', '.join(f'{x:.2f}' for x in ratios)})"
    )
    floor_ratios = sorted(f[0] / c[0] for f, c in zip(floors, ceilings, strict=True))
    print(
        f"the least any reconciler does (same watches, compile, the same two creates; no validation, plan, "
        f"queue or Event): {statistics.median(f[0] for f in floors):,.0f} objects/s = "
        f"{statistics.median(floor_ratios):.2f}x the ceiling (rounds: {', '.join(f'{x:.2f}' for x in floor_ratios)}), "
        f"{statistics.median(f[1] for f in floors) * 1000:.2f} ms of client CPU per object"
    )
    cpu, standin_cpu = (
        statistics.median(r["cpu"] for r in runs),
        statistics.median(r["standin_cpu"] for r in runs),
    )
    print(
        f"CPU per governed object, {top['n']:,} objects (medians): reconciler {cpu * 1000:.2f} ms + stand-in "
        f"{standin_cpu * 1000:.2f} ms; ceiling client {limit_cpu * 1000:.2f} ms + stand-in "
        f"{limit_standin_cpu * 1000:.2f} ms; load average {os.getloadavg()[0]:.2f}"
    )
    if len(results) > 1:
        low, high = results[0], results[-1]
        per_object = (high["rss"] - low["rss"]) / (3 * (high["n"] - low["n"]))
        print(
            f"resident memory per cached object: {per_object / 1024:.2f} KiB "
            f"({3 * per_object / 1024:.2f} KiB per governed object: Trainer + Workload + PodGroup)"
        )
    lat = top.get("latency")
    if lat:
        p50, p99 = statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        print(
            f"watch event to objects created ({len(lat)} objects at 50/s): p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
