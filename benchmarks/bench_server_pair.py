"""Two webhook servers driven at the same moment: the worker CPU each spends per review, and its ratio.

Prints figures; it is not a test. ``bench_server.py`` drives its servers in turn, so a slower
moment of a shared machine (other load, the host's other guests) lands on one server and not
the other, and its ratios move by ±10% between runs. Here both servers run side by side and a
wrk drives each at the same time, for ``--rounds`` rounds of ``--duration`` seconds: whatever
the machine does, it does to both. The figure is the median over rounds of the two servers'
worker CPU per answered review (``/proc``), and ``B``'s over ``A``'s: with ``--pair wasp,floor``,
the reviews wasp answers per CPU second as a share of the floor's (the guard rail's 0.95).

Servers (``wasp serve`` defaults: 2 workers, TLS, keep-alive, the same edge):

* ``wasp``: the webhook as shipped;
* ``floor``: ``bench_server.py --floor``'s view (decode, judge, answer; no metrics, no log line);
* ``nometrics``: the webhook as shipped with its per-review metrics (the request counter, the
  latency histogram and the in-flight gauge) recording nothing, to price them.

    /tmp/venv/bin/python benchmarks/bench_server_pair.py [--pair wasp,floor] [--rounds 8] [--duration 4]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import typing as t
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import REPO, Server, cpu_seconds, free_port, lua_script, mixes  # noqa: E402

SERVERS: t.Final = ("wasp", "floor", "nometrics")


def serve_without_metrics(argv: list[str]) -> None:
    """``wasp serve`` whose views record no metrics (the null and the floor record none either)."""
    from webhook.cli import serve as serve_module

    original = serve_module._run

    def run(settings: t.Any, *rest: t.Any) -> None:
        from webhook.server import metrics

        metrics.observe_review = lambda *args: None
        # The views take the in-flight tracker when they are built, so it goes before create_app.
        metrics.IN_FLIGHT.track_inprogress = lambda: lambda view: view  # type: ignore[method-assign]
        original(settings, *rest)

    serve_module._run = run
    serve_module.serve.main(argv, prog_name="wasp-nometrics", auto_envvar_prefix="WASP")


def start(name: str, common: list[str], work: Path) -> Server:
    port, metrics_port = free_port(), free_port()
    ports = ["--port", str(port), "--metrics-port", str(metrics_port)]
    bench_server = str(Path(__file__).resolve().parent / "bench_server.py")
    argv = {
        "wasp": [sys.executable, "-c", "from webhook.cli.main import main; main()", "serve", *common, *ports],
        "floor": [sys.executable, bench_server, "--serve-null", *common, *ports],
        "nometrics": [sys.executable, __file__, "--serve-nometrics", *common, *ports],
    }[name]
    return Server(name, argv, port, metrics_port, work / f"{name}.log", floor=name == "floor")


def together(
    servers: list[Server], path: str, lua: Path, *, duration: float, connections: int
) -> list[float]:
    """One round: a wrk per server, all at once; each server's worker CPU µs per review."""
    pids = [s.workers() for s in servers]
    before = [sum(cpu_seconds(p) for p in ps) for ps in pids]
    runs = [
        subprocess.Popen(
            [
                "wrk",
                "-t1",
                f"-c{connections}",
                f"-d{int(duration)}s",
                "-s",
                str(lua),
                f"https://127.0.0.1:{s.port}{path}",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for s in servers
    ]
    outs = [r.communicate(timeout=duration + 30)[0] for r in runs]
    after = [sum(cpu_seconds(p) for p in ps) for ps in pids]
    answered = [int(re.search(r"(\d+) requests in", out).group(1)) for out in outs]  # type: ignore[union-attr]
    return [(a - b) / n * 1e6 for a, b, n in zip(after, before, answered, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="wasp,floor", help=f"A,B from {', '.join(SERVERS)}")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per round")
    parser.add_argument("--connections", type=int, default=8, help="per server")
    parser.add_argument("--serve-nometrics", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_nometrics is not None:
        serve_without_metrics(args.serve_nometrics)
        return
    names = args.pair.split(",")
    if len(names) != 2 or not set(names) <= set(SERVERS):
        parser.error(f"--pair: two of {', '.join(SERVERS)}")
    os.environ["PYTHONPATH"] = str(REPO)
    work = Path(tempfile.mkdtemp(prefix="wasp-bench-pair-"))
    common = ["--dev", "--state-dir", str(work / "state"), "--workers", "2", "--log-level", "info"]
    load = os.getloadavg()
    print(f"{names[0]} and {names[1]} side by side, a wrk -c{args.connections} each, {args.rounds} rounds of "
          f"{args.duration:g} s; load average {load[0]:.2f}\n")  # fmt: skip
    print(
        f"{'mix':24} {names[0] + ' µs':>14} {names[1] + ' µs':>14}  {names[1]} µs / {names[0]} µs (per round)"
    )
    for mix, path, review in mixes():
        servers = [start(name, common, work) for name in names]
        try:
            lua = lua_script(work, re.sub(r"\W+", "-", mix), orjson.dumps(review))
            together(servers, path, lua, duration=1, connections=args.connections)  # warm-up, unrecorded
            rounds = [together(servers, path, lua, duration=args.duration, connections=args.connections)
                      for _ in range(args.rounds)]  # fmt: skip
        finally:
            for server in servers:
                server.stop()
        a, b = (statistics.median(r[i] for r in rounds) for i in (0, 1))
        per_round = ", ".join(f"{r[1] / r[0]:.2f}" for r in rounds)
        print(f"{mix:24} {a:14.0f} {b:14.0f}  {b / a:.3f} ({per_round})")
    print(f"\nat the end: load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
