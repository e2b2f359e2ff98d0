"""The declaration-only keywords of the building-block document (``x-k8s-*`` markers,
``x-wasp-internal``): checked at import, never exported, never in a CRD schema."""

from __future__ import annotations

import copy
import typing as t

import pytest

from webhook.cli.schema import block_names, render_schema
from webhook.declarative import document
from webhook.declarative.openapi import to_structural


def _keys(node: object) -> t.Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def _with(keyword: str, value: object) -> dict[str, t.Any]:
    doc = copy.deepcopy(document.SOURCE)
    doc["$defs"]["TopologyConstraint"]["properties"]["key"][keyword] = value
    return doc


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        pytest.param("x-k8s-immutible", True, id="a misspelt marker"),
        pytest.param("x-k8s-immutable", "yes", id="a marker with a non-boolean value"),
        pytest.param(
            "x-k8s-if-disabled", {"gate": "G", "forbiden": True}, id="ifDisabled with an unknown member"
        ),
        pytest.param("x-k8s-if-disabled", {"forbidden": True}, id="ifDisabled without its gate"),
        pytest.param(
            "x-k8s-if-disabled", {"gate": "G", "frozen": "no"}, id="ifDisabled frozen not a boolean"
        ),
    ],
)
def test_a_bad_marker_is_refused(keyword: str, value: object) -> None:
    with pytest.raises(ValueError, match=keyword):
        document._check_document(_with(keyword, value), exported=False)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        pytest.param("x-k8s-immutable", True, id="immutable"),
        pytest.param("x-k8s-value", True, id="value"),
        pytest.param("x-k8s-if-disabled", {"gate": "G", "forbidden": False}, id="ifDisabled"),
    ],
)
def test_a_known_marker_is_accepted_in_the_declarations_only(keyword: str, value: object) -> None:
    document._check_document(_with(keyword, value), exported=False)
    with pytest.raises(ValueError, match="declaration-only"):
        document._check_document(_with(keyword, value), exported=True)


def test_the_declarations_carry_markers() -> None:
    # Control: the tests below would pass vacuously on a document without markers.
    assert any(document.declaration_only(k) for k in _keys(document.SOURCE))


@pytest.mark.parametrize("fmt", ["jsonschema", "openapi"])
@pytest.mark.parametrize("block", [None, *block_names()])
def test_no_declaration_only_keyword_is_exported(fmt: str, block: str | None) -> None:
    assert not [k for k in _keys(render_schema(fmt, block)) if document.declaration_only(k)]


def test_to_structural_drops_markers_a_schema_still_carries() -> None:
    schema = _with("x-k8s-immutable", True)
    schema["$defs"]["TopologyConstraints"]["x-k8s-if-disabled"] = {"gate": "G"}
    out = to_structural({"$ref": "#/$defs/WorkloadPodGroupSchedulingConstraints"}, schema["$defs"])
    assert out["properties"]["topology"]["items"]["properties"]["key"]["type"] == "string"
    assert not [k for k in _keys(out) if document.declaration_only(k)]
