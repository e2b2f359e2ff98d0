"""Benchmark: ``wasp validate`` end to end against ``kubernetes-validate`` (a script, not a test).

Generates a corpus of Job manifests (default 100 files x 100 documents, ~54 lines each, with
full ``spec.scheduling`` blocks; 2% invalid) in a temporary directory, then runs

* the installed ``wasp validate`` console script as a subprocess (process start, imports and
  policy loading included), median of 3 runs, and
* ``kubernetes-validate -k 1.37.0 --strict`` on a subset (it manages ~65 manifests/s, so the
  whole corpus would take minutes); its rate is extrapolated to the corpus.

Run:  python benchmarks/bench_cli.py [--files 100] [--docs 100] [--kv-manifests 500]
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


def timed(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--docs", type=int, default=100, help="documents per file")
    parser.add_argument("--kv-manifests", type=int, default=500, help="kubernetes-validate subset size")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None, help="pass -j to wasp (default: automatic)")
    args = parser.parse_args()

    bindir = Path(sys.executable).parent
    wasp = shutil.which("wasp", path=str(bindir)) or shutil.which("wasp")
    kv = shutil.which("kubernetes-validate", path=str(bindir)) or shutil.which("kubernetes-validate")
    if wasp is None:
        sys.exit("wasp is not installed (pip install -e .)")
    total = args.files * args.docs
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"corpus: {args.files} files x {args.docs} Job manifests = {total} manifests; {cpus} CPUs")

    with tempfile.TemporaryDirectory(prefix="wasp-bench-") as tmp:
        root = Path(tmp)
        paths = write_corpus(root, args.files, args.docs)
        size = sum(p.stat().st_size for p in paths)
        print(
            f"corpus size: {size / 1e6:.1f} MB, {sum(p.read_text().count(chr(10)) for p in paths) // total} lines/manifest"
        )

        cmd = [wasp, "validate", "--summary", str(root)]
        if args.jobs:
            cmd[2:2] = ["-j", str(args.jobs)]
        times = []
        for _ in range(args.runs):
            elapsed, rc = timed(cmd)
            if rc not in (0, 1):
                sys.exit(f"wasp validate failed with exit code {rc}")
            times.append(elapsed)
        wasp_time = statistics.median(times)
        wasp_rate = total / wasp_time
        print(
            f"wasp validate: median {wasp_time:.2f} s of {[round(t, 2) for t in times]} -> {wasp_rate:,.0f} manifests/s"
        )

        if kv is None:
            print("kubernetes-validate not installed: no comparison")
            return
        # kubernetes-validate takes files; give it whole files until the subset is reached.
        subset_files = max(1, args.kv_manifests // args.docs)
        subset = paths[:subset_files]
        n = subset_files * args.docs
        elapsed, _ = timed([kv, "-k", "1.37.0", "--strict", "--quiet", *map(str, subset)])
        kv_rate = n / elapsed
        print(
            f"kubernetes-validate --strict: {n} manifests in {elapsed:.2f} s -> {kv_rate:,.0f} manifests/s "
            f"(extrapolated to the corpus: {total / kv_rate:,.0f} s)"
        )
        print(f"ratio: wasp is {wasp_rate / kv_rate:,.0f}x faster")


if __name__ == "__main__":
    main()
