"""Throughput, latency and worker CPU of ``wasp serve`` against a null webhook on the same stack.

Prints figures; it is not a test. Both servers run at the same time (``wasp serve``'s
defaults, 2 workers, TLS, keep-alive), each driven in turn by wrk over loopback, for three review mixes:
Job CREATE → /validate, Job UPDATE → /validate, Pod CREATE → /mutate. Each round starts
fresh server processes and runs every mix on each of them. For each mix it prints
req/s, p50/p99, the ratio to the null webhook, connections and CPU per worker, then the
p99 at half of wasp's saturated rate (wrk's per-connection ``delay()`` paces requests), and
the in-process core time per Job review (parse + validate), warm and with the caches swept.

    /tmp/venv/bin/python benchmarks/bench_server.py [--duration 4] [--connections 16] [--rounds 3] [--edge] [--floor]

``--edge`` adds a third server: wasp's own admission view with a handler that answers
allowed without judging, so the gap to the null webhook splits into the edge (body read,
parse_review, request checks, metrics, the review log) and the core (validation, mutation).

``--floor`` adds the least any validating webhook on this stack does: the null webhook's own
view (decode the review, answer) with wasp's judging in between (``parse_review`` and
``handle_validate`` / ``handle_mutate``, the functions the webhook and ``wasp validate`` share)
and nothing else: no request checks, no metrics, no review log. Its ratio bounds what any
design that keeps the rules (one path, every rule upstream defines) reaches here.

The null webhook is ``wasp serve``'s own gunicorn application with the admission views
replaced by one that decodes the review and answers allowed, so the ratio isolates wasp's
work (parsing, validation, mutation, logging, metrics) from Flask, gunicorn and TLS. Both run
``wasp serve``'s command and ``WaspServer``, so they share its connection handling too
(gunicorn's gthread worker, the deadlines, ``--max-connection-age`` reconnects:
docs/operations-hardening.md). The null and the floor read the request body as wasp's view
does (``webhook.server.bodies.read_body``: chunked reads against the worker's budget).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import typing as t
import urllib.request
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "http"))

Json = dict[str, t.Any]

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("{body}", "rb"); wrk.body = f:read("*a"); f:close()
{delay}
"""


def job(min_count: int = 4, parallelism: int = 8) -> Json:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "labels": {"app": "train", "team": "ml"}},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "completionMode": "Indexed",
            "backoffLimit": 3,
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
            "template": {
                "metadata": {"labels": {"app": "train"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "registry.example/trainer:1.2.3",
                            "command": ["python", "-m", "train"],
                            "args": ["--epochs", "10", "--batch-size", "256"],
                            "env": [{"name": "RANK", "value": "0"}, {"name": "WORLD", "value": "8"}],
                            "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}},
                        }
                    ],
                },
            },
        },
    }


def pod() -> Json:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid", "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-0-abcde", "namespace": "default", "ownerReferences": [owner]},
        "spec": job()["spec"]["template"]["spec"],
    }


def mixes() -> list[tuple[str, str, Json]]:
    from apiserver import build_review

    old = job(min_count=4)
    return [
        ("Job CREATE /validate", "/validate", build_review(job(min_count=4))),
        ("Job UPDATE /validate", "/validate", build_review(job(min_count=6), operation="UPDATE", old=old)),
        ("Pod CREATE /mutate", "/mutate", build_review(pod())),
    ]


# ------------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(
        self, name: str, argv: list[str], port: int, metrics_port: int, log: Path, *, edge: bool = False,
        floor: bool = False,
    ) -> None:  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(REPO))
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env.pop("WASP_BENCH_EDGE", None)
        env.pop("WASP_BENCH_FLOOR", None)
        if edge:
            env["WASP_BENCH_EDGE"] = "1"
        if floor:
            env["WASP_BENCH_FLOOR"] = "1"
        self.name, self.port, self.metrics_port = name, port, metrics_port
        with log.open("wb") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=out)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start; see {log}")
            time.sleep(0.1)

    def workers(self) -> list[int]:
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        return sorted(int(c) for c in children)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(15)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connections_per_worker(port: int, pids: list[int]) -> list[int]:
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout  # fmt: skip
    return [len(re.findall(rf"pid={pid},", out)) for pid in pids]


# ----------------------------------------------------------------------------------- wrk


