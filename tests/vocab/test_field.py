"""FieldPath and FieldError render exactly like apimachinery's field package.

The expected strings follow ``field.Error.Error()`` / ``ErrorBody()`` and
``utilerrors.NewAggregate(...).Error()``: this text is what kubectl users read.
"""

from __future__ import annotations

import pytest

from webhook.vocab.field import (
    OMIT,
    ErrorType,
    FieldError,
    FieldPath,
    Key,
    aggregate,
    duplicate,
    forbidden,
    internal_error,
    invalid,
    not_supported,
    required,
    too_many,
    type_invalid,
)

S = FieldPath.of("spec", "scheduling")

RENDERED = [
    (
        "the basic+all contract message",
        invalid(
            S.child("disruptionMode"),
            "",
            "the disruptionMode `all` is not supported with the Basic scheduling policy",
        ),
        'spec.scheduling.disruptionMode: Invalid value: "": the disruptionMode `all` is not supported with the Basic scheduling policy',
    ),
    (
        "an int bad value prints bare",
        invalid(S.child("x"), 10, "too big"),
        "spec.scheduling.x: Invalid value: 10: too big",
    ),
    (
        "a bool bad value prints true",
        invalid(S.child("x"), True, "no"),
        "spec.scheduling.x: Invalid value: true: no",
    ),
    (
        "a float prints like Go %v",
        invalid(S.child("x"), 1.5, "no"),
        "spec.scheduling.x: Invalid value: 1.5: no",
    ),
    ("a nil bad value prints null", invalid(S, None, "gone"), "spec.scheduling: Invalid value: null: gone"),
    (
        "an object prints as Go json.Marshal (sorted keys, compact)",
        invalid(S, {"b": 1, "a": [1, "x"]}, "d"),
        'spec.scheduling: Invalid value: {"a":[1,"x"],"b":1}: d',
    ),
    (
        "json escapes < > & like Go",
        invalid(S, {"k": "<&>"}, "d"),
        'spec.scheduling: Invalid value: {"k":"\\u003c\\u0026\\u003e"}: d',
    ),
    ("strings are Go-quoted", invalid(S, 'a"b\n', "d"), 'spec.scheduling: Invalid value: "a\\"b\\n": d'),
    ("required prints no value", required(S.child("name")), "spec.scheduling.name: Required value"),
    (
        "required with detail",
        required(S.child("name"), "must be set"),
        "spec.scheduling.name: Required value: must be set",
    ),
    ("forbidden prints no value", forbidden(S, "nope"), "spec.scheduling: Forbidden: nope"),
    (
        "too many, plural",
        too_many(S.child("resourceClaims"), 5, 4),
        "spec.scheduling.resourceClaims: Too many: 5: must have at most 4 items",
    ),
    (
        "too many, singular",
        too_many(S.child("topology"), 2, 1),
        "spec.scheduling.topology: Too many: 2: must have at most 1 item",
    ),
    ("too many without a count", too_many(S, -1, 4), "spec.scheduling: Too many: must have at most 4 items"),
    (
        "duplicate",
        duplicate(S.child("resourceClaims").index(1), {"name": "a"}),
        'spec.scheduling.resourceClaims[1]: Duplicate value: {"name":"a"}',
    ),
    (
        "not supported lists quoted values",
        not_supported(S.child("p"), "Bogus", ["Never", "PreemptLowerPriority"]),
        'spec.scheduling.p: Unsupported value: "Bogus": supported values: "Never", "PreemptLowerPriority"',
    ),
    (
        "type invalid renders as Invalid value",
        type_invalid(S, "x", "must be of type integer"),
        'spec.scheduling: Invalid value: "x": must be of type integer',
    ),
    ("internal error prints no value", internal_error(S, "boom"), "spec.scheduling: Internal error: boom"),
    (
        "an empty path renders empty",
        invalid(FieldPath(), None, "nil root"),
        ": Invalid value: null: nil root",
    ),
    (
        "an omitted value prints the type only",
        FieldError(ErrorType.INVALID, S, OMIT, "d"),
        "spec.scheduling: Invalid value: d",
    ),
]


@pytest.mark.parametrize(("error", "text"), [r[1:] for r in RENDERED], ids=[r[0] for r in RENDERED])
def test_error_renders_like_apimachinery(error: FieldError, text: str) -> None:
    assert error.error() == text


def test_cause_types_are_the_apimachinery_strings() -> None:
    assert {t.value for t in ErrorType} >= {
        "FieldValueRequired",
        "FieldValueInvalid",
        "FieldValueDuplicate",
        "FieldValueNotSupported",
        "FieldValueForbidden",
        "FieldValueTooMany",
        "FieldValueTooLong",
        "FieldValueTooFew",
        "InternalError",
    }


def test_aggregate_of_one_is_the_error_itself() -> None:
    err = required(S)
    assert aggregate([err]) == err.error()


def test_aggregate_brackets_several_and_drops_repeated_messages() -> None:
    a, b = required(S.child("a")), forbidden(S.child("b"), "x")
    assert aggregate([a, b, a]) == f"[{a.error()}, {b.error()}]"
    assert aggregate([a, a]) == a.error()
    assert aggregate([]) == ""


PATHS = [
    ("dotted names", FieldPath.of("spec", "x"), "spec.x", "/spec/x"),
    (
        "an index",
        FieldPath.of("spec", "roles", 0, "scheduling"),
        "spec.roles[0].scheduling",
        "/spec/roles/0/scheduling",
    ),
    (
        "a map key",
        FieldPath.of("metadata", "labels").key("a/b~c"),
        "metadata.labels[a/b~c]",
        "/metadata/labels/a~1b~0c",
    ),
    ("the empty path", FieldPath(), "", ""),
]


@pytest.mark.parametrize(("path", "text", "pointer"), [p[1:] for p in PATHS], ids=[p[0] for p in PATHS])
def test_paths_render_and_parse_back(path: FieldPath, text: str, pointer: str) -> None:
    assert str(path) == text
    assert path.json_pointer() == pointer
    assert FieldPath.parse(text) == path


@pytest.mark.parametrize("bad", ["spec..x", ".spec", "spec.", "spec[0", "spec]x", "spec[]", "a[0]b"])
def test_malformed_paths_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        FieldPath.parse(bad)


def test_keys_compare_by_name_and_paths_join() -> None:
    assert Key("a") == Key("a")
    assert S / FieldPath.of("x") == S.child("x")
    assert FieldPath() / S is S
    assert invalid(S, 1, "d").with_prefix(FieldPath.of("root")).path == "root.spec.scheduling"


def test_omit_survives_copy_and_pickle_as_the_same_object() -> None:
    """CLI workers pickle results; ``is OMIT`` must still hold on the other side."""
    import copy
    import pickle

    err = too_many(S, -1, 4)
    for clone in (copy.deepcopy(err), pickle.loads(pickle.dumps(err))):
        assert clone.bad_value is OMIT
        assert clone.error() == err.error()


def test_a_value_too_deep_to_print_is_rendered_as_a_placeholder() -> None:
    # JSON decoders accept ~1000 levels; Python's encoder does not. A denial quoting such a
    # value must still render (the kubectl line), not raise.
    deep: object = {}
    for _ in range(5_000):
        deep = {"gang": deep}
    err = invalid(FieldPath.of("spec", "scheduling"), deep, "field is immutable")
    assert err.error().startswith("spec.scheduling: Invalid value: ")
    assert aggregate([err, err]) == err.error()
