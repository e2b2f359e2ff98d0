"""Every JSON type at every field of the building blocks, on CREATE and on UPDATE.

The acceptance table of the JSON-types issue: "a table test crosses every JSON type pair with
every block field, on CREATE and on UPDATE". A batch/v1 Job (and a CronJob's job template)
governed by the built-in policies gets, at one field of ``spec.scheduling`` at a time, a value
of every JSON type; on UPDATE the stored object holds that field at a valid value of the
right type.

What the table pins down:

* a value of the wrong JSON type is ``FieldValueTypeInvalid`` at the field's path, on CREATE
  and on UPDATE, even where Python's ``==`` calls old and new equal (``True`` and ``1.0``
  over a stored ``1``);
* ``null`` is an absent member; an empty list is an absent list; an empty object is a value;
* a value equal to the stored one is accepted on UPDATE; the Job update rules add an
  immutability error at ``schedulingConstraints``, ``disruptionMode`` and ``resourceClaims``
  whenever the value differs from the stored one, and ``gang.minCount`` may change;
* a CronJob's job template (``updateRules: none``) gets the structural errors only.

Expected errors are written per field for the values of the field's own type and for
``null``; every other value is of the wrong type. Assertions compare ``(type, path)`` pairs.
"""

from __future__ import annotations

import copy
import json
import typing as t
from dataclasses import dataclass, field

import pytest

from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.vocab.gates import FeatureGates

P = PolicySet.load()

S = "spec.scheduling"
CJ = "spec.jobTemplate.spec.scheduling"
MIN = f"{S}.schedulingPolicy.gang.minCount"
TYPE = "FieldValueTypeInvalid"
INVALID = "FieldValueInvalid"
REQUIRED = "FieldValueRequired"
FORBIDDEN = "FieldValueForbidden"

Json = dict[str, t.Any]
Errors = tuple[tuple[str, str], ...]

RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


def show(value: object) -> str:
    """A value as compact JSON text (``1.0`` stays ``1.0``, ``True`` is ``true``)."""
    return json.dumps(value, separators=(",", ":"))


# --------------------------------------------------------------------------- the fields


@dataclass(frozen=True)
class Field:
    """One field of the building blocks.

    ``create`` holds the expected errors (paths relative to the embedding) for ``null`` and for
    the catalogue values of the field's own JSON type; every other value is of the wrong type.
    ``immutable`` is the block a Job update may not change (``None``: the field may change).
    ``same_as_stored`` are the catalogue values that are semantically the stored value.
    """

    name: str
    path: str
    json_type: str
    make: t.Callable[[object], Json]
    stored: object
    changed: object = None  # another valid value of the right type (None: the type has no other)
    immutable: str | None = None
    create: t.Mapping[str, Errors] = field(default_factory=dict)
    same_as_stored: frozenset[str] = frozenset()


def _policy(member: str) -> t.Callable[[object], Json]:
    return lambda v: {"schedulingPolicy": {member: v}}


def _topology_key(v: object) -> Json:
    return {"schedulingConstraints": {"topology": [{"key": v}]}}


def _claim(**members: object) -> t.Callable[[object], Json]:
    (member,) = (k for k, v in members.items() if v is None)
    return lambda v: {"resourceClaims": [{**members, member: v}]}


def _disruption(member: str) -> t.Callable[[object], Json]:
    # ``all`` needs a gang: basic with all is invalid on its own (behaviour table row 58).
    policy: Json = {"schedulingPolicy": {"gang": {}}} if member == "all" else {}
    return lambda v: {**copy.deepcopy(policy), "disruptionMode": {member: v}}


NO_ERRORS: Errors = ()
SP = "schedulingPolicy"
TOPO = "schedulingConstraints.topology"
DM = "disruptionMode"
RC = "resourceClaims"
EMPTY_OBJECTS = frozenset({"{}", '{"a":null}'})  # what a stored empty object equals


