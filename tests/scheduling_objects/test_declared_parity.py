"""Parity: the declared rules (``declared.validate_struct``) against the frozen hand-coded
validators they replaced (``legacy_blocks.validate_struct``).

Each case runs the public validator of its kind (Workload, PodGroup, CompositePodGroup) twice,
with each engine validating the templates and specs, and compares the whole findings: the
``(type, path, origin, rendered error)`` list in order, and the warnings. The cases: every golden
case, every table row of tests/scheduling_objects, and a hypothesis generator of hostile
manifests (creates, updates with one point changed, updates blended at every depth), each under
ten gate sets.
"""

from __future__ import annotations

import copy
import typing as t

import legacy_blocks
import pytest
import test_scheduling_objects as tables
import test_short_circuit as short_circuit
from golden import discover_cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.scheduling_objects import VALIDATORS, declared, groups, workload
from webhook.scheduling_objects.markers import Ctx, Errors, Old
from webhook.vocab.field import FieldPath
from webhook.vocab.gates import DEFAULT_GATES, KNOWN_GATES, FeatureGates

Json = dict[str, t.Any]
GATE_SETS: t.Final = (
    DEFAULT_GATES,
    FeatureGates(frozenset(KNOWN_GATES)),
    FeatureGates(frozenset()),
    *(FeatureGates(frozenset(KNOWN_GATES) - {gate}) for gate in KNOWN_GATES),
)


def _keys(errors: Errors) -> list[tuple[str, str, str, str]]:
    return [(e.type.value, e.path, e.origin, e.error()) for e in errors]


Findings = tuple[list[tuple[str, str, str, str]], list[str]]
StructValidator = t.Callable[[str, t.Any, Old, FieldPath, Ctx], Errors]


def run(
    monkeypatch: pytest.MonkeyPatch, engine: StructValidator, obj: object, old: object, gates: FeatureGates
) -> tuple[Findings, list[str]]:
    """The findings of the validator of ``obj``'s kind with ``engine`` validating the structs,
    and the structs it was handed."""
    structs: list[str] = []

    def spy(struct: str, obj: t.Any, old: Old, path: FieldPath, ctx: Ctx) -> Errors:
        structs.append(struct)
        return engine(struct, obj, old, path, ctx)

    kind = obj.get("kind") if isinstance(obj, dict) else None
    validate = VALIDATORS.get(("scheduling.k8s.io", kind)) if isinstance(kind, str) else None
    if validate is None:
        return ([], []), structs
    with monkeypatch.context() as patch:
        patch.setattr(groups, "validate_struct", spy)
        patch.setattr(workload, "validate_struct", spy)
        findings = validate(obj, old, gates=gates)
    return (_keys(findings.errors), findings.warnings), structs


def assert_parity(
    monkeypatch: pytest.MonkeyPatch, obj: object, old: object, gates: FeatureGates
) -> list[str]:
    """Whole-object findings (errors and warnings) with the frozen hand-coded validators and
    with the declared rules are the same; returns the structs compared."""
    expected, structs = run(monkeypatch, legacy_blocks.validate_struct, obj, old, gates)
    actual, _ = run(monkeypatch, declared.validate_struct, obj, old, gates)
    assert actual == expected, (obj, old, sorted(gates.enabled))
    return structs


@pytest.mark.parametrize(
    ("struct", "shape"),
    [
        ("PodGroupTemplate", legacy_blocks.LEAF_TEMPLATE),
        ("CompositePodGroupTemplate", legacy_blocks.COMPOSITE_TEMPLATE),
        ("PodGroupSpec", legacy_blocks.POD_GROUP),
        ("CompositePodGroupSpec", legacy_blocks.COMPOSITE_OBJECT),
    ],
)
def test_the_gated_fields_dropped_are_the_old_ones(struct: str, shape: legacy_blocks.GroupShape) -> None:
    # gating drops by these tables before validation; the parity runs below share them.
    assert declared.gated_fields(struct) == shape.gated_pairs()


# --- the recorded cases -----------------------------------------------------------------------

