"""Benchmark: the two CEL libraries on the registry, on wasp's own default conditions.

The mutating webhook evaluates a policy rule's `when:` CEL expression against the object.
This script compares, side by side in one run, `common-expression-language` (Rust `cel`,
what wasp uses) and `cel-python` (`celpy`, pure Python) on the conditions of the shipped
example policies (`examples/policies/*.yaml`) over realistic Jobs:

* correctness: each library's answer for every (expression, Job) pair against the expected
  answer; a library that raises where the answer is defined, or answers wrongly, is wrong;
* cost: median µs to bind the object (once per request) and to evaluate each expression.

cel-python is installed into the running environment with pip when it is missing (the
registry is the only network these machines reach). Not a test: it prints figures.

Run:  python benchmarks/bench_cel.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import copy
import importlib
import statistics
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
Json = dict[str, t.Any]


def conditions() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO / "examples" / "policies").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for rule in doc["spec"].get("defaults", []):
            if "when" in rule:
                out.append((f"{path.stem}:{rule['name']}", rule["when"]))
    return out


def job(
    *, parallelism: int | None = 8, indexed: bool = True, gpu: bool = True, stamped: bool = False
) -> Json:
    spec: Json = {
        "completions": parallelism,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "sidecar", "image": "busybox"},
                    {
                        "name": "trainer",
                        "image": "registry.example/trainer:1",
                        "env": [{"name": f"E{i}", "value": str(i)} for i in range(12)],
                        "resources": {"limits": {"cpu": "8", **({"nvidia.com/gpu": "8"} if gpu else {})}},
                    },
                ],
            }
        },
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if indexed:
        spec["completionMode"] = "Indexed"
    if stamped:
        spec["template"]["spec"]["schedulingGroup"] = {"podGroupName": "pg"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": spec,
    }


# (name, object, expected answer per condition name prefix)
JOBS: list[tuple[str, Json, dict[str, bool]]] = [
    ("indexed gang-shaped GPU job", job(), {"batch-job-implicit-gang": True, "batch-job-gpu-rack": True}),
    (
        "non-indexed, no GPU",
        job(indexed=False, gpu=False),
        {"batch-job-implicit-gang": False, "batch-job-gpu-rack": False},
    ),
    ("parallelism 1", job(parallelism=1), {"batch-job-implicit-gang": False, "batch-job-gpu-rack": True}),
    (
        "parallelism unset",
        job(parallelism=None),
        {"batch-job-implicit-gang": False, "batch-job-gpu-rack": True},
    ),
    (
        "user-managed schedulingGroup",
        job(stamped=True),
        {"batch-job-implicit-gang": False, "batch-job-gpu-rack": False},
    ),
]


def ensure_celpy() -> t.Any:
    try:
        return importlib.import_module("celpy")
    except ImportError:
        print("installing cel-python for the comparison ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "cel-python"], check=True)
        return importlib.import_module("celpy")


class Rust:
    name = "common-expression-language (Rust)"

    def __init__(self) -> None:
        import cel

        self.cel = cel

    def compile(self, src: str) -> t.Any:
        return self.cel.compile(src)

    def bind(self, obj: Json) -> t.Any:
        ctx = self.cel.Context()
        ctx.add_variable("object", obj)
        return ctx

    def run(self, program: t.Any, bound: t.Any) -> object:
        return program.execute(bound)


class Celpy:
    name = "cel-python (pure Python)"

    def __init__(self) -> None:
        self.celpy = ensure_celpy()
        self.env = self.celpy.Environment()

    def compile(self, src: str) -> t.Any:
        return self.env.program(self.env.compile(src))

    def bind(self, obj: Json) -> t.Any:
        return {"object": self.celpy.json_to_cel(obj)}

    def run(self, program: t.Any, bound: t.Any) -> object:
        result = program.evaluate(bound)
        if isinstance(result, Exception):
            raise result
        return bool(result)


def median_us(fn: t.Callable[[], object], repeat: int, number: int = 300) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    exprs = conditions()
    libraries = [Rust(), Celpy()]
    print(f"{len(exprs)} conditions from examples/policies x {len(JOBS)} Jobs\n")
    timings: dict[str, dict[str, float]] = {}
    for lib in libraries:
        programs = {name: lib.compile(src) for name, src in exprs}
        wrong = []
        for job_name, obj, expected in JOBS:
            bound = lib.bind(copy.deepcopy(obj))
            for name, program in programs.items():
                want = expected[name.split(":")[0]]
                try:
                    got: object = lib.run(program, bound)
                except Exception as exc:  # noqa: BLE001 - a raise where the answer is defined is wrong
                    got = f"{type(exc).__name__}"
                if got is not want:
                    wrong.append(f"{name} on {job_name!r}: expected {want}, got {got}")
        obj = JOBS[0][1]
        bound = lib.bind(obj)
        timings[lib.name] = {"bind": median_us(lambda lib=lib, obj=obj: lib.bind(obj), args.repeat)}
        for name, program in programs.items():
            timings[lib.name][name] = median_us(
                lambda p=program, b=bound, lib=lib: lib.run(p, b), args.repeat
            )
        verdict = "correct on every case" if not wrong else f"{len(wrong)} wrong answers"
        print(f"{lib.name}: {verdict}")
        for line in wrong:
            print(f"  - {line}")
    print()
    rows = ["bind"] + [name for name, _ in exprs]
    rust, py = (lib.name for lib in libraries)
    print(f"{'median µs':56s} {'Rust':>10s} {'cel-python':>12s} {'ratio':>8s}")
    for row in rows:
        a, b = timings[rust][row], timings[py][row]
        print(f"{row:56s} {a:10.1f} {b:12.1f} {b / a:7.1f}x")
    total_a = sum(timings[rust].values())
    total_b = sum(timings[py].values())
    print(
        f"{'per request (bind + every condition)':56s} {total_a:10.1f} {total_b:12.1f} {total_b / total_a:7.1f}x"
    )


if __name__ == "__main__":
    main()