def _object_member(name: str, path: str, union: str, make: t.Callable[[object], Json], **kw: t.Any) -> Field:
    """A member whose value is an empty struct (``basic``, ``gang``, ``single``, ``all``)."""
    create = {
        "null": ((INVALID, union),),  # the union it belongs to is left empty
        "{}": NO_ERRORS,
        '{"a":1}': ((FORBIDDEN, f"{path}.a"),),  # an unknown member
        '{"a":null}': NO_ERRORS,  # a null member is absent
        '{"a":{"b":[1,null]}}': ((FORBIDDEN, f"{path}.a"),),
        **kw.pop("create", {}),
    }
    return Field(name, path, "object", make, create=create, **kw)


FIELDS = [
    Field(
        "minCount",
        f"{SP}.gang.minCount",
        "integer",
        lambda v: {"schedulingPolicy": {"gang": {"minCount": v}}},
        stored=1,
        changed=2,  # gang.minCount is the one field a Job update may change
        create={
            "null": NO_ERRORS,  # unset: the controller defaults it from parallelism
            "0": ((INVALID, f"{SP}.gang.minCount"),),  # minimum 1
            "1": NO_ERRORS,
            "-1": ((INVALID, f"{SP}.gang.minCount"),),
        },
        same_as_stored=frozenset({"1"}),
    ),
    _object_member("basic", f"{SP}.basic", SP, _policy("basic"), stored={}, same_as_stored=EMPTY_OBJECTS),
    _object_member(
        "gang",
        f"{SP}.gang",
        SP,
        _policy("gang"),
        stored={"minCount": 1},
        changed={"minCount": 2},  # dropping or changing minCount is allowed (decision 11)
    ),
    Field(
        "topology",
        TOPO,
        "array",
        lambda v: {"schedulingConstraints": {"topology": v}},
        stored=[{"key": RACK}],
        changed=[{"key": ZONE}],
        immutable="schedulingConstraints",
        create={
            "null": NO_ERRORS,
            "[]": NO_ERRORS,
            "[1]": ((TYPE, f"{TOPO}[0]"),),
            "[null]": ((REQUIRED, f"{TOPO}[0].key"),),  # a null item is the zero struct
            '[[{"a":1}]]': ((TYPE, f"{TOPO}[0]"),),
        },
    ),
    Field(
        "key",
        f"{TOPO}[0].key",
        "string",
        _topology_key,
        stored=RACK,
        changed=ZONE,
        immutable="schedulingConstraints",
        create={
            "null": ((REQUIRED, f"{TOPO}[0].key"),),
            '""': ((REQUIRED, f"{TOPO}[0].key"),),
            '"1"': NO_ERRORS,  # a valid label key
        },
    ),
    _object_member(
        "single",
        f"{DM}.single",
        DM,
        _disruption("single"),
        stored={},
        immutable=DM,
        same_as_stored=EMPTY_OBJECTS,
    ),
    _object_member(
        "all", f"{DM}.all", DM, _disruption("all"), stored={}, immutable=DM, same_as_stored=EMPTY_OBJECTS
    ),
    Field(
        "resourceClaims",
        RC,
        "array",
        lambda v: {"resourceClaims": v},
        stored=[{"name": "gpus", "resourceClaimName": "gpus-a"}],
        changed=[{"name": "gpus", "resourceClaimName": "gpus-b"}],
        immutable=RC,
        create={
            "null": NO_ERRORS,
            "[]": NO_ERRORS,
            "[1]": ((TYPE, f"{RC}[0]"),),
            # A null item is the zero struct: no name and no source.
            "[null]": ((INVALID, f"{RC}[0]"), (REQUIRED, f"{RC}[0].name")),
            '[[{"a":1}]]': ((TYPE, f"{RC}[0]"),),
        },
    ),
    Field(
        "name",
        f"{RC}[0].name",
        "string",
        _claim(name=None, resourceClaimName="gpus-a"),
        stored="gpus",
        changed="cache",
        immutable=RC,
        create={
            "null": ((REQUIRED, f"{RC}[0].name"),),
            '""': ((REQUIRED, f"{RC}[0].name"),),
            '"1"': NO_ERRORS,  # a valid DNS label
        },
    ),
    Field(
        "resourceClaimName",
        f"{RC}[0].resourceClaimName",
        "string",
        _claim(name="gpus", resourceClaimName=None),
        stored="gpus-a",
        changed="gpus-b",
        immutable=RC,
        create={
            "null": ((INVALID, f"{RC}[0]"),),  # the claim is left without a source (union)
            '""': ((INVALID, f"{RC}[0].resourceClaimName"),),  # set, but not a DNS subdomain
            '"1"': NO_ERRORS,
        },
    ),
    Field(
        "resourceClaimTemplateName",
        f"{RC}[0].resourceClaimTemplateName",
        "string",
        _claim(name="gpus", resourceClaimTemplateName=None),
        stored="gpus-tpl",
        changed="other-tpl",
        immutable=RC,
        create={
            "null": ((INVALID, f"{RC}[0]"),),
            '""': ((INVALID, f"{RC}[0].resourceClaimTemplateName"),),
            '"1"': NO_ERRORS,
        },
    ),
]