GOLDEN = [(c.id, c.obj, c.old_obj) for c in discover_cases()]
TABLES = [(c.id, c.obj, c.old) for c in tables.ALL_CASES]
SHORT_CIRCUIT = [(p.id or str(i), p.values[1], p.values[2]) for i, p in enumerate(short_circuit.CASES)]
RECORDED = [
    *(pytest.param(obj, old, id=f"golden {i}") for i, obj, old in GOLDEN),
    *(pytest.param(obj, old, id=f"table {i}") for i, obj, old in TABLES),
    *(pytest.param(obj, old, id=f"short-circuit {i}") for i, obj, old in SHORT_CIRCUIT),
]


@pytest.mark.parametrize(("obj", "old"), RECORDED)
def test_recorded_cases(monkeypatch: pytest.MonkeyPatch, obj: object, old: object) -> None:
    for gates in GATE_SETS:
        assert_parity(monkeypatch, obj, old, gates)


def test_the_recorded_cases_reach_every_struct(monkeypatch: pytest.MonkeyPatch) -> None:
    # Control: the recorded cases reach structs of every kind, so parity is not vacuous.
    seen = {
        struct
        for param in RECORDED
        for gates in GATE_SETS
        for struct in run(monkeypatch, declared.validate_struct, param.values[0], param.values[1], gates)[1]
    }
    assert seen == set(declared.STRUCTS) - {"WorkloadReference"}


# --- generated manifests ----------------------------------------------------------------------

_INTS = st.sampled_from(
    [0, 1, -1, 2, 7, 2**31 - 1, 2**31, -(2**31) - 1, 10**9, 10**9 + 1, True, 1.0, "2", None]
)
_STRS = st.sampled_from(
    ["", "a", "b", "A", "a-b", "a_b", "-a", ".", "..", "a%b", "a/b", "x" * 64, "x" * 254, "Never", 5, None,
     "topology.kubernetes.io/rack", "example.com/", "/x", "a.b"]
)  # fmt: skip
_ANY = st.sampled_from([None, 3, "x", True, [], {}, [None], {"x": 1}])
_EMPTY = st.sampled_from([{}, None, 3, {"x": 1}])
_GANG = st.fixed_dictionaries({}, optional={"minCount": _INTS, "minGroupCount": _INTS}) | _ANY
_POLICY = st.fixed_dictionaries({}, optional={"basic": _EMPTY, "gang": _GANG}) | _ANY
_TOPOLOGY = st.lists(st.fixed_dictionaries({}, optional={"key": _STRS}) | _ANY, max_size=3) | _ANY
_CONSTRAINTS = st.fixed_dictionaries({}, optional={"topology": _TOPOLOGY}) | _ANY
_CLAIM = st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["a", "b", "", None, 3, "A"]), "resourceClaimName": _STRS,
                  "resourceClaimTemplateName": _STRS}
) | _ANY  # fmt: skip
_CLAIMS = st.lists(_CLAIM, max_size=6) | _ANY
_DISRUPTION = st.fixed_dictionaries({}, optional={"single": _EMPTY, "all": _EMPTY}) | _ANY
_REF = st.fixed_dictionaries({}, optional={"workloadName": _STRS, "templateName": _STRS}) | _ANY
_GROUP = {
    "schedulingPolicy": _POLICY,
    "schedulingConstraints": _CONSTRAINTS,
    "resourceClaims": _CLAIMS,
    "disruptionMode": _DISRUPTION,
    "priorityClassName": _STRS,
    "priority": _INTS,
    "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority", "", "never", 3, None]),
}
_SPEC = st.fixed_dictionaries(
    {}, optional={**_GROUP, "parentCompositePodGroupName": _STRS, "workloadRef": _REF}
)
_NAMES = st.sampled_from(["a", "b", "c", "", None, "A_", 3])
_LEAF = st.fixed_dictionaries({"name": _NAMES}, optional=_GROUP) | _ANY
_COMPOSITE = (
    st.fixed_dictionaries({"name": _NAMES, "podGroupTemplates": st.lists(_LEAF, max_size=2)}, optional=_GROUP)
    | _ANY
)
_WORKLOAD_SPEC = st.fixed_dictionaries(
    {}, optional={"podGroupTemplates": st.lists(_LEAF, max_size=3),
                  "compositePodGroupTemplates": st.lists(_COMPOSITE, max_size=2)}
)  # fmt: skip
_KINDS = {"Workload": _WORKLOAD_SPEC, "PodGroup": _SPEC, "CompositePodGroup": _SPEC}


