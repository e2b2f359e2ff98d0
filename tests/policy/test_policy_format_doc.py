"""docs/policy-format.md documents every key of the policy schema (webhook/policy/schema.py).

A key counts as documented when it is a whole word of some backticked span of the page
(`podCount`, `groups.indexLabel`, `forEachOver: map`), so a field added to the schema without
a word in the reference fails here.
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

import pytest

from webhook.policy.schema import POLICY_SCHEMA

DOC: t.Final = Path(__file__).resolve().parents[2] / "docs" / "policy-format.md"
_SPAN: t.Final = re.compile(r"`([^`\n]+)`")
_WORD_BREAK: t.Final = re.compile(r"[^A-Za-z0-9_]+")


def schema_keys(schema: t.Mapping[str, t.Any], where: str) -> t.Iterator[tuple[str, str]]:
    """``(location, key)`` of every property below ``schema``; ``$ref``s are not followed (the
    definitions they name are walked once, from ``$defs``)."""
    for key, sub in schema.get("properties", {}).items():
        location = f"{where}.{key}" if where else key
        yield location, key
        yield from schema_keys(sub, location)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from schema_keys(items, f"{where}[]")
    for name, sub in schema.get("$defs", {}).items():
        yield from schema_keys(sub, f"$defs.{name}")


KEYS: t.Final = list(schema_keys(POLICY_SCHEMA, ""))


def documented_words(text: str) -> set[str]:
    return {word for span in _SPAN.findall(text) for word in _WORD_BREAK.split(span) if word}


@pytest.mark.parametrize("key", [pytest.param(key, id=location) for location, key in KEYS])
def test_schema_key_is_in_the_reference(key: str) -> None:
    if key not in documented_words(DOC.read_text(encoding="utf-8")):
        pytest.fail(
            f"{key!r} is a policy key (webhook/policy/schema.py) that docs/policy-format.md never names"
        )


@pytest.mark.parametrize(
    "location",
    [
        pytest.param("spec.target.versions", id="spec-field"),
        pytest.param("spec.defaults[].set.resourceClaims", id="through-array-items"),
        pytest.param("spec.stamping.childTemplates[].templates[].only", id="nested-arrays"),
        pytest.param("$defs.node.groups.countLabel", id="node-definition"),
        pytest.param("$defs.node.podLabel.value", id="node-object-field"),
    ],
)
def test_the_walk_reaches(location: str) -> None:
    # Guards the test above: a walk that stopped early would check nothing.
    assert location in {where for where, _ in KEYS}


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        pytest.param("`podCount`", "podCount", True, id="alone"),
        pytest.param("`groups.indexLabel`", "indexLabel", True, id="in-a-dotted-path"),
        pytest.param("`forEachOver: map`", "forEachOver", True, id="yaml-key"),
        pytest.param("podCount without backticks", "podCount", False, id="prose-only"),
        pytest.param("`podCounts`", "podCount", False, id="part-of-a-word"),
    ],
)
def test_documented_words(text: str, key: str, expected: bool) -> None:
    assert (key in documented_words(text)) is expected