BY_NAME = {f.name: f for f in FIELDS}

# --------------------------------------------------------------------------- the objects

_POD = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "worker", "image": "registry.example/w:1"}]}
}


def _job(block: Json) -> Json:
    spec = {"parallelism": 4, "template": copy.deepcopy(_POD), "scheduling": block}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": spec,
    }


def _cronjob(block: Json) -> Json:
    template = {"parallelism": 4, "template": copy.deepcopy(_POD), "scheduling": block}
    spec = {"schedule": "0 2 * * *", "jobTemplate": {"spec": template}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ml"},
        "spec": spec,
    }


def _block(**member: object) -> Json:
    """The block with one field set: ``_block(minCount=True)``."""
    if len(member) != 1:
        raise TypeError(f"set exactly one field, not {sorted(member)}")
    ((name, value),) = member.items()
    return BY_NAME[name].make(copy.deepcopy(value))


def job_with(**member: object) -> Json:
    """A Job whose ``spec.scheduling`` sets one field: ``job_with(minCount=True)``."""
    return _job(_block(**member))


def cronjob_with(**member: object) -> Json:
    """A CronJob whose job template's ``scheduling`` sets one field."""
    return _cronjob(_block(**member))


# --------------------------------------------------------------------------- the values

# A value of every JSON type: null, booleans, integers, integral floats, strings, lists, objects.
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
    [],
    [1],
    [None],
    [[{"a": 1}]],
    {},
    {"a": 1},
    {"a": None},
    {"a": {"b": [1, None]}},
]


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array", dict: "object"}[
        type(value)
    ]


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Kind:
    name: str
    make: t.Callable[..., Json]
    root: str
    update_rules: bool  # elastic Job rules; a CronJob template has none


JOB = Kind("Job", job_with, S, True)
CRONJOB = Kind("CronJob", cronjob_with, CJ, False)


@dataclass(frozen=True)
class Row:
    id: str
    new: Json
    old: Json | None
    errors: Errors


def _at(root: str, errors: Errors) -> Errors:
    return tuple((kind, f"{root}.{path}") for kind, path in errors)


def _describe(errors: Errors) -> str:
    if not errors:
        return "is admitted"
    return "is denied: " + ", ".join(f"{kind} at {path}" for kind, path in sorted(errors))


def _create_errors(f: Field, value: object) -> Errors:
    text = show(value)
    if text in f.create:
        return f.create[text]
    if text in (show(f.stored), show(f.changed)):
        return NO_ERRORS  # valid by construction
    assert _json_type(value) != f.json_type, f"{f.name}: write the expected errors for {text}"
    return ((TYPE, f.path),)


def _values(f: Field) -> list[object]:
    """The catalogue, then the stored value and another valid one where the catalogue lacks them."""
    return [*CATALOGUE, f.stored, *([] if f.changed is None else [f.changed])]


