"""``webhook.vocab.equality``: the project's one JSON equality, as tables.

* ``json_equal``: the same JSON value; JSON types are kept apart even where Python's ``==``
  joins them (``true`` is not ``1``, ``1`` is not ``1.0``).
* ``semantic_equal``: apimachinery's semantic equality on decoded JSON: a ``null`` member
  equals an absent one, an empty list equals an absent (``null``) one, an empty object is a
  value; otherwise ``json_equal``.
* ``json_key``: hashable, equal exactly when ``json_equal``.
* ``is_absent``: ``null`` or ``[]``.

Comparisons are made against deep copies, so no row passes because both sides are one object.
"""

from __future__ import annotations

import copy
import json
import typing as t
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import scheduling

from webhook.vocab.equality import is_absent, json_equal, json_key, semantic_equal


def show(value: object) -> str:
    """A value as compact JSON text, for ids (``1.0`` stays ``1.0``, ``True`` is ``true``)."""
    return json.dumps(value, separators=(",", ":"))


# --------------------------------------------------------------------------- every pair of values

# One or more values of every JSON type, chosen so that Python's ``==`` joins several of them
# (True == 1 == 1.0, False == 0 == 0.0, {"a": 1} == {"a": True}) while JSON does not.
CATALOGUE: list[object] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    0.0,
    1.0,
    "",
    "1",
    "true",
    [],
    [1],
    [True],
    [1.0],
    [None],
    {},
    {"a": 1},
    {"a": True},
    {"a": None},
    {"a": []},
    {"a": [1, {"b": None}]},
]

# Semantic equality joins exactly these catalogue values (by their JSON text); every other
# value is semantically equal only to itself.
SEMANTIC_CLASSES: list[set[str]] = [
    {"null", "[]"},  # an empty list is an absent list
    {"{}", '{"a":null}', '{"a":[]}'},  # a null or empty-list member is an absent member
]


def _semantic_class(value: object) -> str:
    text = show(value)
    return next((min(c) for c in SEMANTIC_CLASSES if text in c), text)


@dataclass(frozen=True)
class Pair:
    id: str
    a: object
    b: object
    same: bool  # json_equal
    semantic: bool  # semantic_equal


def _pair(a: object, b: object) -> Pair:
    same = show(a) == show(b)
    semantic = _semantic_class(a) == _semantic_class(b)
    if same:
        verdict = "is the same JSON value"
    elif semantic:
        verdict = "is a different JSON value but semantically equal"
    else:
        verdict = "is a different value, semantically too"
    return Pair(f"{show(a)} against {show(b)} {verdict}", a, b, same, semantic)


PAIRS = [_pair(a, b) for i, a in enumerate(CATALOGUE) for b in CATALOGUE[i:]]


@pytest.mark.parametrize("p", PAIRS, ids=[p.id for p in PAIRS])
def test_every_pair_of_json_values(p: Pair) -> None:
    a, b = p.a, copy.deepcopy(p.b)
    assert json_equal(a, b) is p.same
    assert json_equal(b, a) is p.same
    assert semantic_equal(a, b) is p.semantic
    assert semantic_equal(b, a) is p.semantic
    assert (json_key(a) == json_key(b)) is p.same
    if p.same:
        assert hash(json_key(a)) == hash(json_key(b))


def test_the_pair_table_crosses_every_catalogue_value_with_every_other() -> None:
    n = len(CATALOGUE)
    assert len(PAIRS) == n * (n + 1) // 2
    assert len({p.id for p in PAIRS}) == len(PAIRS)
    # Python's == joins values the table keeps apart: the table would catch a == shortcut.
    assert sum(1 for p in PAIRS if p.a == p.b and not p.same) >= 8


def test_json_keys_of_the_catalogue_are_all_distinct() -> None:
    # As set members (the list-map key use): one key per distinct JSON value.
    keys = {json_key(copy.deepcopy(v)) for v in CATALOGUE}
    assert len(keys) == len(CATALOGUE)
    assert json_key(True) not in {json_key(1), json_key(1.0)}


# --------------------------------------------------------------------------- the rules, one row each


@dataclass(frozen=True)
class Rule:
    id: str
    a: object
    b: object
    same: bool
    semantic: bool


