"""The golden example suite (``tests/examples``), independent of pytest.

The suite drives ``validate_object`` here and, through the same cases, the CLI and the
webhook handler, so every front end must agree with the expected field errors.

Layout, one case per object file (the case id is the file stem, unique across the suite)::

    tests/examples/valid/<case>.yaml              must be admitted with no errors
    tests/examples/invalid/<case>.yaml            must be denied
    .../<case>.expected.json                      required for invalid cases, optional for valid ones:
                                                  {"errors": [{"type": ..., "field": ...}, ...],
                                                   "warnings": <count>}   ("warnings" optional)
    .../<case>.old.yaml                           optional: the stored object; the case is then an UPDATE

Adding a case needs no code. Expected errors are compared as a multiset of ``(type, field)``
pairs (:func:`error_keys` sorts them), because the order in which independent layers report
is not part of the contract.
"""

from __future__ import annotations

import json
import typing as t
from dataclasses import dataclass
from pathlib import Path

import yaml

from webhook.policy import PolicySet

__all__ = [
    "EXAMPLE_POLICIES",
    "GOLDEN_DIR",
    "GoldenCase",
    "GoldenError",
    "discover_cases",
    "error_keys",
    "golden_policies",
]

REPO_ROOT: t.Final = Path(__file__).resolve().parent.parent
GOLDEN_DIR: t.Final = REPO_ROOT / "tests" / "examples"
EXAMPLE_POLICIES: t.Final = (
    REPO_ROOT / "examples" / "trainer" / "policy.yaml",
    REPO_ROOT / "examples" / "rolebased" / "policy.yaml",
)
_OLD_SUFFIX: t.Final = ".old.yaml"
_EXPECTED_SUFFIX: t.Final = ".expected.json"


class GoldenError(ValueError):
    """A malformed golden case (bad YAML, bad expected file, stray or duplicate files)."""


@dataclass(frozen=True)
class GoldenCase:
    """One golden case.

    ``old_obj`` is ``None`` for a CREATE. ``expected_errors`` is sorted; it is empty for
    every valid case. ``expected_warning_count`` is ``None`` when the case does not pin it.
    """

    id: str
    path: Path
    obj: object
    old_obj: object | None
    expected_errors: list[tuple[str, str]]
    expected_warning_count: int | None

    @property
    def valid(self) -> bool:
        return self.path.parent.name == "valid"


def error_keys(pairs: t.Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(type, field)`` pairs in a canonical order, so two lists compare as multisets."""
    return sorted(pairs)


def _load_yaml(path: Path) -> object:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise GoldenError(f"{path}: not valid YAML: {exc}") from exc


def _load_expected(path: Path) -> tuple[list[tuple[str, str]], int | None]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise GoldenError(f"{path}: not valid JSON: {exc}") from exc
    if (
        not isinstance(doc, dict)
        or set(doc) - {"errors", "warnings"}
        or not isinstance(doc.get("errors"), list)
    ):
        raise GoldenError(f'{path}: expected {{"errors": [...], "warnings": <count, optional>}}')
    errors = []
    for i, entry in enumerate(doc["errors"]):
        if (
            not isinstance(entry, dict)
            or set(entry) != {"type", "field"}
            or not all(isinstance(v, str) for v in entry.values())
        ):
            raise GoldenError(f'{path}: errors[{i}] must be {{"type": <str>, "field": <str>}}')
        errors.append((entry["type"], entry["field"]))
    warnings = doc.get("warnings")
    if warnings is not None and (not isinstance(warnings, int) or isinstance(warnings, bool) or warnings < 0):
        raise GoldenError(f"{path}: warnings must be a non-negative integer count")
    return error_keys(errors), warnings


def _case(path: Path) -> GoldenCase:
    stem = path.name.removesuffix(".yaml")
    old_path = path.with_name(stem + _OLD_SUFFIX)
    expected_path = path.with_name(stem + _EXPECTED_SUFFIX)
    valid = path.parent.name == "valid"
    errors: list[tuple[str, str]] = []
    warnings = None
    if expected_path.exists():
        errors, warnings = _load_expected(expected_path)
    elif not valid:
        raise GoldenError(f"{path}: an invalid case needs {expected_path.name} beside it")
    if valid and errors:
        raise GoldenError(f"{expected_path}: a valid case cannot expect errors")
    if not valid and not errors:
        raise GoldenError(f"{expected_path}: an invalid case must expect at least one error")
    return GoldenCase(
        id=stem,
        path=path,
        obj=_load_yaml(path),
        old_obj=_load_yaml(old_path) if old_path.exists() else None,
        expected_errors=errors,
        expected_warning_count=warnings,
    )


def discover_cases(root: Path = GOLDEN_DIR) -> list[GoldenCase]:
    """Every case under ``root``/valid and ``root``/invalid, sorted by id.

    Raises :class:`GoldenError` for a malformed case, an id used twice, or an ``.old.yaml``
    or ``.expected.json`` file with no case beside it.
    """
    cases: dict[str, GoldenCase] = {}
    for kind in ("valid", "invalid"):
        directory = root / kind
        if not directory.is_dir():
            continue
        stems = set()
        for path in sorted(directory.glob("*.yaml")):
            if path.name.endswith(_OLD_SUFFIX):
                continue
            case = _case(path)
            if case.id in cases:
                raise GoldenError(f"{path}: case id {case.id!r} is also used by {cases[case.id].path}")
            cases[case.id] = case
            stems.add(case.id)
        for extra in sorted(directory.iterdir()):
            for suffix in (_OLD_SUFFIX, _EXPECTED_SUFFIX):
                if extra.name.endswith(suffix) and extra.name.removesuffix(suffix) not in stems:
                    raise GoldenError(f"{extra}: no case {extra.name.removesuffix(suffix)}.yaml beside it")
    return sorted(cases.values(), key=lambda c: c.id)


def golden_policies() -> PolicySet:
    """The policies the golden cases assume: the built-ins plus ``examples/*/policy.yaml``,
    with the default feature gates.
    """
    return PolicySet.load(list(EXAMPLE_POLICIES))
