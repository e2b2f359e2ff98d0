"""Deeply nested values (issue 17): 300 to 1,000 levels inside a review answer the field's own
error, never an ``InternalError``; past orjson's 1,024 levels the body is a 400 with its uid.

Bodies are written as text: orjson encodes at most 255 levels, and the point is what the
server does with what orjson decodes (up to 1,024).
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import orjson
import pytest
from apiserver import build_review
from click.testing import CliRunner
from conftest import job, pod_of_job
from flask.testing import FlaskClient

from webhook.cli.main import cli

Json = dict[str, t.Any]
JSON = {"Content-Type": "application/json"}
DEPTHS: t.Final = (300, 600, 1000)
_HOLE: t.Final = "\x00deep\x00"  # where the nested text goes in the encoded review

TYPE_INVALID, FORBIDDEN = "FieldValueTypeInvalid", "FieldValueForbidden"


def nested(depth: int, shape: str) -> str:
    """``depth`` levels of objects (``{"a": ...}``) or arrays (``[...]``) around ``1``."""
    opening, closing = ('{"a":', "}") if shape == "object" else ("[", "]")
    return opening * depth + "1" + closing * depth


def put(obj: Json, path: str, value: object) -> Json:
    node = obj
    *parents, last = path.split(".")
    for name in parents:
        node = node.setdefault(name, {})
    node[last] = value
    return obj


def body_with(
    obj: Json, depth: int, shape: str, *, operation: str = "CREATE", old: Json | None = None
) -> bytes:
    encoded = orjson.dumps(build_review(obj, uid="deep-1", operation=operation, old=old))
    hole = orjson.dumps(_HOLE)
    assert encoded.count(hole) == 1
    return encoded.replace(hole, nested(depth, shape).encode())


def answer(client: FlaskClient, path: str, body: bytes) -> tuple[int, Json]:
    resp = client.post(path, data=body, headers=JSON)
    return resp.status_code, orjson.loads(resp.data)["response"]


def causes(response: Json) -> list[tuple[str, str]]:
    return [
        (c["reason"], c["field"]) for c in response.get("status", {}).get("details", {}).get("causes", [])
    ]


# (object with the hole, expected (type, field) cause or None for allowed)
PLACES: t.Final = [
    pytest.param(
        put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.minCount", _HOLE),
        (TYPE_INVALID, "spec.scheduling.schedulingPolicy.gang.minCount"),
        id="a known integer field of the block: its type error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.extra", _HOLE),
        (FORBIDDEN, "spec.scheduling.schedulingPolicy.gang.extra"),
        id="an unknown field inside the block: the unknown-field error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling.extra", _HOLE),
        (FORBIDDEN, "spec.scheduling.extra"),
        id="an unknown field at the block's top: the unknown-field error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling.schedulingPolicy.basic", _HOLE),
        ("FieldValueInvalid", "spec.scheduling.schedulingPolicy"),
        id="a second union member: the union error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling.schedulingConstraints", {"topology": [{"key": _HOLE}]}),
        (TYPE_INVALID, "spec.scheduling.schedulingConstraints.topology[0].key"),
        id="a list-map key: its type error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling.resourceClaims", [{"name": _HOLE}]),
        (TYPE_INVALID, "spec.scheduling.resourceClaims[0].name"),
        id="a resource claim's name: its type error",
    ),
    pytest.param(
        put(job(min_count=4), "spec.scheduling", _HOLE),
        None,  # objects: spec.scheduling.a is unknown; arrays: spec.scheduling is not an object
        id="the block itself",
    ),
    pytest.param(
        put(job(min_count=4), "spec.parallelism", _HOLE),
        (TYPE_INVALID, "spec.parallelism"),
        id="the pod count the policy reads: its type error",
    ),
    pytest.param(
        put(job(min_count=4), "metadata.labels", {"team": _HOLE}),
        (),
        id="metadata.labels: not wasp's to judge (the apiserver decodes them first)",
    ),
    pytest.param(
        put(job(min_count=4), "spec.template.spec.extra", _HOLE),
        (),
        id="inside the pod template: not wasp's to judge",
    ),
]


@pytest.mark.parametrize("shape", ["object", "array"])
@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(("obj", "expected"), PLACES)
def test_a_deep_value_answers_the_fields_own_error(
    client: FlaskClient, obj: Json, expected: tuple[str, str] | tuple[()] | None, depth: int, shape: str
) -> None:
    body = body_with(obj, depth, shape)
    status, response = answer(client, "/validate", body)
    assert status == 200 and response["uid"] == "deep-1"
    got = causes(response)
    assert all(kind != "InternalError" for kind, _ in got)
    if expected is None:  # the block itself: which error depends on the shape
        expected = (
            (FORBIDDEN, "spec.scheduling.a") if shape == "object" else (TYPE_INVALID, "spec.scheduling")
        )
    if expected == ():
        assert response["allowed"] is True
    else:
        assert response["allowed"] is False and expected in got
    status, mutated = answer(client, "/mutate", body)
    assert status == 200 and mutated["uid"] == "deep-1" and mutated.get("status", {}).get("code") != 500


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_value_added_on_update_is_the_unknown_field_error(client: FlaskClient, depth: int) -> None:
    new = put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.extra", _HOLE)
    body = body_with(new, depth, "object", operation="UPDATE", old=job(min_count=4))
    status, response = answer(client, "/validate", body)
    assert status == 200 and response["allowed"] is False
    assert causes(response) == [(FORBIDDEN, "spec.scheduling.schedulingPolicy.gang.extra")]


def test_a_deep_bad_value_is_shown_as_too_deep_and_cut(client: FlaskClient) -> None:
    body = body_with(
        put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.minCount", _HOLE), 1000, "array"
    )
    _, response = answer(client, "/validate", body)
    (cause,) = response["status"]["details"]["causes"]
    assert "nested too deeply to print" in cause["message"] and len(cause["message"]) < 600


def test_deeper_than_orjson_decodes_is_a_400_that_echoes_the_uid(client: FlaskClient) -> None:
    body = body_with(
        put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.minCount", _HOLE), 1100, "object"
    )
    status, response = answer(client, "/validate", body)
    assert status == 400 and response["status"]["reason"] == "BadRequest"
    assert response["uid"] == "deep-1"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(("metadata", "name"), id="the pod's name"),
        pytest.param(("metadata", "ownerReferences", 0, "name"), id="its controller's name"),
    ],
)
def test_a_pod_with_a_deeply_nested_name_is_not_an_internal_error(
    client: FlaskClient, path: tuple[str | int, ...]
) -> None:
    pod = pod_of_job()
    node: t.Any = pod
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = _HOLE
    review = build_review(pod, uid="deep-1")
    review["request"]["name"] = "p"  # the apiserver's own copy of the name is a string
    body = orjson.dumps(review).replace(orjson.dumps(_HOLE), nested(1000, "object").encode())
    status, response = answer(client, "/mutate", body)
    assert status == 200 and response.get("status", {}).get("code") != 500


# ------------------------------------------------------------------------------ the CLI


def _deep_job_file(tmp_path: Path, name: str, depth: int) -> Path:
    text = json.dumps(put(job(min_count=4), "spec.scheduling.schedulingPolicy.gang.extra", _HOLE))
    path = tmp_path / name
    path.write_text(text.replace(json.dumps(_HOLE), nested(depth, "object")), encoding="utf-8")
    return path


def _validate_json(path: Path) -> tuple[int, Json]:
    result = CliRunner().invoke(cli, ["validate", "-o", "json", str(path)], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("depth", [300, 600])
def test_wasp_validate_reports_the_unknown_field_of_a_deep_file(tmp_path: Path, depth: int) -> None:
    for name in ("job.yaml", "job.json"):  # JSON text is YAML too: both loaders
        code, out = _validate_json(_deep_job_file(tmp_path, name, depth))
        (record,) = out["results"]
        assert code == 1 and [(e["type"], e["field"]) for e in record["errors"]] == [
            (FORBIDDEN, "spec.scheduling.schedulingPolicy.gang.extra")
        ]
