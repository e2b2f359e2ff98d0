"""Benchmark: ``wasp validate`` end to end, side by side with ``kubernetes-validate`` (a script, not a test).

Prints, in one run, the figures of issue 18's targets. Every timing runs the installed
console script as a subprocess (process start, imports and policy loading included):
the median and the best of ``--runs`` wall times (the machines are shared: the best run is
the least disturbed one), the median CPU time of the process and its workers, and peak
memory, from the child's rusage:

* 2,000 Job manifests in 20 files (the headline rate, and the ratio to kubernetes-validate);
* 2,000 manifests in 2,000 files, and 2,000 in one file;
* one manifest in one file (start-up);
* the floor on the 20 files: ``benchmarks/cli_floor.py``, the least any ``wasp validate`` must
  do (libyaml parse + the webhook's ``validate_object``, on every CPU, nothing else), which
  bounds the headline rate on this parser;
* peak RSS for 2,000 and 20,000 manifests with text, JUnit and JSON output (flat = streaming);
* ``kubernetes-validate -k 1.37.0 --strict`` on a subset (it manages ~65 manifests/s, so the
  whole corpus would take minutes), its rate extrapolated, and on the one-manifest file.

The commands are run in rounds, each once per round, kubernetes-validate in the same rounds,
so that a burst of other load slows all of them alike, after one untimed run of each that
writes the bytecode an installed package has (``PYTHONDONTWRITEBYTECODE`` is dropped). Ratios are given by wall time and by
CPU time (user + sys), which the load of other processes disturbs less; the load average is
printed at the start and the end.

Manifests are ~54-line Jobs with full ``spec.scheduling`` blocks, 2% invalid.

Run:  python benchmarks/bench_cli.py [--runs 5] [--kv-manifests 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: train-{i}
  namespace: team-{ns}
  labels:
    app.kubernetes.io/name: trainer
    app.kubernetes.io/instance: "run-{i}"
    tier: batch
  annotations:
    description: >
      Distributed training run {i} for the
      nightly model refresh.
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  backoffLimit: 3
  suspend: false
  scheduling:
    schedulingPolicy:
      gang:
        minCount: {min_count}
    schedulingConstraints:
      topology:
      - key: topology.kubernetes.io/rack
    disruptionMode:
      all: {{}}
    resourceClaims:
    - name: gpus
      resourceClaimTemplateName: gpu-template
  template:
    metadata:
      labels:
        app.kubernetes.io/name: trainer
    spec:
      restartPolicy: Never
      priorityClassName: batch-high
      containers:
      - name: worker
        image: registry.example.com/ml/trainer:1.4.2
        command: ["python", "-m", "trainer"]
        args: ["--epochs", "10", "--lr", "0.001"]
        env:
        - name: WORLD_SIZE
          value: "{parallelism}"
        - name: NCCL_DEBUG
          value: INFO
        resources:
          requests:
            cpu: "4"
            memory: 16Gi
          limits:
            memory: 16Gi
"""


def job(i: int) -> str:
    parallelism = 4 + i % 5
    invalid = i % 50 == 7  # 2%: minCount above parallelism
    return JOB.format(
        i=i, ns=i % 7, parallelism=parallelism, min_count=parallelism + 3 if invalid else parallelism
    )


def write_corpus(root: Path, files: int, docs: int) -> list[Path]:
    paths = []
    for f in range(files):
        path = root / f"jobs-{f:04d}.yaml"
        path.write_text("---\n".join(job(f * docs + d) for d in range(docs)), encoding="utf-8")
        paths.append(path)
    return paths


def write_layout(root: Path, files: int, docs: int) -> int:
    root.mkdir(parents=True)
    write_corpus(root, files, docs)
    return files * docs


