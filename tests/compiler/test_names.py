"""Naming (docs/design.md §6.10): row 55's upstream vectors and the 253-character truncation branches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from webhook.compiler.names import MAX_NAME_LENGTH, generate_pod_group_name, generate_workload_name

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def reference_hash(data: str) -> str:
    """An independent FNV-1a 32 + SafeEncodeString, straight from the docs/design.md §6.10 description."""
    h = 2166136261
    for byte in data.encode():
        h = ((h ^ byte) * 16777619) % 2**32
    return "".join(ALPHABET[ord(d) % 27] for d in str(h))


@dataclass(frozen=True)
class Vector:
    id: str
    got: Callable[[], str]
    expected: str


VECTORS = [
    Vector(
        "row-55: workload name for job / uid-1",
        lambda: generate_workload_name("job", "uid-1"),
        "job-647cf7d9",
    ),
    Vector(
        "row-55: workload name with an empty owner is the bare hash",
        lambda: generate_workload_name("", "uid-1"),
        "647cf7d9",
    ),
    Vector(
        "row-55: workload name for trainer / job-uid",
        lambda: generate_workload_name("trainer", "job-uid"),
        "trainer-7dccc85c97",
    ),
    Vector(
        "row-55: pod-group name of two empty inputs is the hash of empty input",
        lambda: generate_pod_group_name("", ""),
        "65bb57b6b5",
    ),
    Vector(
        "row-55: pod-group name with an empty workload",
        lambda: generate_pod_group_name("", "template"),
        "template-5cbb944dc9",
    ),
    Vector(
        "row-55: pod-group name with an empty template",
        lambda: generate_pod_group_name("workload", ""),
        "workload-c5546b9dd",
    ),
    Vector(
        "row-55: pod-group name of the worked example",
        lambda: generate_pod_group_name("trainer-7dccc85c97", "trainer-pgt-0"),
        "trainer-7dccc85c97-trainer-pgt-0-5bbdf84755",
    ),
    Vector(
        "row-55: a workload-name cut does not clean up a trailing dash",
        lambda: generate_workload_name("a" * 242 + "-" + "b" * 50, "uid"),
        "a" * 242 + "--" + reference_hash("(types.UID)uid"),
    ),
]


@pytest.mark.parametrize("case", VECTORS, ids=[c.id for c in VECTORS])
def test_name_vectors(case: Vector) -> None:
    assert case.got() == case.expected


@pytest.mark.parametrize(
    ("uid", "expected"),
    [("uid-1", "647cf7d9"), ("job-uid", "7dccc85c97")],
    ids=["row-55: the reference hash reproduces uid-1", "row-55: the reference hash reproduces job-uid"],
)
def test_reference_hash_reproduces_the_upstream_constants(uid: str, expected: str) -> None:
    assert reference_hash(f"(types.UID){uid}") == expected


# --------------------------------------------------------------------------- truncation


@dataclass(frozen=True)
class Cut:
    id: str
    workload: str
    template: str
    kept: tuple[int, int]  # expected lengths of the workload and template parts


CUTS = [
    Cut(
        "row-55: both long: the odd extra character goes to the workload name",
        "w" * 200,
        "t" * 200,
        (121, 120),
    ),
    Cut(
        "row-55: both long and of different lengths: still half and half plus one",
        "w" * 150,
        "t" * 400,
        (121, 120),
    ),
    Cut("row-55: workload short: kept whole, the template gets the rest", "w" * 10, "t" * 300, (10, 231)),
    Cut("row-55: workload exactly half the budget: kept whole", "w" * 120, "t" * 300, (120, 121)),
    Cut("row-55: template short: kept whole, the workload gets the rest", "w" * 300, "t" * 10, (231, 10)),
]


@pytest.mark.parametrize("case", CUTS, ids=[c.id for c in CUTS])
def test_pod_group_name_truncation(case: Cut) -> None:
    name = generate_pod_group_name(case.workload, case.template)
    h = reference_hash(case.workload + case.template)
    # Every case here has a 10-character hash: budget 241, half 120.
    assert len(h) == 10
    assert len(name) == MAX_NAME_LENGTH == 253
    w, tn = case.kept
    assert name == f"{case.workload[:w]}-{case.template[:tn]}-{h}"


@pytest.mark.parametrize(
    ("got", "prefix", "hashed"),
    [
        (lambda: generate_workload_name("a" * 300, "uid"), "a", "(types.UID)uid"),
        (lambda: generate_pod_group_name("", "x" * 300), "x", "x" * 300),
        (lambda: generate_pod_group_name("y" * 300, ""), "y", "y" * 300),
    ],
    ids=[
        "row-55: a long workload name is cut to exactly 253 characters",
        "row-55: a long template with an empty workload is cut to exactly 253 characters",
        "row-55: a long workload with an empty template is cut to exactly 253 characters",
    ],
)
def test_single_part_truncation(got: Callable[[], str], prefix: str, hashed: str) -> None:
    name = got()
    h = reference_hash(hashed)
    assert len(name) == 253
    assert name == prefix * (253 - len(h) - 1) + "-" + h


def test_short_names_are_not_cut() -> None:
    assert generate_pod_group_name(
        "w" * 100, "t" * 100
    ) == "w" * 100 + "-" + "t" * 100 + "-" + reference_hash("w" * 100 + "t" * 100)
