"""The loader: PyYAML ``safe_load`` semantics exactly, positions, List expansion, field lines."""

from __future__ import annotations

import math
import typing as t

import pytest
import yaml
from conftest import dump, job

from webhook.manifests.constructor import DuplicateKeyError, YamlLoader
from webhook.manifests.loader import LoadError, locate, parse_text
from webhook.vocab.field import FieldPath, Key


def same(a: object, b: object) -> bool:
    """Equal with types kept apart (``True`` is not ``1``), and NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


SCALARS = [
    "yes", "no", "on", "off", "True", "FALSE", "0o17", "017", "0x1F", "1e3", "3e-4", "1.0e+3", "1.10",
    ".inf", "-.inf", ".nan", "~", "null", "''", '"123"', "'true'", "1:30", "1_000", "+12", "2026-01-01",
    "2026-01-01T10:20:30Z", '"2026-01-01"', "!!binary aGVsbG8=", "!!str 42", "!!int '7'", "=",
]  # fmt: skip
DOCUMENTS = [
    "a: &x {k: [1, 2]}\nb: *x\n",
    "base: &b {p: 1, q: 2}\nm:\n  <<: *b\n  q: 3\n",
    "m:\n  <<: [{a: 1}, {b: 2}]\n",
    "{1: a, yes: 1, ~: x, 1.5: f}\n",
    "lit: |\n  a\n   b\nfold: >-\n  x\n  y\nkeep: |+\n  z\n\n",
    "- !!set {a, b}\n- !!omap [a: 1, b: 2]\n- !!pairs [a: 1, a: 2]\n",
    "= : v\n",
    "plain: multi\n  line\n",
]


@pytest.mark.parametrize(
    "text",
    [f"v: {s}\n" for s in SCALARS] + DOCUMENTS,
    ids=[f"scalar {s}" for s in SCALARS] + [f"document {i}" for i in range(len(DOCUMENTS))],
)
def test_values_equal_pyyaml_safe_load(text: str) -> None:
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        with pytest.raises(LoadError):  # the same input fails here too
            list(parse_text("x", text))
        return
    [doc] = [d.obj for d in parse_text("x", text)]
    assert same(doc, expected)


CORPUS = "---\n".join(dump(job(f"j{i}", min_count=i % 5 + 1)) for i in range(50))


@pytest.mark.parametrize(
    "text",
    [f"v: {s}\n" for s in SCALARS] + DOCUMENTS + [CORPUS],
    ids=[f"scalar {s}" for s in SCALARS] + [f"document {i}" for i in range(len(DOCUMENTS))] + ["a corpus"],
)
def _nodes(text: str) -> list[t.Any]:
    loader = YamlLoader(text)
    try:
        nodes = []
        while loader.check_node():
            nodes.append(loader.get_node())
        return nodes
    finally:
        loader.dispose()


@pytest.mark.parametrize(
    "text",
    [f"v: {s}\n" for s in SCALARS] + DOCUMENTS + [CORPUS],
    ids=[f"scalar {s}" for s in SCALARS] + [f"document {i}" for i in range(len(DOCUMENTS))] + ["a corpus"],
)
def test_the_fast_constructor_equals_pyyamls_on_the_same_nodes(text: str) -> None:
    """The fast path is kept only because it builds what PyYAML's constructor builds.

    Each constructor gets its own composition of the text and a fresh loader: PyYAML's
    rewrites merge-key nodes in place and keeps state after an error.
    """
    for fast, reference in zip(_nodes(text), _nodes(text), strict=True):
        try:
            expected = YamlLoader("").construct_pyyaml(reference)
        except yaml.YAMLError as exc:
            with pytest.raises(type(exc)):
                YamlLoader("").construct(fast)
            continue
        assert same(YamlLoader("").construct(fast), expected)


DUPLICATES = [
    ("a repeated key in a nested mapping", "a: 1\nspec:\n  gang:\n    minCount: 9\n    minCount: 2\n", 5, 4),
    ("yes and true are the same boolean key", "m:\n  yes: 1\n  true: 2\n", 3, 2),
    (
        "a repeated key next to a merge key (PyYAML's path)",
        "b: &b {x: 1}\nm:\n  <<: *b\n  k: 1\n  k: 2\n",
        5,
        4,
    ),
    ("a repeated key in a flow mapping", "m: {a: 1,\n  a: 2}\n", 2, 1),
]


@pytest.mark.parametrize(
    ("text", "line", "first"), [d[1:] for d in DUPLICATES], ids=[d[0] for d in DUPLICATES]
)
def test_a_duplicate_key_is_a_problem_at_its_line(text: str, line: int, first: int) -> None:
    [doc] = list(parse_text("f.yaml", text))
    assert doc.problem is not None and doc.obj is None
    assert (doc.problem.line, f"first set at line {first}" in doc.problem.message) == (line, True)


def test_a_merge_key_may_override_merged_keys() -> None:
    [doc] = list(parse_text("f.yaml", "b: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n"))
    assert doc.problem is None and doc.obj == {"b": {"x": 1}, "m": {"x": 2}}


def test_documents_after_a_duplicate_are_still_read() -> None:
    docs = list(parse_text("f.yaml", "a: 1\na: 2\n---\nb: 1\n"))
    assert [(d.index, d.problem is not None, d.obj) for d in docs] == [(0, True, None), (1, False, {"b": 1})]


def test_duplicate_key_error_is_a_yaml_error() -> None:
    assert issubclass(DuplicateKeyError, yaml.YAMLError)


JSON_LINES = [
    ("a nested field", FieldPath.of("spec", "scheduling", "gang", "minCount"), 5),
    ("a list element", FieldPath.of("spec", "roles", 1), 8),
    ("a missing field maps to its parent", FieldPath.of("spec", "scheduling", "missing"), 3),
]
JSON_TEXT = '{\n  "kind": "Job",\n  "spec": {"scheduling": {\n    "gang": {\n      "minCount": 9}},\n    "roles": [\n      1,\n      2]}}\n'


@pytest.mark.parametrize(("path", "line"), [c[1:] for c in JSON_LINES], ids=[c[0] for c in JSON_LINES])
def test_json_fields_have_lines(path: FieldPath, line: int) -> None:
    [doc] = list(parse_text("x.json", JSON_TEXT, json_format=True))
    assert locate(doc.node, path) == line


def test_a_json_duplicate_key_is_a_problem_at_its_line() -> None:
    [doc] = list(parse_text("x.json", '{"a": 1,\n "b": {"c": 1,\n  "c": 2}}', json_format=True))
    assert doc.problem is not None and (doc.problem.line, doc.obj) == (3, None)


def test_a_tab_indentation_error_says_tab() -> None:
    with pytest.raises(LoadError) as info:
        list(parse_text("f.yaml", "a:\n\t- 1\n"))
    assert "tab" in info.value.message and info.value.line == 2


def test_aliases_keep_identity_and_recursion_works() -> None:
    [doc] = [d.obj for d in parse_text("x", "a: &x [1]\nb: *x\n")]
    assert isinstance(doc, dict) and doc["a"] is doc["b"]
    [rec] = [d.obj for d in parse_text("x", "&r [*r]\n")]
    assert isinstance(rec, list) and rec[0] is rec


def test_a_corpus_equals_load_all() -> None:
    text = "---\n".join(dump(job(f"j{i}", min_count=i % 5 + 1)) for i in range(200))
    assert same([d.obj for d in parse_text("x", text)], list(yaml.load_all(text, Loader=yaml.CSafeLoader)))


ERRORS = [
    ("an unclosed flow sequence", "a: [1, 2\nb: 3\n", 2),
    ("a: b: c", "a: b: c\n", 1),
    ("a tab as indentation", "a:\n\t- 1\n", 2),
    ("bad indentation", "- a\n  b: 1\n", 2),
    ("an unhashable key", "{[1]: 2}\n", 1),
    ("an unknown tag", "!foo x\n", 1),
]


@pytest.mark.parametrize(("text", "line"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_parse_errors_carry_file_line_and_document(text: str, line: int) -> None:
    with pytest.raises(LoadError) as info:
        list(parse_text("f.yaml", "ok: 1\n---\n" + text))
    assert (info.value.source, info.value.line, info.value.document) == ("f.yaml", line + 2, 1)
    assert str(info.value).startswith(f"f.yaml:{line + 2}:")


def test_documents_know_index_and_line_and_skip_empty_ones() -> None:
    docs = list(parse_text("x", "# c\na: 1\n---\n---\n# only a comment\n---\nb: 2\n"))
    assert [(d.index, d.line, d.obj) for d in docs] == [(0, 2, {"a": 1}), (3, 7, {"b": 2})]


def test_lists_are_expanded_with_item_lines() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: A\n- kind: B\n"
    docs = list(parse_text("x", text))
    assert [(d.item, d.line, t.cast(dict[str, str], d.obj)["kind"]) for d in docs] == [
        (0, 4, "A"),
        (1, 5, "B"),
    ]


def test_a_list_kind_without_items_is_an_object() -> None:
    [doc] = list(parse_text("x", "apiVersion: v1\nkind: List\n"))
    assert doc.item is None


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (FieldPath.of("spec", "scheduling", "schedulingPolicy", "gang", "minCount"), 6),
        (FieldPath.of("spec", "roles", 1, "name"), 9),
        (FieldPath.of("spec", "scheduling", "missing"), 5),
        (FieldPath.of("metadata", "labels", Key("a/b")), 3),
    ],
    ids=["a present field", "a list element", "a missing field maps to its parent", "a map key"],
)
def test_locate_maps_paths_to_lines(path: FieldPath, line: int) -> None:
    text = "metadata:\n  labels:\n    a/b: x\nspec:\n  scheduling:\n    schedulingPolicy: {gang: {minCount: 3}}\n  roles:\n  - name: a\n  - name: b\n"
    [doc] = list(parse_text("x", text))
    assert locate(doc.node, path) == line