def parse_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(server: Server, path: str, lua: Path, *, duration: float, connections: int) -> dict[str, t.Any]:
    url = f"https://127.0.0.1:{server.port}{path}"
    pids = server.workers()
    cpu0 = [cpu_seconds(p) for p in pids]
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{int(duration)}s", "--latency", "-s", str(lua), url]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    time.sleep(duration / 2)
    conns = connections_per_worker(server.port, pids)
    out, _ = proc.communicate(timeout=duration + 20)
    cpu = [(cpu_seconds(p) - c) / duration * 100 for p, c in zip(pids, cpu0, strict=True)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = parse_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = parse_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Socket errors: (.*)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": rps, "p50": p50, "p99": p99, "conns": conns, "cpu": cpu,
        "errors": (errors.group(1) if errors else "") + (f" non-2xx {non2xx.group(1)}" if non2xx else ""),
    }  # fmt: skip


def cpu_per_review(run: dict[str, t.Any]) -> float:
    """Worker CPU time per answered review, in µs, over one wrk run."""
    return float(sum(run["cpu"])) / 100 / run["rps"] * 1e6


def lua_script(directory: Path, name: str, body: bytes, delay_ms: float | None = None) -> Path:
    body_file = directory / f"{name}.json"
    body_file.write_bytes(body)
    # wrk truncates delay() to whole milliseconds: return the floor or the ceiling at random
    # so that the mean delay is the one asked for.
    delay = (
        f"local d = {delay_ms:.3f}\n"
        "function delay()\n"
        "  local b = math.floor(d)\n"
        "  if math.random() < d - b then return b + 1 end\n"
        "  return b\n"
        "end"
        if delay_ms
        else ""
    )
    script = directory / f"{name}{'-paced' if delay_ms else ''}.lua"
    script.write_text(LUA.format(body=body_file, delay=delay))
    return script


def paced(
    server: Server,
    path: str,
    work: Path,
    name: str,
    body: bytes,
    *,
    target: float,
    duration: float,
    connections: int,
) -> dict[str, t.Any]:
    """A wrk run at ``target`` req/s: each connection waits ``delay()`` after each answer.

    A connection's cycle is its delay plus the request's latency, so a delay of
    ``connections / target`` alone undershoots the target by the latency. The delay is
    corrected from each run's measured rate (at most four runs, until one is within 3%); the
    run closest to the target is returned.
    """
    delay_ms = connections * 1000 / target
    runs: list[dict[str, t.Any]] = []
    for _ in range(4):
        lua = lua_script(work, name, body, delay_ms=delay_ms)
        run = wrk(server, path, lua, duration=duration, connections=connections)
        runs.append(run)
        if abs(run["rps"] - target) <= 0.03 * target:
            break
        # Keep the measured latency part of the cycle, and take the gap out of the delay.
        delay_ms = max(0.05, delay_ms - connections * 1000 * (1 / run["rps"] - 1 / target))
    return min(runs, key=lambda r: abs(r["rps"] - target))


# --------------------------------------------------------------------------- core timing


