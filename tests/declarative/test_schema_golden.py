"""``wasp schema`` output is frozen: every form it prints, compared as text (key order included)
with ``golden/wasp_schema.json``, recorded before the rule declarations were factored.

Any change to what the building-block document exports (the whole document, each block, each
CRD structural schema) fails here; a deliberate change regenerates the golden file.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest

from webhook.cli.schema import block_names, render_schema

GOLDEN: t.Final = json.loads(
    (Path(__file__).parent / "golden" / "wasp_schema.json").read_text(encoding="utf-8")
)


def _invocation(label: str) -> tuple[str, str | None]:
    fmt, _, rest = label.partition(" --block ")
    return fmt, rest or None


def test_golden_covers_every_form() -> None:
    expected = {"jsonschema", "openapi"}
    expected |= {f"{fmt} --block {b}" for fmt in ("jsonschema", "openapi") for b in block_names()}
    assert set(GOLDEN) == expected


@pytest.mark.parametrize("label", sorted(GOLDEN))
def test_wasp_schema_output_is_unchanged(label: str) -> None:
    fmt, block = _invocation(label)
    actual = json.dumps(render_schema(fmt, block), indent=2)
    assert actual == json.dumps(GOLDEN[label], indent=2)


def _nodes(node: object) -> t.Iterator[dict[str, t.Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


@pytest.mark.parametrize(
    ("rule", "is_rule"),
    [
        (
            "topology maxItems",
            lambda n: "maxItems" in n and n.get("items") == {"$ref": "#/$defs/TopologyConstraint"},
        ),
        (
            "resource claims maxItems",
            lambda n: "maxItems" in n and "WorkloadPodGroupResourceClaim" in str(n.get("items")),
        ),
    ],
)
def test_list_limit_is_declared_once(rule: str, is_rule: t.Callable[[dict[str, t.Any]], bool]) -> None:
    from webhook.declarative.document import SOURCE

    assert len([n for n in _nodes(SOURCE) if is_rule(n)]) == 1, rule


def test_scheduling_objects_apply_the_declared_limits() -> None:
    from webhook.declarative import BlockType, block_schema
    from webhook.scheduling_objects.declared import STRUCTS

    for struct, block in [
        ("PodGroupTemplate", BlockType.CONSTRAINTS),
        ("PodGroupSpec", BlockType.CONSTRAINTS),
        ("CompositePodGroupTemplate", BlockType.COMPOSITE_CONSTRAINTS),
        ("CompositePodGroupSpec", BlockType.COMPOSITE_CONSTRAINTS),
    ]:
        topology = STRUCTS[struct]["properties"]["schedulingConstraints"]["properties"]["topology"]
        assert topology["maxItems"] == block_schema(block)["properties"]["topology"]["maxItems"]
    for struct in ("PodGroupTemplate", "PodGroupSpec"):
        claims = STRUCTS[struct]["properties"]["resourceClaims"]
        assert claims["maxItems"] == block_schema(BlockType.RESOURCE_CLAIMS)["maxItems"]


def test_one_edit_changes_the_topology_limit_everywhere() -> None:
    """Raising TopologyConstraints.maxItems in the source is seen by both embedded blocks (what
    the engines run and wasp schema exports) and by every v1beta1 struct the interpreter walks."""
    from webhook.declarative import document

    source = json.loads(json.dumps(document.SOURCE))
    source["$defs"]["TopologyConstraints"]["maxItems"] = 3
    exported = document._export(source)["$defs"]
    for block in ("WorkloadPodGroupSchedulingConstraints", "WorkloadCompositePodGroupSchedulingConstraints"):
        assert exported[block]["properties"]["topology"]["maxItems"] == 3
    for struct in ("PodGroupTemplate", "CompositePodGroupTemplate", "PodGroupSpec", "CompositePodGroupSpec"):
        declared = document._inline(source["$defs"][struct], source["$defs"])
        assert declared["properties"]["schedulingConstraints"]["properties"]["topology"]["maxItems"] == 3