def _rows(kind: Kind, f: Field) -> list[Row]:
    values = list({show(v): v for v in _values(f)}.values())
    rows = []
    for value in values:
        text = show(value)
        create = _at(kind.root, _create_errors(f, value))
        unchanged = text == show(f.stored) or text in f.same_as_stored
        update = create
        if kind.update_rules and f.immutable is not None and not unchanged:
            update = (*create, (INVALID, f"{kind.root}.{f.immutable}"))  # "field is immutable"
        what = f"{f.name} = {text} ({_json_type(value)})"
        rows.append(
            Row(f"{kind.name} CREATE: {what} {_describe(create)}", kind.make(**{f.name: value}), None, create)
        )
        over = f"over a stored {show(f.stored)}"
        rows.append(
            Row(
                f"{kind.name} UPDATE {over}: {what} {_describe(update)}",
                kind.make(**{f.name: value}),
                kind.make(**{f.name: f.stored}),
                update,
            )
        )
    return rows


TABLE = [row for kind in (JOB, CRONJOB) for f in FIELDS for row in _rows(kind, f)]


def _check(new: Json, old: Json | None, errors: Errors, policies: PolicySet = P) -> None:
    before = show((new, old))  # JSON text: True and 1 differ here, unlike with ==
    result = validate_object(new, old, policies=policies)
    assert sorted(e.key() for e in result.errors) == sorted(errors)
    assert result.status is (Status.INVALID if errors else Status.VALID)
    assert show((new, old)) == before  # never modified


@pytest.mark.parametrize("row", TABLE, ids=[r.id for r in TABLE])
def test_every_json_type_at_every_block_field(row: Row, structural_engine: str) -> None:
    _check(row.new, row.old, row.errors)


def test_the_table_crosses_every_field_with_every_json_type_on_create_and_update() -> None:
    assert len({r.id for r in TABLE}) == len(TABLE)
    assert {f.name for f in FIELDS} == {
        "minCount", "basic", "gang", "topology", "key", "single", "all",
        "resourceClaims", "name", "resourceClaimName", "resourceClaimTemplateName",
    }  # fmt: skip
    assert {_json_type(v) for v in CATALOGUE} == {
        "null",
        "boolean",
        "integer",
        "float",
        "string",
        "array",
        "object",
    }
    for kind in (JOB, CRONJOB):
        for f in FIELDS:
            for op in ("CREATE:", "UPDATE over"):
                prefix = f"{kind.name} {op}"
                rows = [r for r in TABLE if r.id.startswith(prefix) and f": {f.name} = " in r.id]
                assert {r.id.split(f": {f.name} = ")[1].split(" (")[0] for r in rows} == {
                    show(v) for v in _values(f)
                }, (prefix, f.name)
    # Every field's own expectations name values that the catalogue (or its stored value) has.
    for f in FIELDS:
        assert set(f.create) <= {show(v) for v in CATALOGUE}, f.name


# --------------------------------------------------------------------------- named rows


@dataclass(frozen=True)
class Named:
    id: str
    new: Json
    old: Json | None
    errors: Errors
    gates: str = ""


