"""Figures of issues 17 and 29 for ``wasp serve`` under faults, in one run (prints figures; not a test).

    .venv/bin/python benchmarks/bench_faults.py [--idle 500] [--slow 200] [--duration 15]
        [--parts slow,kill,bodies,large] [--body-runs 9] [--large-clients 30] [--throughput-rounds 3]

1. **Slow and idle clients.** ``--idle`` TLS connections that never send a request and
   ``--slow`` clients uploading 6 MiB bodies at 2 KiB/s (each reconnected when the server
   closes it), while a normal client sends a Job review every 20 ms on one kept-alive
   connection: its failures and p99, and ``/readyz`` sampled every half second.
2. **A worker SIGKILLed under keep-alive load** (wrk -c16): requests per second before and
   after, and how long until a 2-second window is back at 90% of the 5 seconds before.
3. **Large bodies**: the time to answer bodies of up to 7 MiB of several shapes (a valid Job
   with a large annotation, a 200,000-entry topology list, wide and deep JSON).
4. **Large reviews back to back**: ``--large-clients`` clients each sending valid 7 MiB Job
   reviews one after the other while the normal client measures and ``/readyz`` is sampled.
5. **Memory**: the largest RSS of each worker during parts 1 and 4, against what
   docs/operations-hardening.md tells operators to size a worker for (:data:`DOCUMENTED_MIB`).
6. **Throughput** against the null webhook: ``bench_server.py --rounds 3 --duration 4``, whose
   null webhook runs the same ``wasp serve`` connection handling (``--throughput-rounds 0``
   skips it).

Each part starts a fresh ``wasp serve --dev`` (its defaults: 2 workers) on loopback. The machine
is shared and noisy: compare figures within one run.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import typing as t
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "http"), str(REPO / "tests")]

from apiserver import build_review  # noqa: E402
from conftest import ServerProcess, job, start_server  # noqa: E402
from faults import LatencyProbe, Pressure, ReviewClient  # noqa: E402

MiB: t.Final = 1 << 20
# docs/operations-hardening.md, "Memory": what one worker is sized for at the defaults.
DOCUMENTED_MIB: t.Final = 120 + 64 + 400  # at --max-buffered-mib 64


class RssSampler:
    """The largest resident set of each worker of ``server`` seen, sampled every 0.2 s."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for pid in workers(self.server):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                kib = int(status.split("VmRSS:")[1].split()[0])
                self.peak[pid] = max(self.peak.get(pid, 0), kib // 1024)

    def line(self) -> str:
        peaks = ", ".join(f"{mib} MiB" for mib in self.peak.values())
        over = [mib for mib in self.peak.values() if mib > DOCUMENTED_MIB]
        return f"peak RSS per worker: {peaks} (sized for {DOCUMENTED_MIB} MiB{'; OVER' if over else ''})"


PER_SECOND_LUA: t.Final = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
local threads = {{}}
function setup(thread) table.insert(threads, thread) end
counts = {{}}
function response(status, headers, body)
  local s = os.time()
  counts[s] = (counts[s] or 0) + 1
end
function done(summary, latency, requests)
  local total = {{}}
  for _, th in ipairs(threads) do
    for k, v in pairs(th:get("counts")) do total[k] = (total[k] or 0) + v end
  end
  for k, v in pairs(total) do io.write(string.format("second %d %d\\n", k, v)) end
end
"""


def job_body(uid: str) -> bytes:
    return orjson.dumps(build_review(job(min_count=4), uid=uid))


def workers(server: ServerProcess) -> list[int]:
    pid = server.proc.pid
    return sorted(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())


def connections_per_worker(server: ServerProcess, pids: list[int]) -> list[int]:
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{server.port} )"],
                         capture_output=True, text=True, timeout=10).stdout  # fmt: skip
    return [out.count(f"pid={pid},") for pid in pids]


def slow_clients(tmp: Path, idle: int, slow: int, duration: float) -> None:
    server = start_server(tmp)
    try:
        probe = LatencyProbe(server.port, server.ca_file, job_body, interval=0.02, limit=int(duration * 60))
        pressure = Pressure(server.port, server.ca_file, idle=idle, slow=slow, duration=duration + 5).start()
        probe.start()
        with RssSampler(server) as rss:
            readyz = sample_readyz(server, duration)
        probe.stop()
        pressure.stop()
        bad = [code for code in readyz if code != 200]
        print(f"1. {idle} idle TLS connections + {slow} slow 6 MiB uploads (2 KiB/s), {duration:g} s:")
        print(f"   normal client: {len(probe.latencies)} reviews, {len(probe.failures)} failures, "
              f"p50 {statistics.median(probe.latencies) * 1000:.1f} ms, p99 {probe.p99() * 1000:.1f} ms"
              f"{'' if probe.p99() < 0.1 else ' (OVER 100 ms)'}")  # fmt: skip
        print(f"   /readyz: {len(readyz) - len(bad)} of {len(readyz)} samples 200"
              f"{'' if not bad else f' (others: {sorted(set(bad))})'}")  # fmt: skip
        print(f"   hostile connections opened {pressure.connects}, closed by the server {pressure.closed_by_server}, "
              f"connect errors {len(pressure.errors)}")  # fmt: skip
        for failure in probe.failures[:3]:
            print(f"   failure: {failure}")
        print(f"   {rss.line()}")
    finally:
        server.stop()


def sample_readyz(server: ServerProcess, duration: float) -> list[int]:
    readyz: list[int] = []
    end = time.monotonic() + duration
    while time.monotonic() < end:
        try:
            readyz.append(server.get("/readyz", timeout=2)[0])
        except OSError:
            readyz.append(0)
        time.sleep(0.5)
    return readyz


def large_reviews(tmp: Path, clients: int, duration: float) -> None:
    server = start_server(tmp)
    body = orjson.dumps(build_review(big_object(7 * MiB - 4096), uid="large"))
    stop = threading.Event()
    counts: dict[int, int] = {}
    errors: list[str] = []

    def send() -> None:
        client = ReviewClient(server.port, server.ca_file, timeout=30)
        while not stop.is_set():
            try:
                status, _ = client.post("/validate", body, uid=None)
                counts[status] = counts.get(status, 0) + 1
            except Exception as exc:  # noqa: BLE001 - a figure, not a failure of the benchmark
                errors.append(f"{type(exc).__name__}: {exc}")
                client.close()
        client.close()

    try:
        probe = LatencyProbe(server.port, server.ca_file, job_body, interval=0.02, limit=int(duration * 60))
        senders = [threading.Thread(target=send, daemon=True) for _ in range(clients)]
        for sender in senders:
            sender.start()
        time.sleep(1.0)  # every sender has its first body on the wire
        probe.start()
        with RssSampler(server) as rss:
            readyz = sample_readyz(server, duration)
        probe.stop()
        stop.set()
        for sender in senders:
            sender.join(30)
        bad = [code for code in readyz if code != 200]
        print(
            f"4. {clients} clients sending {len(body) / MiB:.1f} MiB Job reviews back to back, {duration:g} s:"
        )
        print(f"   normal client: {len(probe.latencies)} reviews, {len(probe.failures)} failures, "
              f"p50 {statistics.median(probe.latencies) * 1000:.1f} ms, p99 {probe.p99() * 1000:.1f} ms"
              f"{'' if probe.p99() < 1 else ' (OVER 1 s)'}")  # fmt: skip
        print(f"   /readyz: {len(readyz) - len(bad)} of {len(readyz)} samples 200"
              f"{'' if not bad else f' (others: {sorted(set(bad))})'}")  # fmt: skip
        print(
            f"   large reviews answered by status: {dict(sorted(counts.items()))}; client errors {len(errors)}"
        )
        for failure in [*probe.failures[:3], *errors[:3]]:
            print(f"   failure: {failure}")
        print(f"   5. {rss.line()}")
    finally:
        server.stop()


def worker_kill(tmp: Path, seconds: int) -> None:
    server = start_server(tmp)
    try:
        body = tmp / "job.json"
        body.write_bytes(job_body("bench"))
        lua = tmp / "per_second.lua"
        lua.write_text(PER_SECOND_LUA.format(body=body))
        url = f"https://127.0.0.1:{server.port}/validate"
        wrk = subprocess.Popen(["wrk", "-t1", "-c16", f"-d{seconds}s", "-s", str(lua), url],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(seconds / 2)
        victim = workers(server)[0]
        killed_at = int(time.time())
        os.kill(victim, signal.SIGKILL)
        splits = []
        for _ in range(min(5, seconds // 4)):
            time.sleep(2)
            splits.append("/".join(str(n) for n in connections_per_worker(server, workers(server))))
        out, _ = wrk.communicate(timeout=seconds + 30)
        per_second = dict(sorted(
            (int(line.split()[1]), int(line.split()[2])) for line in out.splitlines() if line.startswith("second ")
        ))  # fmt: skip
        before = [n for s, n in per_second.items() if killed_at - 5 <= s < killed_at]
        baseline = statistics.mean(before) if before else 0.0
        back = next(
            (s - killed_at for s in per_second if s > killed_at
             and statistics.mean([per_second.get(s, 0), per_second.get(s + 1, 0)]) >= 0.9 * baseline),
            None,
        )  # fmt: skip
        errors = next(
            (line.strip() for line in out.splitlines() if "Socket errors" in line), "no socket errors"
        )
        print(
            f"2. SIGKILL of one worker under wrk -c16 keep-alive load ({seconds} s run, kill at {seconds // 2} s):"
        )
        print(f"   req/s in the 5 s before: {baseline:.0f}; per second from the kill: "
              + ", ".join(str(per_second.get(killed_at + i, 0)) for i in range(min(12, seconds // 2))))  # fmt: skip
        print(f"   connections per worker every 2 s after the kill: {', '.join(splits)}")
        print(
            f"   back at >= 90% (2-s window): {'never' if back is None else f'{back} s after the kill'}; wrk: {errors}"
        )
    finally:
        server.stop()


def big_object(size: int) -> dict[str, t.Any]:
    obj = job(min_count=4)
    obj["metadata"]["annotations"] = {"example.com/blob": "x" * size}
    return obj


def topology(entries: int) -> dict[str, t.Any]:
    obj = job(min_count=4)
    obj["spec"]["scheduling"]["schedulingConstraints"] = {
        "topology": [{"key": "rack"} for _ in range(entries)]
    }
    return obj


def server_cpu(server: ServerProcess) -> float:
    """CPU seconds used so far by the server's workers (user + system, from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in workers(server):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def large_bodies(tmp: Path, runs: int) -> None:
    server = start_server(tmp)
    client = ReviewClient(server.port, server.ca_file, timeout=30)
    shapes: list[tuple[str, bytes]] = [
        ("Job with a 6.9 MiB annotation", orjson.dumps(build_review(big_object(7 * MiB - 4096), uid="a"))),
        ("Job with a 200,000-entry topology list", orjson.dumps(build_review(topology(200_000), uid="b"))),
        ("Job with 100,000 labels", orjson.dumps(build_review(
            {**job(min_count=4), "metadata": {"name": "x", "labels": {f"k{i}": "v" for i in range(100_000)}}}, uid="c"))),
        ("7 MiB of nested arrays", b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"d","x":'
         + b"[" * (7 * MiB // 2 - 200) + b"]" * (7 * MiB // 2 - 200) + b"}}"),
        ("7 MiB list of numbers in request.object", orjson.dumps(build_review(
            {**job(min_count=4), "spec": {"x": list(range(900_000))}}, uid="e"))),
    ]  # fmt: skip
    try:
        print(f"3. bodies of up to 7 MiB (one kept-alive connection, time to the whole answer; median of {runs}, "
              "and the server workers' CPU time per review):")  # fmt: skip
        for label, body in shapes:
            walls, cpus = [], []
            for _ in range(runs):
                cpu, started = server_cpu(server), time.perf_counter()
                status, answer = client.post("/validate", body, uid=None)
                walls.append(time.perf_counter() - started)
                cpus.append(server_cpu(server) - cpu)
            elapsed = statistics.median(walls)
            message = answer["response"].get("status", {}).get("message", "")
            print(f"   {label:42} {len(body) / MiB:4.1f} MiB  HTTP {status}  {elapsed * 1000:7.0f} ms "
                  f"(max {max(walls) * 1000:.0f}), CPU {statistics.median(cpus) * 1000:5.0f} ms"
                  f"{'' if elapsed < 1 else ' (OVER 1 s)'}  {message[:60]}")  # fmt: skip
    finally:
        client.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=500)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--duration", type=float, default=15.0, help="seconds of part 1 (max 60)")
    parser.add_argument("--kill-run", type=int, default=24, help="seconds of the wrk run of part 2 (max 60)")
    parser.add_argument("--body-runs", type=int, default=9, help="reviews per body shape in part 3 (median)")
    parser.add_argument("--large-clients", type=int, default=30, help="clients of part 4")
    parser.add_argument(
        "--parts",
        default="slow,kill,bodies,large",
        help="comma-separated parts to run: slow, kill, bodies, large",
    )
    parser.add_argument(
        "--throughput-rounds", type=int, default=3,
        help="rounds of bench_server.py for part 4, the ratios to the null webhook (0: skip)",
    )  # fmt: skip
    args = parser.parse_args()
    duration, kill_run = min(args.duration, 60.0), min(args.kill_run, 60)
    print(f"wasp serve --dev (its defaults), loopback, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f} at the start\n")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        base = Path(tmp)
        parts: list[tuple[str, t.Callable[[Path], None]]] = [
            ("slow", lambda d: slow_clients(d, args.idle, args.slow, duration)),
            ("kill", lambda d: worker_kill(d, kill_run)),
            ("bodies", lambda d: large_bodies(d, max(1, args.body_runs))),
            ("large", lambda d: large_reviews(d, args.large_clients, duration)),
        ]
        chosen = set(args.parts.split(","))
        for name, run in parts:
            if name not in chosen:
                continue
            directory = base / name
            directory.mkdir()
            run(directory)
            print()
    if args.throughput_rounds > 0:
        print("6. throughput against the null webhook on the same connection handling (bench_server.py):")
        sys.stdout.flush()
        rounds = str(min(args.throughput_rounds, 9))
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_server.py"), "--rounds", rounds,
                        "--duration", "4"], check=False, timeout=1800)  # fmt: skip


if __name__ == "__main__":
    main()