def core_time_us(review: Json, repeat: int = 2000) -> float:
    from webhook.admission.handler import handle_validate
    from webhook.admission.review import parse_review
    from webhook.policy import PolicySet

    policies = PolicySet.load()
    body = orjson.dumps(review)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            handle_validate(parse_review(body), policies)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def cold_core_time_us(review: Json, rounds: int = 400) -> float:
    """Median parse + handle time with the CPU caches swept before each review.

    Inside the server the TLS, HTTP and Flask code runs between two reviews, and a core call
    costs 3-4x its time in a warm loop. Sweeping 16 MiB before each call brings the
    in-process time close to that (35 vs ~45 µs for a Job CREATE on these machines), so
    changes can be compared without the noise of a server run.
    """
    from webhook.admission.handler import handle_validate
    from webhook.admission.review import parse_review
    from webhook.policy import PolicySet

    policies = PolicySet.load()
    body = orjson.dumps(review)
    sweep = bytearray(16 * 1024 * 1024)
    ones = b"\x01" * (len(sweep) // 64)
    times = []
    for _ in range(rounds):
        sweep[::64] = ones
        start = time.perf_counter()
        handle_validate(parse_review(body), policies)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


# ----------------------------------------------------------------------------------- null


def serve_null(argv: list[str]) -> None:
    """``wasp serve --dev`` with the admission views answering allowed without any work."""
    import click

    from webhook.cli import serve as serve_module

    original = serve_module._run

    def run_null(settings: t.Any, *rest: t.Any) -> None:
        import webhook.server.app as app_module

        real_create = app_module.create_app

        def create_null(*args: t.Any, **kwargs: t.Any) -> t.Any:
            from flask import Response, request

            from webhook.server.bodies import read_body

            app = real_create(*args, **kwargs)
            limit = settings.max_body_bytes

            def allow() -> Response:
                with read_body(request.environ, limit) as body:
                    uid = orjson.loads(body)["request"]["uid"]
                body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": {"uid": uid, "allowed": True}}  # fmt: skip
                return Response(orjson.dumps(body), 200, content_type="application/json")

            if os.environ.get("WASP_BENCH_EDGE"):
                # wasp's own view (body read, parse_review, metrics, log line, response)
                # around a handler that answers allowed without judging: the edge's cost.
                from webhook.admission.handler import Answer
                from webhook.admission.response import allowed
                from webhook.server.app import _admission_view, state_of

                def fixed(parsed: t.Any, policies: t.Any) -> Answer:
                    return Answer(allowed(parsed.uid), "allowed")

                for endpoint in ("validate", "mutate"):
                    app.view_functions[endpoint] = _admission_view(state_of(app), endpoint, fixed)
                return app
            if os.environ.get("WASP_BENCH_FLOOR"):
                # The null's view with the judging in between, and nothing else.
                from webhook.admission.handler import handle_mutate, handle_validate
                from webhook.admission.review import parse_review
                from webhook.server.app import state_of

                state = state_of(app)

                def judged(handler: t.Any) -> t.Callable[[], Response]:
                    def view() -> Response:
                        with read_body(request.environ, limit) as body:
                            answer = handler(parse_review(body), state.policies)
                        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                "response": answer.response}  # fmt: skip
                        return Response(orjson.dumps(body), 200, content_type="application/json")

                    return view

                app.view_functions["validate"] = judged(handle_validate)
                app.view_functions["mutate"] = judged(handle_mutate)
                return app
            app.view_functions["validate"] = allow
            app.view_functions["mutate"] = allow
            return app

        app_module.create_app = create_null
        original(settings, *rest)

    serve_module._run = run_null
    command = serve_module.serve
    assert isinstance(command, click.Command)
    command.main(argv, prog_name="wasp-null", auto_envvar_prefix="WASP")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per wrk run (max 10)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=512, help="wasp serve's default")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds, each on fresh server processes; medians reported"
    )
    parser.add_argument(
        "--edge",
        action="store_true",
        help="also run wasp's HTTP edge with a fixed answer (no validation): splits the gap to "
        "the null webhook into edge (parse, metrics, log line) and core",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run the null webhook's view with wasp's judging and nothing else: the least any "
        "validating webhook on this stack does",
    )
    parser.add_argument("--serve-null", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_null is not None:
        serve_null(args.serve_null)
        return
    duration = min(args.duration, 10.0)
    if shutil.which("wrk") is None:
        print("installing wrk (apt-get)", file=sys.stderr)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)

    work = Path(tempfile.mkdtemp(prefix="wasp-bench-"))
    common = [
        "--dev",
        "--state-dir",
        str(work / "state"),
        "--workers",
        str(args.workers),
        "--threads",
        str(args.threads),
        # The default level, info, as in production: a line for each denied, warned or malformed
        # review (the mixes here are allowed: none), every review counted in the metrics.
        "--log-level",
        "info",
    ]
    names = ["wasp", "null", *(["edge"] if args.edge else []), *(["floor"] if args.floor else [])]
    servers: list[Server] = []

    def start(name: str, label: str) -> Server:
        port, metrics_port = free_port(), free_port()
        ports = ["--port", str(port), "--metrics-port", str(metrics_port)]
        if name == "wasp":
            argv = [
                sys.executable,
                "-c",
                "from webhook.cli.main import main; main()",
                "serve",
                *common,
                *ports,
            ]
        else:
            argv = [sys.executable, __file__, "--serve-null", *common, *ports]
        server = Server(
            name,
            argv,
            port,
            metrics_port,
            work / f"{name}-{label}.log",
            edge=name == "edge",
            floor=name == "floor",
        )
        servers.append(server)
        return server

    def stop_all() -> None:
        while servers:
            servers.pop().stop()

    try:
        print(
            f"wrk -t1 -c{args.connections} -d{duration:g}s, TLS keep-alive, {args.workers} workers x {args.threads} threads, "
            f"loopback; median of {args.rounds} rounds per server, fresh server processes each round\n"
        )
        scripts = {
            name: (path, lua_script(work, name.split()[0] + name.split()[1], orjson.dumps(review)))
            for name, path, review in mixes()
        }
        runs: dict[str, dict[str, list[dict[str, t.Any]]]] = {m: {n: [] for n in names} for m in scripts}
        for round_no in range(args.rounds):
            # Fresh processes each round: two identical servers started side by side differed by
            # ~2% over a whole run here (memory layout, hash seeds, how the kernel spread their
            # connections), a bias that more rounds against the same processes cannot average.
            # Rotate who goes first, as a run's position in a round biases it too, so every
            # server takes every position equally often.
            shift = round_no % len(names)
            for name in names[shift:] + names[:shift]:
                start(name, f"round{round_no}")
            if round_no == 0:
                ssl.create_default_context(cafile=str(work / "state" / "ca.crt"))  # the CA exists and parses
            for server in servers:
                # A short unrecorded run first: connections, TLS sessions and the first reviews.
                path, lua = scripts[mixes()[0][0]]
                wrk(server, path, lua, duration=1, connections=args.connections)
            for mix, (path, lua) in scripts.items():
                for server in servers:
                    runs[mix][server.name].append(
                        wrk(server, path, lua, duration=duration, connections=args.connections)
                    )
            stop_all()
        header = (
            f"{'mix':24} {'server':6} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'ratio':>6} {'CPU µs':>7}"
            "  conns/worker  CPU%/worker"
        )
        print(header)
        print("-" * len(header))
        saturated: dict[str, float] = {}
        for mix, by_server in runs.items():
            results = {n: sorted(rs, key=lambda r: r["rps"])[len(rs) // 2] for n, rs in by_server.items()}
            round_ratios = ", ".join(
                f"{w['rps'] / n['rps']:.2f}"
                for w, n in zip(by_server["wasp"], by_server["null"], strict=True)
            )
            for server_name in names:
                r = results[server_name]
                ratio = r["rps"] / results["null"]["rps"]
                conns = "/".join(map(str, r["conns"]))
                cpu = "/".join(f"{c:.0f}" for c in r["cpu"])
                cpu_us = statistics.median(cpu_per_review(run) for run in by_server[server_name])
                print(f"{mix:24} {server_name:6} {r['rps']:8.0f} {r['p50']:7.2f} {r['p99']:7.2f} {ratio:6.2f} "
                      f"{cpu_us:7.0f}  {conns:12}  {cpu}{'  ' + r['errors'] if r['errors'] else ''}")  # fmt: skip
            print(f"{'':24} per-round ratios: {round_ratios}")
            if "floor" in by_server:
                floor_ratios = ", ".join(
                    f"{f['rps'] / n['rps']:.2f}"
                    for f, n in zip(by_server["floor"], by_server["null"], strict=True)
                )
                print(f"{'':24} the floor's per-round ratios: {floor_ratios}")
            # Worker CPU per review moves less than req/s between runs (wrk and the machine's
            # other load change the rate, not the work): the steadier view of what wasp adds.
            wasp_us = statistics.median(cpu_per_review(run) for run in by_server["wasp"])
            null_us = statistics.median(cpu_per_review(run) for run in by_server["null"])
            print(f"{'':24} worker CPU per review: wasp adds {wasp_us - null_us:.0f} µs to the null's {null_us:.0f} µs "
                  f"(null/wasp {null_us / wasp_us:.2f})")  # fmt: skip
            saturated[mix] = results["wasp"]["rps"]
        print("\np99 at half of wasp's saturated rate (wrk delay() paces each connection):")
        wasp = start("wasp", "paced")
        for name, path, review in mixes():
            target = saturated[name] / 2
            r = paced(wasp, path, work, name.split()[0] + name.split()[1], orjson.dumps(review),
                      target=target, duration=duration, connections=args.connections)  # fmt: skip
            verdict = "ok" if r["p99"] < 10 else "OVER 10 ms"
            print(f"  {name:24} target {target:6.0f} req/s, got {r['rps']:6.0f}: p50 {r['p50']:.2f} ms, "
                  f"p99 {r['p99']:.2f} ms ({verdict})")  # fmt: skip
        stop_all()
        job_review = mixes()[0][2]
        per_review = core_time_us(job_review)
        print(f"\nin-process core per Job CREATE review (parse_review + handle_validate): {per_review:.1f} µs "
              f"({'ok' if per_review < 100 else 'over'} the 100 µs target)")  # fmt: skip
        update_us = core_time_us(mixes()[1][2])
        print(f"in-process core per Job UPDATE review: {update_us:.1f} µs")
        print(f"the same with the caches swept before each review (the server's conditions): "
              f"{cold_core_time_us(job_review):.1f} µs CREATE, {cold_core_time_us(mixes()[1][2]):.1f} µs UPDATE")  # fmt: skip
    finally:
        stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