CMIN = f"{CJ}.schedulingPolicy.gang.minCount"
NAMED = [
    # The three calls of the issue, verbatim.
    Named(
        "the issue, call 1: minCount True on CREATE is FieldValueTypeInvalid at the minCount path",
        job_with(minCount=True),
        None,
        ((TYPE, MIN),),
    ),
    Named(
        "the issue, call 2: minCount True over a stored 1 is FieldValueTypeInvalid although True == 1",
        job_with(minCount=True),
        job_with(minCount=1),
        ((TYPE, MIN),),
    ),
    Named(
        "the issue, call 3: minCount 1.0 over a stored 1 is FieldValueTypeInvalid although 1.0 == 1",
        job_with(minCount=1.0),
        job_with(minCount=1),
        ((TYPE, MIN),),
    ),
    # The same trap one level up: Python's == calls these blocks equal.
    Named(
        "a gang {minCount: true} over a stored {minCount: 1} is FieldValueTypeInvalid at minCount",
        job_with(gang={"minCount": True}),
        job_with(gang={"minCount": 1}),
        ((TYPE, MIN),),
    ),
    Named(
        "a gang {minCount: 1.0} over a stored {minCount: 1} is FieldValueTypeInvalid at minCount",
        job_with(gang={"minCount": 1.0}),
        job_with(gang={"minCount": 1}),
        ((TYPE, MIN),),
    ),
    Named(
        "a CronJob template minCount True over a stored 1 is FieldValueTypeInvalid",
        cronjob_with(minCount=True),
        cronjob_with(minCount=1),
        ((TYPE, CMIN),),
    ),
    Named(
        "a CronJob template minCount 1.0 over a stored 1 is FieldValueTypeInvalid",
        cronjob_with(minCount=1.0),
        cronjob_with(minCount=1),
        ((TYPE, CMIN),),
    ),
    # Ratcheting: a stored invalid value (stored before a rule existed) may be kept, by JSON value.
    Named(
        "ratcheting: minCount 0 over a stored 0 is not validated again",
        job_with(minCount=0),
        job_with(minCount=0),
        (),
    ),
    Named(
        "ratcheting: minCount false over a stored 0 is a change, so FieldValueTypeInvalid",
        job_with(minCount=False),
        job_with(minCount=0),
        ((TYPE, MIN),),
    ),
    Named(
        "ratcheting: minCount 0.0 over a stored 0 is a change, so FieldValueTypeInvalid",
        job_with(minCount=0.0),
        job_with(minCount=0),
        ((TYPE, MIN),),
    ),
    Named(
        "ratcheting: minCount -1 over a stored 0 is a change, so validated in full",
        job_with(minCount=-1),
        job_with(minCount=0),
        ((INVALID, MIN),),
    ),
    Named(
        "ratcheting: minCount null over a stored 0 clears it, which a Job may do",
        job_with(minCount=None),
        job_with(minCount=0),
        (),
    ),
    Named(
        "ratcheting does not cover hand-written rules: minCount 5 over a stored 5 still exceeds parallelism 4",
        job_with(minCount=5),
        job_with(minCount=5),
        ((INVALID, MIN),),
    ),
    Named(
        "ratcheting: an empty topology key over a stored empty key is not validated again",
        job_with(key=""),
        job_with(key=""),
        (),
    ),
    Named(
        "ratcheting: a claim named Bad_Name over a stored Bad_Name is not validated again",
        job_with(name="Bad_Name"),
        job_with(name="Bad_Name"),
        (),
    ),
    Named(
        "ratcheting: disruptionMode {single: null} over a stored {} is unchanged (null is absent)",
        _job({"disruptionMode": {"single": None}}),
        _job({"disruptionMode": {}}),
        (),
    ),
    # With WorkloadWithJob off a kept spec.scheduling may not change, by JSON value.
    Named(
        "WorkloadWithJob off: minCount 1 over a stored 1 is unchanged and admitted",
        job_with(minCount=1),
        job_with(minCount=1),
        (),
        gates="WorkloadWithJob=false",
    ),
    Named(
        "WorkloadWithJob off: minCount True over a stored 1 is a change, forbidden, and of the wrong type",
        job_with(minCount=True),
        job_with(minCount=1),
        ((FORBIDDEN, S), (TYPE, MIN)),
        gates="WorkloadWithJob=false",
    ),
    Named(
        "WorkloadWithJob off: minCount 1.0 over a stored 1 is a change, forbidden, and of the wrong type",
        job_with(minCount=1.0),
        job_with(minCount=1),
        ((FORBIDDEN, S), (TYPE, MIN)),
        gates="WorkloadWithJob=false",
    ),
    Named(
        "WorkloadWithJob off: an added empty resourceClaims list is no change (an empty list is absent)",
        _job({"schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": []}),
        job_with(minCount=1),
        (),
        gates="WorkloadWithJob=false",
    ),
]


@pytest.mark.parametrize("row", NAMED, ids=[r.id for r in NAMED])
def test_named_rows(row: Named, structural_engine: str) -> None:
    policies = PolicySet(P.policies, gates=FeatureGates.parse(row.gates)) if row.gates else P
    _check(row.new, row.old, row.errors, policies)


def test_named_row_ids_are_unique() -> None:
    assert len({r.id for r in NAMED}) == len(NAMED)