RULES = [
    # absent, null and empty
    Rule("a null member equals an absent member semantically", {"a": None}, {}, False, True),
    Rule("an empty-list member equals an absent member semantically", {"a": []}, {}, False, True),
    Rule("an empty-list member equals a null member semantically", {"a": []}, {"a": None}, False, True),
    Rule("an empty list equals null semantically", [], None, False, True),
    Rule("an empty object is a value, not an absent member", {"a": {}}, {}, False, False),
    Rule("an empty object is a value, not null", {}, None, False, False),
    Rule("an empty object is not an empty list", {}, [], False, False),
    Rule("basic: {} is set, unlike no basic", {"basic": {}}, {}, False, False),
    Rule("basic: {} is set, unlike basic: null", {"basic": {}}, {"basic": None}, False, False),
    Rule("an empty string member is a value, not absent", {"a": ""}, {}, False, False),
    Rule("a zero member is a value, not absent", {"a": 0}, {}, False, False),
    Rule("a false member is a value, not absent", {"a": False}, {}, False, False),
    Rule("a list holding one null is not an empty list", [None], [], False, False),
    Rule("a list holding one null is not null", [None], None, False, False),
    Rule(
        "a null member deep inside equals an absent one",
        {"x": {"y": {"a": None, "b": 1}}},
        {"x": {"y": {"b": 1}}},
        False,
        True,
    ),
    Rule("a null member inside a list item equals an absent one", [{"a": None}], [{}], False, True),
    Rule("null members on both sides, under different names", {"a": None}, {"b": None}, False, True),
    Rule("a null member does not hide a changed sibling", {"a": None, "b": 1}, {"b": 2}, False, False),
    # JSON types kept apart where Python's == joins them
    Rule("true is not 1 although True == 1 in Python", True, 1, False, False),
    Rule("false is not 0 although False == 0 in Python", False, 0, False, False),
    Rule("1 is not 1.0 although 1 == 1.0 in Python", 1, 1.0, False, False),
    Rule("0 is not 0.0 although 0 == 0.0 in Python", 0, 0.0, False, False),
    Rule("true is not 1.0 although True == 1.0 in Python", True, 1.0, False, False),
    Rule("a member true is not a member 1", {"minCount": True}, {"minCount": 1}, False, False),
    Rule("a member 1.0 is not a member 1", {"minCount": 1.0}, {"minCount": 1}, False, False),
    Rule("an item true is not an item 1", [True], [1], False, False),
    Rule(
        "a type change deep inside is a change",
        {"a": [1, {"b": True}]},
        {"a": [1, {"b": 1}]},
        False,
        False,
    ),
    Rule("the string 1 is not the number 1", "1", 1, False, False),
    Rule("the string true is not true", "true", True, False, False),
    Rule("integers beyond 2**53 stay exact", 2**53 + 1, 2**53, False, False),
    Rule("an integer beyond 2**53 is not its float", 2**53 + 1, float(2**53 + 1), False, False),
    Rule("huge integers compare by value", 2**64, 2**64, True, True),
    Rule("0.0 and -0.0 are one number (as Go's == says)", 0.0, -0.0, True, True),
    # order
    Rule("object key order is irrelevant", {"a": 1, "b": [2, 3]}, {"b": [2, 3], "a": 1}, True, True),
    Rule(
        "key order is irrelevant deep inside",
        [{"x": {"a": 1, "b": 2}}],
        [{"x": {"b": 2, "a": 1}}],
        True,
        True,
    ),
    Rule("list order is relevant", [1, 2], [2, 1], False, False),
    Rule("list order is relevant for objects", [{"a": 1}, {"b": 1}], [{"b": 1}, {"a": 1}], False, False),
    Rule("a longer list is a different list", [1], [1, 1], False, False),
    Rule("a trailing null item is an item", [1], [1, None], False, False),
    Rule("strings compare exactly", "gpus", "Gpus", False, False),
    Rule("an extra member is a change", {"a": 1}, {"a": 1, "b": 1}, False, False),
    Rule("a renamed member is a change", {"a": 1}, {"b": 1}, False, False),
]


@pytest.mark.parametrize("r", RULES, ids=[r.id for r in RULES])
def test_equality_rules(r: Rule) -> None:
    a, b = r.a, copy.deepcopy(r.b)
    assert json_equal(a, b) is r.same
    assert json_equal(b, a) is r.same
    assert semantic_equal(a, b) is r.semantic
    assert semantic_equal(b, a) is r.semantic
    assert (json_key(a) == json_key(b)) is r.same


def test_rule_ids_are_unique() -> None:
    assert len({r.id for r in RULES}) == len(RULES)


ABSENT: list[tuple[str, object, bool]] = [
    ("null is absent", None, True),
    ("an empty list is absent", [], True),
    ("an empty object is present", {}, False),
    ("an empty string is present", "", False),
    ("zero is present", 0, False),
    ("0.0 is present", 0.0, False),
    ("false is present", False, False),
    ("a list holding null is present", [None], False),
    ("a list holding an empty list is present", [[]], False),
    ("an object with a null member is present", {"a": None}, False),
    ("an empty tuple is not a JSON list, so present", (), False),
]


@pytest.mark.parametrize(("value", "absent"), [(v, a) for _, v, a in ABSENT], ids=[i for i, _, _ in ABSENT])
def test_is_absent(value: object, absent: bool) -> None:
    assert is_absent(value) is absent


# --------------------------------------------------------------------------- depth


def _nest(levels: int, wrap: t.Callable[[object], object]) -> object:
    value: object = 1
    for _ in range(levels):
        value = wrap(value)
    return value


SHAPES: list[tuple[str, t.Callable[[object], object]]] = [
    ("objects", lambda v: {"gang": v}),
    ("lists", lambda v: [v]),
    ("objects in lists", lambda v: [{"a": v, "b": None}]),
]