# Bytecode is written (an installed wasp has it: pip compiles on install). With
# PYTHONDONTWRITEBYTECODE set, every module edited since its .pyc was written would be compiled
# again in every timed run: 15 ms of a one-manifest run in a work tree under development.
_ENV: t.Final = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> tuple[float, int, int, float]:
    """Wall time, exit code, peak RSS (KiB) and CPU seconds (the process and its workers) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, proc.returncode, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


@dataclass
class Timing:
    median: float  # wall seconds
    best: float  # wall seconds, the least disturbed run (the machines are shared and noisy)
    cpu: float  # median CPU seconds, which other load disturbs least
    rss: int  # KiB, the largest


def median_runs(cmds: list[list[str]], runs: int) -> list[Timing]:
    """Each command ``runs`` times, taken in turn (a burst of other load hits them all alike),
    after one untimed run of each (bytecode written, files in the page cache)."""
    for cmd in cmds:
        timed(cmd)
    results: list[list[tuple[float, int, float]]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, out in zip(cmds, results, strict=True):
            elapsed, rc, rss, cpu = timed(cmd)
            if rc not in (0, 1):
                sys.exit(f"{' '.join(cmd)} failed with exit code {rc}")
            out.append((elapsed, rss, cpu))
    timings = []
    for out in results:
        walls = [r[0] for r in out]
        timings.append(
            Timing(
                statistics.median(walls),
                min(walls),
                statistics.median(r[2] for r in out),
                max(r[1] for r in out),
            )
        )
    return timings


def median_run(cmd: list[str], runs: int) -> Timing:
    return median_runs([cmd], runs)[0]


def load() -> str:
    """The 1/5/15-minute load averages: a benchmark on a loaded machine says so."""
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kv-manifests", type=int, default=200, help="kubernetes-validate subset size")
    args = parser.parse_args()

    bindir = Path(sys.executable).parent
    wasp = shutil.which("wasp", path=str(bindir)) or shutil.which("wasp")
    kv = shutil.which("kubernetes-validate", path=str(bindir)) or shutil.which("kubernetes-validate")
    if wasp is None:
        sys.exit("wasp is not installed (pip install -e .)")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{cpus} CPUs; medians of {args.runs} runs; Job manifests of ~54 lines, 2% invalid; {load()}")

    with tempfile.TemporaryDirectory(prefix="wasp-bench-") as tmp:
        root = Path(tmp)
        layouts = [
            ("2,000 manifests in 20 files", "c20", 20, 100),
            ("2,000 manifests in 2,000 files", "c2000", 2000, 1),
            ("2,000 manifests in 1 file", "c1", 1, 2000),
            ("1 manifest in 1 file", "one", 1, 1),
        ]
        sizes = [write_layout(root / name, files, docs) for _, name, files, docs in layouts]
        cmds = [[wasp, "validate", "--summary", str(root / name)] for _, name, _, _ in layouts]
        # The floor: the least any wasp validate must do on the 20 files (benchmarks/cli_floor.py).
        floor_cmd = [sys.executable, str(Path(__file__).with_name("cli_floor.py"))]
        cmds.append([*floor_cmd, *map(str, sorted((root / "c20").iterdir()))])
        kv_n = 0
        if kv is not None:  # in the same rounds as wasp: a burst of load slows both alike
            subset = root / "kv"
            kv_n = write_layout(subset, max(1, args.kv_manifests // 100), min(100, args.kv_manifests))
            kv_cmd = [kv, "-k", "1.37.0", "--strict", "--quiet"]
            cmds.append([*kv_cmd, *map(str, sorted(subset.iterdir()))])
            cmds.append([*kv_cmd, *map(str, (root / "one").iterdir())])
        timings = median_runs(cmds, args.runs)
        floor = timings[len(layouts)]
        kv_rate = kv_cpu = kv_one = None
        if kv is not None:
            kv_run, kv_one = timings[-2], timings[-1]
            kv_rate, kv_cpu = kv_n / kv_run.median, kv_run.cpu / kv_n
            print(
                f"kubernetes-validate --strict: {kv_n} manifests in {kv_run.median:.2f} s = "
                f"{kv_rate:,.0f} manifests/s, {kv_cpu * 1e3:.1f} ms CPU per manifest"
            )
        print()
        print(
            "| what | wasp validate: median (best) | manifests/s: median (best) | CPU (per manifest) "
            "| kubernetes-validate --strict | ratio: wall (CPU) |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        for (label, _, _, _), n, run in zip(layouts, sizes, timings[: len(layouts)], strict=True):
            wall = f"{run.median * 1000:.0f} ms ({run.best * 1000:.0f} ms)"
            if n == 1:
                kv_cell = ratio = "-"
                if kv_one is not None:
                    kv_cell = f"{kv_one.median * 1000:.0f} ms (CPU {kv_one.cpu * 1000:.0f} ms)"
                    ratio = f"{kv_one.median / run.median:.1f}x ({kv_one.cpu / run.cpu:.1f}x)"
                print(f"| {label} | {wall} | - | {run.cpu * 1000:.0f} ms | {kv_cell} | {ratio} |")
                continue
            rates = f"{n / run.median:,.0f} ({n / run.best:,.0f})"
            cpu = f"{run.cpu * 1000:.0f} ms ({run.cpu / n * 1e6:.0f} µs)"
            kv_cell = ratio = "-"
            if kv_rate is not None and kv_cpu is not None:
                kv_cell = f"~{kv_rate:,.0f}/s (extrapolated: {n / kv_rate:,.0f} s)"
                ratio = f"{n / run.median / kv_rate:,.0f}x ({kv_cpu * n / run.cpu:,.0f}x)"
            print(f"| {label} | {wall} | {rates} | {cpu} | {kv_cell} | {ratio} |")
        n = sizes[0]
        wall = f"{floor.median * 1000:.0f} ms ({floor.best * 1000:.0f} ms)"
        rates = f"{n / floor.median:,.0f} ({n / floor.best:,.0f})"
        cpu = f"{floor.cpu * 1000:.0f} ms ({floor.cpu / n * 1e6:.0f} µs)"
        ratio = "-" if kv_rate is None else f"{n / floor.median / kv_rate:,.0f}x"
        print(f"| floor: parse + validate_object only, 20 files | {wall} | {rates} | {cpu} | - | {ratio} |")
        print(
            f"\nwasp validate on 20 files / floor: {timings[0].median / floor.median:.2f}x the wall time, "
            f"{timings[0].cpu / floor.cpu:.2f}x the CPU"
        )

        print()
        print("| peak memory (RSS) | 2,000 manifests | 20,000 manifests |")
        print("| --- | --- | --- |")
        write_layout(root / "m20k", 200, 100)
        for fmt in ("text", "junit", "json"):
            cells = []
            for name in ("c20", "m20k"):
                rss = median_run([wasp, "validate", "-o", fmt, "-j", "1", str(root / name)], 1).rss
                cells.append(f"{rss / 1024:.0f} MiB")
            print(f"| -o {fmt}, one process | {cells[0]} | {cells[1]} |")
        print()
        print(f"at the end: {load()}")


if __name__ == "__main__":
    main()