def _blend(draw: st.DrawFn, new: object, other: object, depth: int = 0) -> object:
    """An old value for ``new``: per member (and per list item), kept, taken from ``other``,
    dropped, or blended one level down, so that ratcheting meets fields equal at any depth
    beside changed ones."""
    if depth > 4 or not (isinstance(new, dict) and isinstance(other, dict)):
        if isinstance(new, list) and isinstance(other, list) and draw(st.booleans()):
            return [_blend(draw, a, b, depth + 1) for a, b in zip(new, other, strict=False)] + new[
                len(other) :
            ]
        return draw(st.sampled_from([new, other]))
    out: dict[str, t.Any] = {}
    for key in sorted({*new, *other}):
        choice = draw(st.sampled_from(["keep", "keep", "other", "drop", "blend"]))
        if choice == "keep" and key in new:
            out[key] = new[key]
        elif choice == "other" and key in other:
            out[key] = other[key]
        elif choice == "blend" and key in new:
            out[key] = _blend(draw, new[key], other.get(key), depth + 1)
    return out


def _points(value: object, at: tuple[t.Any, ...] = ()) -> t.Iterator[tuple[t.Any, ...]]:
    """Every path inside ``value`` (dict keys, list indexes)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield (*at, key)
        yield from _points(child, (*at, key))


def _mutated(draw: st.DrawFn, value: t.Any) -> t.Any:
    """``value`` with one point changed (replaced or removed): all else equal, the case that
    tells per-field ratcheting apart from ratcheting a whole struct."""
    points = list(_points(value))
    if not points:
        return draw(_ANY)
    *parents, last = draw(st.sampled_from(points))
    out = copy.deepcopy(value)
    node = out
    for key in parents:
        node = node[key]
    if isinstance(node, dict) and draw(st.booleans()):
        del node[last]
    else:
        node[last] = draw(_ANY | _INTS | _STRS)
    return out


@st.composite
def manifests(draw: st.DrawFn) -> tuple[Json, Json | None, FeatureGates]:
    """(object, old object or None, gates): an update's old spec is the new one with one
    point changed, or blended with another draw at every depth."""
    kind = draw(st.sampled_from(sorted(_KINDS)))
    spec = draw(_KINDS[kind])
    obj = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    mode = draw(st.sampled_from(["create", "point", "blend"]))
    old = None
    if mode == "point":
        old = {**obj, "spec": _mutated(draw, spec)}
    elif mode == "blend":
        old = {**obj, "spec": _blend(draw, spec, draw(_KINDS[kind]))}
    return obj, old, draw(st.sampled_from(GATE_SETS))


@settings(
    max_examples=3000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=manifests())
def test_generated_manifests(
    monkeypatch: pytest.MonkeyPatch, case: tuple[Json, Json | None, FeatureGates]
) -> None:
    obj, old, gates = case
    assert_parity(monkeypatch, obj, old, gates)


@pytest.mark.parametrize(
    "decl",
    [
        pytest.param({"type": "number"}, id="a type the interpreter has no rule for"),
        pytest.param(
            {"type": "object", "properties": {"x": {"format": "int32"}}}, id="a member without a type"
        ),
        pytest.param({"type": "array", "items": {"type": "boolean"}}, id="list items of an unknown type"),
    ],
)
def test_a_declaration_the_interpreter_cannot_apply_is_refused(decl: dict[str, t.Any]) -> None:
    with pytest.raises(ValueError, match="no rule for type"):
        declared._check_types(decl, "Struct")
