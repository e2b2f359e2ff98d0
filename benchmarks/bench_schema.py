"""Micro-benchmark of the structural layer (not a test).

Prints the median microseconds per call, side by side, for:

* python-jsonschema (the reference engine, with wasp's keyword and format extensions),
* jsonschema_rs (the fast engine, same extensions),
* fastjsonschema (when it compiles the schema; it ignores ``x-kubernetes-list-map-keys``,
  so its verdict is incomplete and it is shown for scale only),
* ``validate_block`` (normalisation + fast verdict, + reference enumeration when invalid),
* ``validate_block`` under ``reference_engine_only()`` (the same call with the fast verdict
  switched off: what the one remaining shortcut of the structural layer buys),

on a full valid ``SchedulingConfiguration`` (docs/design.md §7.7, the call a Job review makes),
on each of its blocks, and on an invalid configuration.

Run: ``python benchmarks/bench_schema.py [--repeat N]`` from the repository root.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webhook import declarative as S  # noqa: E402
from webhook.declarative import BlockType, reference_engine_only, validate_block  # noqa: E402
from webhook.vocab.field import FieldPath  # noqa: E402
from webhook.vocab.formats import FORMAT_CHECKERS  # noqa: E402

BASE = FieldPath.parse("spec.scheduling")

VALID: dict[str, Any] = {
    "schedulingPolicy": {"gang": {"minCount": 8}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
    "disruptionMode": {"all": {}},
    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "llm-gpu-template"}],
}
INVALID: dict[str, Any] = {
    "schedulingPolicy": {"gang": {"minCount": 0}, "basic": {}},
    "schedulingConstraints": {"topology": [{"key": "a" * 254}]},
    "disruptionMode": {},
    "resourceClaims": [
        {"name": "../claim", "resourceClaimName": "x", "resourceClaimTemplateName": "y"},
        {"name": "../claim", "resourceClaimName": "x"},
    ],
}

GANG: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 8}}}

# (label, block, value)
CASES: list[tuple[str, BlockType, Any]] = [
    ("SchedulingConfiguration (valid)", BlockType.SCHEDULING, VALID),
    ("SchedulingConfiguration (gang only)", BlockType.SCHEDULING, GANG),
    ("  schedulingPolicy", BlockType.POLICY, VALID["schedulingPolicy"]),
    ("  schedulingConstraints", BlockType.CONSTRAINTS, VALID["schedulingConstraints"]),
    ("  disruptionMode", BlockType.DISRUPTION, VALID["disruptionMode"]),
    ("  resourceClaims[0]", BlockType.RESOURCE_CLAIM, VALID["resourceClaims"][0]),
    ("SchedulingConfiguration (invalid)", BlockType.SCHEDULING, INVALID),
    # maxItems short-circuits before the reference engine: one error, no per-item work.
    (
        "200,000 topology entries (invalid)",
        BlockType.SCHEDULING,
        {"schedulingConstraints": {"topology": [{"key": "k"}] * 200_000}},
    ),
]


def reference_only(block: BlockType, value: Any) -> None:
    with reference_engine_only():
        validate_block(block, value, BASE)


def median_us(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up (lazy imports, caches)
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, number // 4)
    samples = timer.repeat(repeat=repeat, number=number)
    return statistics.median(samples) / number * 1e6


def _negate(check: Callable[[str], list[str]]) -> Callable[[str], bool]:
    return lambda s: not check(s)


def fastjsonschema_for(schema: dict[str, Any]) -> Callable[[Any], object] | None:
    try:
        import fastjsonschema
    except ImportError:
        return None
    formats = {name: _negate(check) for name, check in FORMAT_CHECKERS.items()}
    try:
        compiled = fastjsonschema.compile(schema, formats=formats)
    except Exception as exc:  # noqa: BLE001 - report and carry on without it
        print(f"fastjsonschema cannot compile the schema: {exc}", file=sys.stderr)
        return None

    def run(value: Any) -> object:
        try:
            return compiled(value)
        except fastjsonschema.JsonSchemaValueException:
            return False

    return run


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    header = (
        f"{'case':36} {'jsonschema':>10} {'rs':>9} {'fastjs':>9} {'validate':>9} {'ref-only':>9}"
        f"  {'ref/vb':>6} {'vb/rs':>6}"
    )
    print("median µs per call")
    print(header)
    print("-" * len(header))
    for label, block, value in CASES:
        schema = S.compiled_schema(block)
        py = S.reference_validator(schema)
        rs = S.fast_validator(schema)
        fj = fastjsonschema_for(schema)
        t_py = median_us(lambda py=py, value=value: list(py.iter_errors(value)), args.repeat)
        t_rs = median_us(lambda rs=rs, value=value: rs.is_valid(value), args.repeat)
        t_fj = median_us(lambda fj=fj, value=value: fj(value), args.repeat) if fj else None
        t_vb = median_us(lambda block=block, value=value: validate_block(block, value, BASE), args.repeat)
        t_ref = median_us(lambda block=block, value=value: reference_only(block, value), args.repeat)
        print(
            f"{label:36} {fmt(t_py):>10} {fmt(t_rs)} {fmt(t_fj)} {fmt(t_vb)} {fmt(t_ref)}"
            f"  {t_ref / t_vb:6.1f} {t_vb / t_rs:6.2f}"
        )

    t_update = median_us(
        lambda: validate_block(BlockType.SCHEDULING, INVALID, BASE, old=INVALID),
        args.repeat,
    )
    print()
    print(f"invalid configuration, unchanged on update (ratchet):   {t_update:8.2f} µs")
    print("columns: ref-only = validate_block with the fast verdict off (reference_engine_only);")
    print("         ref/vb = ref-only ÷ validate_block; vb/rs = validate_block ÷ jsonschema_rs")
    print("fastjsonschema ignores x-kubernetes-list-map-keys: shown for scale, not a complete verdict")


if __name__ == "__main__":
    main()
