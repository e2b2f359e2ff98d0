"""Benchmark: what wasp's two YAML shortcuts buy a CI run (a script, not a test).

``wasp validate`` reads YAML with two shortcuts beside PyYAML (issue 29 item 4): the flat
constructor (webhook/manifests/constructor.py) and the fork pool that cuts large inputs at
``---`` lines (webhook/cli/parallel.py). This runs, in the same rounds, on 2,000 Job manifests
in 20 files (bench_cli.py's corpus):

* ``wasp validate`` as shipped;
* ``wasp validate -j 1``: the pool off;
* ``wasp validate`` with PyYAML's own ``CSafeLoader`` construction (``construct_document``,
  the duplicate-key check kept), through this script's ``--stock-yaml`` mode;
* ``kubeconform -n 2`` (the issue's guard rail: wasp at least 1.2x as fast), when found at
  ``$KUBECONFORM`` or on PATH, on the 1.37 schemas that the ``make-schemas`` script beside it
  lays out (it needs kubernetes-validate installed).

It prints the median and best wall time and the median CPU time (the process and its workers)
of each. On a shared machine, CPU time is the figure to trust: one process can never finish
before its CPU time, two can finish in half of theirs.

Run:  KUBECONFORM=.../kubeconform python benchmarks/bench_cli_yaml.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_cli import load, timed, write_layout


def _stock_yaml(args: list[str]) -> None:
    """Run ``wasp`` with PyYAML's own construction in place of the flat constructor."""
    import yaml

    from webhook.manifests import constructor, loader

    class StockLoader(yaml.CSafeLoader):
        # PyYAML's resolver and construct_document, with wasp's duplicate-key check.
        construct = constructor.YamlLoader.construct_pyyaml

    loader.YamlLoader = StockLoader  # type: ignore[misc]
    from webhook.cli.main import cli

    sys.argv = ["wasp", *args]
    cli()


def _kubeconform(root: Path, files: list[str]) -> list[str] | None:
    found = os.environ.get("KUBECONFORM") or shutil.which("kubeconform")
    if found is None or not os.access(found, os.X_OK):
        return None
    schemas = root / "schemas"
    made = subprocess.run(
        [sys.executable, str(Path(found).with_name("make-schemas")), str(schemas)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        return None
    layout = "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
    return [
        found, "-kubernetes-version", "1.37.0", "-strict", "-summary", "-n", "2",
        "-schema-location", f"{schemas}/{layout}", *files,
    ]  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--stock-yaml"]:
        _stock_yaml(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    wasp = shutil.which("wasp", path=str(Path(sys.executable).parent)) or shutil.which("wasp")
    if wasp is None:
        sys.exit("wasp is not installed (pip install -e .)")
    with tempfile.TemporaryDirectory(prefix="wasp-bench-yaml-") as tmp:
        root = Path(tmp)
        n = write_layout(root / "c20", 20, 100)
        corpus = str(root / "c20")
        cmds = {
            "wasp validate": [wasp, "validate", "--summary", corpus],
            "wasp validate -j 1 (no pool)": [wasp, "validate", "--summary", "-j", "1", corpus],
            "wasp validate, PyYAML's construction": [
                sys.executable, __file__, "--stock-yaml", "validate", "--summary", corpus,
            ],
        }  # fmt: skip
        kc = _kubeconform(root, sorted(map(str, (root / "c20").iterdir())))
        if kc is not None:
            cmds["kubeconform -n 2"] = kc
        print(f"{n:,} Job manifests in 20 files; medians of {args.runs} rounds; {load()}")
        for cmd in cmds.values():  # untimed: bytecode written, files in the page cache
            timed(cmd)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
        for _ in range(args.runs):
            for name, cmd in cmds.items():
                wall, code, _, cpu = timed(cmd)
                if code not in (0, 1):
                    sys.exit(f"{name} failed with exit code {code}")
                runs[name].append((wall, cpu))
        print("\n| what | wall: median (best) | CPU: median | manifests/s (median wall) |")
        print("| --- | --- | --- | --- |")
        for name, got in runs.items():
            wall = statistics.median(w for w, _ in got)
            cpu = statistics.median(c for _, c in got)
            best = min(w for w, _ in got)
            print(
                f"| {name} | {wall * 1000:.0f} ms ({best * 1000:.0f} ms) | {cpu * 1000:.0f} ms | {n / wall:,.0f} |"
            )
        print(f"\nat the end: {load()}")


if __name__ == "__main__":
    main()
