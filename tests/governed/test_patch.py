"""The copy-on-write helper and the patch encoding (``webhook.governed.patch``), and every golden
example's mutation patch applied with ``jsonpatch``."""

from __future__ import annotations

import base64
import copy
import typing as t
from pathlib import Path

import pytest
import yaml
from golden import EXAMPLE_POLICIES, REPO_ROOT, GoldenCase, discover_cases, golden_policies
from patch_oracle import check_patch

from webhook.governed.mutation import mutate_object
from webhook.governed.patch import assoc, encode_patch
from webhook.governed.validation import validate_object
from webhook.policy import BUILTIN_POLICY_DIR, PolicySet
from webhook.vocab.field import FieldPath

Json = dict[str, t.Any]
P = FieldPath.parse


ASSOC = [
    ("a value lands at an existing path", {"a": {"b": 1}}, "a.b", 2, {"a": {"b": 2}}),
    ("missing mappings are created", {"a": {}}, "a.b.c", 1, {"a": {"b": {"c": 1}}}),
    ("a null mapping is replaced by a new one", {"a": None}, "a.b", 1, {"a": {"b": 1}}),
    (
        "list elements are copied and written",
        {"l": [{"x": 1}, {"x": 2}]},
        "l[1].y",
        3,
        {"l": [{"x": 1}, {"x": 2, "y": 3}]},
    ),
]


@pytest.mark.parametrize(
    ("original", "path", "value", "expected"), [a[1:] for a in ASSOC], ids=[a[0] for a in ASSOC]
)
def test_assoc(original: Json, path: str, value: object, expected: Json) -> None:
    before = copy.deepcopy(original)
    assert assoc(original, P(path), value) == expected
    assert original == before


def test_assoc_shares_every_untouched_subtree() -> None:
    original: Json = {"metadata": {"name": "x"}, "spec": {"template": {"spec": {}}, "scheduling": {}}}
    out = assoc(original, P("spec.scheduling.schedulingPolicy"), {"basic": {}})
    assert out["metadata"] is original["metadata"]
    assert out["spec"]["template"] is original["spec"]["template"]
    assert out["spec"] is not original["spec"]


@pytest.mark.parametrize(
    ("original", "path"),
    [({"a": "text"}, "a.b"), ({"l": []}, "l[0].x"), ({"a": [1]}, "a.b")],
    ids=[
        "a scalar on the way is an error",
        "a missing list element is an error",
        "a list where a mapping is needed is an error",
    ],
)
def test_assoc_refuses_untraversable_paths(original: Json, path: str) -> None:
    with pytest.raises(ValueError):
        assoc(original, P(path), 1)


def test_encode_patch_is_base64_of_compact_json() -> None:
    ops = [{"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "g"}}]
    text = base64.b64decode(encode_patch(ops)).decode()
    assert text == '[{"op":"add","path":"/spec/schedulingGroup","value":{"podGroupName":"g"}}]'
    assert encode_patch([]) == base64.b64encode(b"[]").decode()


# ---------------------------------------------------------------- the golden examples

GOLDEN = discover_cases()
_EVERY_BLOCK = {
    "schedulingPolicy": {"gang": {}},
    "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
    "disruptionMode": {"all": {}},
}
_CLAIMS = [{"name": "shared", "resourceClaimTemplateName": "shared"}]


def _node_ids(node: Json) -> t.Iterator[tuple[str, bool]]:
    yield node.get("id", "root"), node["type"] == "composite"
    for child in node.get("children", []):
        yield from _node_ids(child)


def _defaulting_everything(source: Path, out: Path) -> Path:
    """``source`` with an unconditional rule per node filling every block (invalid results
    are skipped by the mutator, so the golden objects get the largest valid patch)."""
    doc = yaml.safe_load(source.read_text())
    doc["spec"]["defaults"] = [
        {
            "name": f"all-{node}",
            "node": node,
            "set": {**_EVERY_BLOCK, **({} if composite else {"resourceClaims": _CLAIMS})},
        }
        for node, composite in _node_ids(doc["spec"]["root"])
    ]
    target = out / f"{source.parent.name}-{source.name}"
    target.write_text(yaml.safe_dump(doc))
    return target


@pytest.fixture(scope="module")
def policy_sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PolicySet]:
    # Module-scoped: loading policies compiles CEL and checks schemas; every case shares them.
    out = tmp_path_factory.mktemp("golden-policies")
    sources = [*sorted(BUILTIN_POLICY_DIR.glob("*.yaml")), *EXAMPLE_POLICIES]
    return {
        "golden policies": golden_policies(),
        "with the implicit-gang Job default": PolicySet.load(
            [*EXAMPLE_POLICIES, REPO_ROOT / "examples" / "policies" / "batch-job-implicit-gang.yaml"]
        ),
        "with every block defaulted on every node": PolicySet.load(
            [_defaulting_everything(f, out) for f in sources], builtin=False
        ),
    }


@pytest.mark.parametrize(
    "policy_set",
    ["golden policies", "with the implicit-gang Job default", "with every block defaulted on every node"],
)
@pytest.mark.parametrize("case", GOLDEN, ids=[c.id for c in GOLDEN])
def test_a_patch_for_each_golden_example_applies_cleanly_and_yields_the_mutated_object(
    case: GoldenCase, policy_set: str, policy_sets: dict[str, PolicySet]
) -> None:
    policies = policy_sets[policy_set]
    operation = "CREATE" if case.old_obj is None else "UPDATE"
    result = mutate_object(case.obj, policies, operation=operation, old_obj=case.old_obj)
    check_patch(case.obj, result.object, result.patch)
    if operation == "UPDATE":
        assert result.patch == []
    elif case.valid:
        assert validate_object(result.object, policies=policies).errors == ()
