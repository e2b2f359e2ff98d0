"""The uid of a body that is not JSON (issue 17): echoed when the body starts as the apiserver
writes a review, ``""`` whenever it could be anything else.

The apiserver fails a call whose answer's uid is not the request's, so a wrong uid is worse
than none: a uid elsewhere (``object.metadata.uid``, inside a string, after other request
members) is never echoed.
"""

from __future__ import annotations

import typing as t

import orjson
import pytest
from flask.testing import FlaskClient

from webhook.admission.echo import ECHO_LIMIT
from webhook.admission.review import MalformedReview, parse_review

HEAD: t.Final = b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":'


@pytest.mark.parametrize(
    ("body", "uid"),
    [
        pytest.param(
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"abc-123",'
            b'"object": {"a": 1,,}}}',
            "abc-123",
            id="a syntax error after the uid",
        ),
        pytest.param(HEAD + b'{"uid":"abc-123"', "abc-123", id="truncated right after the uid"),
        pytest.param(HEAD + b'{"uid":"abc-123","kind":{"gr', "abc-123", id="truncated later"),
        pytest.param(
            b' {\n "request" : { "uid" : "abc-123" } ,,', "abc-123", id="whitespace and no type members"
        ),
        pytest.param(
            HEAD + b'{"uid":"a\\u00e9\\"b",,', 'a\u00e9"b', id="escapes decoded as JSON decodes them"
        ),
        pytest.param(
            HEAD + b'{"uid":"' + b"x" * ECHO_LIMIT + b'",,', "x" * ECHO_LIMIT, id="a uid at the echo limit"
        ),
        pytest.param(
            HEAD + b'{"uid":"' + b"x" * (ECHO_LIMIT + 1) + b'",,', "", id="a uid over the limit is not echoed"
        ),
        pytest.param(HEAD + b'{"uid":"abc-', "", id="truncated inside the uid"),
        pytest.param(HEAD + b'{"uid":"",,', "", id="an empty uid"),
        pytest.param(HEAD + b'{"uid":7,,', "", id="a uid that is not a string"),
        pytest.param(HEAD + b'{"uid":"ab"c",,', "", id="a uid followed by junk is not a member"),
        pytest.param(HEAD + b'{"uid":"ab\xffc",,', "", id="a uid that is not UTF-8"),
        pytest.param(HEAD + b'{"kind":{},"uid":"abc-123",,', "", id="a uid after other request members"),
        pytest.param(
            HEAD + b'{"object":{"metadata":{"uid":"obj-1"}},,',
            "",
            id="object.metadata.uid is not the request's",
        ),
        pytest.param(
            b'{"kind":"x\\",\\"request\\":{\\"uid\\":\\"evil",,', "", id="a uid inside a string is text"
        ),
        pytest.param(b'{"extra":{"request":{"uid":"abc-123"}},,', "", id="a request nested elsewhere"),
        pytest.param(b'[{"request":{"uid":"abc-123"}},,', "", id="not an object at the top"),
        pytest.param(
            b'{"kind":"' + b"k" * 5000 + b'","request":{"uid":"abc-123",,',
            "",
            id="a uid past the scanned prefix",
        ),
        pytest.param(
            HEAD + b'{"uid":"abc-123","object":' + b"[" * 1100 + b"]" * 1100 + b"}}",
            "abc-123",
            id="valid JSON deeper than orjson decodes",
        ),
    ],
)
def test_the_uid_of_a_body_that_is_not_json(body: bytes, uid: str) -> None:
    with pytest.raises(MalformedReview) as caught:
        parse_review(body)
    assert caught.value.code == 400 and "not valid JSON" in caught.value.message
    assert caught.value.uid == uid


@pytest.mark.parametrize(
    ("content_type", "body", "code"),
    [
        pytest.param("application/json", HEAD + b'{"uid":"abc-123",,', 400, id="invalid JSON"),
        pytest.param(
            "text/plain", HEAD + b'{"uid":"abc-123",,', 400, id="invalid JSON of the wrong media type"
        ),
    ],
)
def test_the_answer_echoes_the_recovered_uid(
    client: FlaskClient, content_type: str, body: bytes, code: int
) -> None:
    resp = client.post("/validate", data=body, headers={"Content-Type": content_type})
    answer = orjson.loads(resp.data)
    assert resp.status_code == code and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == "abc-123" and answer["response"]["allowed"] is False
    assert answer["response"]["status"]["reason"] == "BadRequest"
