"""The subtree differ (``webhook.governed.patch``), with ``jsonpatch`` as the oracle for every patch."""

from __future__ import annotations

import base64
import copy
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from golden import EXAMPLE_POLICIES, REPO_ROOT, GoldenCase, discover_cases, golden_policies
from hypothesis import given, settings
from hypothesis import strategies as st
from patch_oracle import check_patch

from webhook.governed.mutation import mutate_object
from webhook.governed.patch import assoc, encode_patch, make_patch
from webhook.governed.validation import validate_object
from webhook.policy import BUILTIN_POLICY_DIR, PolicySet
from webhook.vocab.field import FieldPath, Key

Json = dict[str, t.Any]
P = FieldPath.parse


@dataclass(frozen=True)
class Case:
    id: str
    original: object
    mutated: object
    roots: tuple[str, ...]
    ops: list[Json]


JOB: Json = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 2, "template": {"spec": {}}}}

CASES = [
    Case(
        "a missing block is added whole at its path",
        JOB,
        {**JOB, "spec": {**JOB["spec"], "scheduling": {"schedulingPolicy": {"gang": {}}}}},
        ("spec.scheduling",),
        [{"op": "add", "path": "/spec/scheduling", "value": {"schedulingPolicy": {"gang": {}}}}],
    ),
    Case(
        "a missing parent is added whole, so the add has a parent to land in",
        {"spec": {}},
        {"spec": {"template": {"spec": {"schedulingGroup": {"podGroupName": "g"}}}}},
        ("spec.template.spec.schedulingGroup",),
        [
            {
                "op": "add",
                "path": "/spec/template",
                "value": {"spec": {"schedulingGroup": {"podGroupName": "g"}}},
            }
        ],
    ),
    Case(
        "a member added to an existing block is added alone",
        {"spec": {"scheduling": {"schedulingPolicy": {"basic": {}}}}},
        {"spec": {"scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}}}},
        ("spec.scheduling",),
        [{"op": "add", "path": "/spec/scheduling/disruptionMode", "value": {"single": {}}}],
    ),
    Case(
        "an existing empty schedulingGroup gets only the leaf",
        {"spec": {"schedulingGroup": {}}},
        {"spec": {"schedulingGroup": {"podGroupName": "g"}}},
        ("spec.schedulingGroup",),
        [{"op": "add", "path": "/spec/schedulingGroup/podGroupName", "value": "g"}],
    ),
    Case(
        "a changed scalar is replaced",
        {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}},
        {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}}}},
        ("spec.scheduling",),
        [{"op": "replace", "path": "/spec/scheduling/schedulingPolicy/gang/minCount", "value": 3}],
    ),
    Case(
        "a removed member is removed",
        {"spec": {"scheduling": {"disruptionMode": {"all": {}}, "x": 1}}},
        {"spec": {"scheduling": {"x": 1}}},
        ("spec.scheduling",),
        [{"op": "remove", "path": "/spec/scheduling/disruptionMode"}],
    ),
    Case(
        "a removed root is removed",
        {"spec": {"scheduling": {"x": 1}}},
        {"spec": {}},
        ("spec.scheduling",),
        [{"op": "remove", "path": "/spec/scheduling"}],
    ),
    Case(
        "a changed list is replaced whole",
        {"spec": {"scheduling": {"resourceClaims": [{"name": "a"}, {"name": "b"}]}}},
        {"spec": {"scheduling": {"resourceClaims": [{"name": "a"}, {"name": "c"}]}}},
        ("spec.scheduling",),
        [
            {
                "op": "replace",
                "path": "/spec/scheduling/resourceClaims",
                "value": [{"name": "a"}, {"name": "c"}],
            }
        ],
    ),
    Case(
        "true and 1 are different JSON values",
        {"spec": {"x": 1, "l": [1]}},
        {"spec": {"x": True, "l": [True]}},
        ("spec",),
        [
            {"op": "replace", "path": "/spec/x", "value": True},
            {"op": "replace", "path": "/spec/l", "value": [True]},
        ],
    ),
    Case(
        "map keys are escaped per RFC 6901",
        {"metadata": {"labels": {}}},
        {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q", "a~b": "c"}}},
        ("metadata.labels",),
        [
            {"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "q"},
            {"op": "add", "path": "/metadata/labels/a~0b", "value": "c"},
        ],
    ),
    Case(
        "a root with a map key segment is escaped like FieldPath.json_pointer",
        {"metadata": {"annotations": {}}},
        {"metadata": {"annotations": {"example.com/x": "v"}}},
        ("metadata.annotations[example.com/x]",),
        [{"op": "add", "path": "/metadata/annotations/example.com~1x", "value": "v"}],
    ),
    Case(
        "a root through a list element is diffed inside the element",
        {"spec": {"roles": [{"name": "a"}, {"name": "b"}]}},
        {
            "spec": {
                "roles": [{"name": "a"}, {"name": "b", "scheduling": {"schedulingPolicy": {"basic": {}}}}]
            }
        },
        ("spec.roles[1].scheduling",),
        [{"op": "add", "path": "/spec/roles/1/scheduling", "value": {"schedulingPolicy": {"basic": {}}}}],
    ),
    Case(
        "a null parent is replaced by the new value",
        {"spec": {"scheduling": None}},
        {"spec": {"scheduling": {"schedulingPolicy": {"basic": {}}}}},
        ("spec.scheduling.schedulingPolicy",),
        [{"op": "replace", "path": "/spec/scheduling", "value": {"schedulingPolicy": {"basic": {}}}}],
    ),
    Case(
        "roots inside another root and duplicate roots are diffed once",
        {"spec": {}},
        {"spec": {"scheduling": {"a": 1, "b": 2}}},
        ("spec.scheduling.a", "spec.scheduling", "spec.scheduling.b", "spec.scheduling"),
        [{"op": "add", "path": "/spec/scheduling", "value": {"a": 1, "b": 2}}],
    ),
    Case(
        "two roots under one missing parent share its one add (a delegated Job without annotations)",
        {"metadata": {"name": "j"}},
        {"metadata": {"name": "j", "annotations": {"a/x": "1", "a/y": "2"}}},
        ("metadata.annotations[a/x]", "metadata.annotations[a/y]"),
        [{"op": "add", "path": "/metadata/annotations", "value": {"a/x": "1", "a/y": "2"}}],
    ),
    Case(
        "two roots under one parent that is not a container share its one replace",
        {"metadata": {"name": "j", "annotations": "oops"}},
        {"metadata": {"name": "j", "annotations": {"a/x": "1", "a/y": "2"}}},
        ("metadata.annotations[a/x]", "metadata.annotations[a/y]"),
        [{"op": "replace", "path": "/metadata/annotations", "value": {"a/x": "1", "a/y": "2"}}],
    ),
    Case(
        "a root absent on both sides gives no operation",
        {"spec": {}},
        {"spec": {}},
        ("spec.scheduling.schedulingPolicy",),
        [],
    ),
    Case(
        "no roots give no operation even when the objects differ",
        {"spec": {"a": 1}},
        {"spec": {"a": 2}},
        (),
        [],
    ),
    Case(
        "equal subtrees give no operation",
        {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}},
        {"spec": {"scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}},
        ("spec.scheduling",),
        [],
    ),
    Case(
        "the empty path diffs the whole object",
        {"a": 1, "b": {"c": 2}},
        {"a": 1, "b": {"c": 3}, "d": 4},
        ("",),
        [{"op": "replace", "path": "/b/c", "value": 3}, {"op": "add", "path": "/d", "value": 4}],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_make_patch(case: Case) -> None:
    ops = make_patch(case.original, case.mutated, roots=[P(r) for r in case.roots])
    assert ops == case.ops
    if case.roots:
        check_patch(case.original, case.mutated, ops)


def test_the_differ_escapes_exactly_like_field_path_json_pointer() -> None:
    keys = ["a/b", "a~b", "~1", "/~", "plain", ""]
    for key in keys:
        ops = make_patch({"m": {}}, {"m": {key: 1}}, roots=[P("m")])
        assert ops[0]["path"] == FieldPath.of("m", Key(key)).json_pointer()


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


# ---------------------------------------------------------------- property: any change inside the roots

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, 1.0]), st.sampled_from(["", "a", "b"])
)
_KEYS = st.sampled_from(["a", "b", "c/d", "e~f", "g"])
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    original=st.dictionaries(_KEYS, _JSON, max_size=4),
    root_key=_KEYS,
    sub_key=_KEYS,
    new_value=_JSON,
    deeper=st.booleans(),
)
def test_any_change_under_the_roots_round_trips_through_jsonpatch(
    original: Json, root_key: str, sub_key: str, new_value: object, deeper: bool
) -> None:
    path = FieldPath.of(root_key, sub_key) if deeper else FieldPath.of(root_key)
    try:
        mutated = assoc(original, path, new_value)
    except ValueError:
        return  # the path crosses a scalar: no mutator writes there
    ops = make_patch(original, mutated, roots=[path])
    check_patch(original, mutated, ops)
    assert make_patch(mutated, mutated, roots=[path]) == []


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