@pytest.mark.parametrize(
    "wrap", [w for _, w in SHAPES], ids=[f"two copies of 5000 nested {n} compare unequal" for n, _ in SHAPES]
)
def test_a_value_too_deep_to_walk_compares_unequal_and_never_raises(
    wrap: t.Callable[[object], object],
) -> None:
    a, b = _nest(5_000, wrap), _nest(5_000, wrap)  # built twice: no shared objects
    assert json_equal(a, b) is False
    assert semantic_equal(a, b) is False
    # Against a shallow different value the walk stops at once: still a plain False.
    assert json_equal(a, {"other": 1}) is False
    assert semantic_equal(a, None) is False


@pytest.mark.parametrize(
    "wrap", [w for _, w in SHAPES], ids=[f"two copies of 100 nested {n} compare equal" for n, _ in SHAPES]
)
def test_a_value_of_ordinary_depth_compares_equal(wrap: t.Callable[[object], object]) -> None:
    a, b = _nest(100, wrap), _nest(100, wrap)
    assert json_equal(a, b) is True
    assert semantic_equal(a, b) is True
    assert json_key(a) == json_key(b)


def test_json_key_of_a_value_too_deep_to_walk_raises_recursion_error_as_documented() -> None:
    with pytest.raises(RecursionError):
        json_key(_nest(5_000, lambda v: [v]))


# --------------------------------------------------------------------------- properties

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, 2.5]),
    st.sampled_from(["", "a", "1"]),
)
JSON = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3)
    ),
    max_leaves=12,
)


def _confusions(value: object) -> list[object]:
    """Values Python's ``==`` (or semantic equality) joins with ``value``, the value first."""
    if value is None:
        return [None, [], {}]
    if type(value) is bool:
        return [value, int(value), float(value)]
    if type(value) is int:
        return [value, float(value), *([bool(value)] if value in (0, 1) else [])]
    if type(value) is float:
        return [value, -value, *([int(value)] if value.is_integer() else [])]
    return [value, f"{value}x"]


def _draw_twin(data: st.DataObject, value: object) -> object:
    """A fresh value close to ``value``: a copy, or one with a confusable change somewhere."""
    if type(value) is list:
        items = [_draw_twin(data, v) for v in value]
        shape = data.draw(st.sampled_from(["same", "empty", "null", "extra null item"]))
        return {"same": items, "empty": [], "null": None, "extra null item": [*items, None]}[shape]
    if type(value) is dict:
        members = [(k, _draw_twin(data, v)) for k, v in value.items()]
        if data.draw(st.booleans()):
            members.reverse()  # key order must not matter
        extra: dict[str, object] = data.draw(st.sampled_from([{}, {"z": None}, {"z": []}, {"z": {}}]))
        return dict([*members, *extra.items()])
    return data.draw(st.sampled_from(_confusions(value)))


def _tagged(value: object) -> object:
    """An independent model of "the same JSON value": every value tagged with its JSON type."""
    if type(value) is dict:
        return ("object", sorted((k, _tagged(v)) for k, v in t.cast(dict[str, object], value).items()))
    if type(value) is list:
        return ("array", [_tagged(v) for v in t.cast(list[object], value)])
    return (type(value).__name__, value)


def _dropped(value: object) -> object:
    """An independent model of semantic equality: absent (null, []) members dropped, absent as null."""
    if value is None or (type(value) is list and not value):
        return None
    if type(value) is dict:
        return {
            k: _dropped(v)
            for k, v in t.cast(dict[str, object], value).items()
            if not (v is None or (type(v) is list and not v))
        }
    if type(value) is list:
        return [_dropped(v) for v in t.cast(list[object], value)]
    return value


HYPOTHESIS = settings(max_examples=300, deadline=None)


@HYPOTHESIS
@given(JSON, st.data())
def test_json_key_is_equal_exactly_when_json_equal(a: object, data: st.DataObject) -> None:
    b = data.draw(st.one_of(st.just(None), JSON)) if data.draw(st.booleans()) else _draw_twin(data, a)
    same = _tagged(a) == _tagged(b)
    assert json_equal(a, b) is same
    assert json_equal(b, a) is same
    assert (json_key(a) == json_key(b)) is same
    if same:
        assert hash(json_key(a)) == hash(json_key(b))


@HYPOTHESIS
@given(JSON, st.data())
def test_semantic_equal_is_json_equal_once_absent_members_are_dropped(a: object, data: st.DataObject) -> None:
    b = _draw_twin(data, a)
    expected = _tagged(_dropped(a)) == _tagged(_dropped(b))
    assert semantic_equal(a, b) is expected
    assert semantic_equal(b, a) is expected
    # The same JSON value is always semantically the same.
    if json_equal(a, b):
        assert expected


@HYPOTHESIS
@given(scheduling, st.data())
def test_equalities_agree_on_generated_scheduling_blocks(block: object, data: st.DataObject) -> None:
    other = _draw_twin(data, block)
    assert json_equal(block, copy.deepcopy(block)) is True
    assert semantic_equal(block, copy.deepcopy(block)) is True
    assert json_equal(block, other) is (_tagged(block) == _tagged(other))
    assert semantic_equal(block, other) is (_tagged(_dropped(block)) == _tagged(_dropped(other)))
    assert (json_key(block) == json_key(other)) is json_equal(block, other)
