"""The AdmissionReview v1 wire model and ``parse_review`` (docs/design.md §9.1–§9.5).

Typed edges: the review is modelled with ``TypedDict``/``Literal`` only, no
validation library. ``parse_review`` checks exactly what wasp relies on and turns anything
else into :class:`MalformedReview`, which carries the HTTP code (400/413) and, when it was
readable, the request uid so the answer can still echo it.
"""

from __future__ import annotations

import re
import typing as t

import orjson

from webhook.admission.echo import ECHO_LIMIT, cut, shown
from webhook.vocab.errors import WaspError

__all__ = [
    "API_VERSION",
    "KIND",
    "MAX_BODY_BYTES",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "MalformedReview",
    "Operation",
    "Request",
    "parse_review",
]

API_VERSION: t.Final = "admission.k8s.io/v1"
KIND: t.Final = "AdmissionReview"
# controller-runtime's limit (the apiserver's own request cap is 3 MiB of object plus
# envelope, so 7 MiB never rejects a real review).
MAX_BODY_BYTES: t.Final = 7 * 1024 * 1024
# The apiserver's uids are UUIDs (36 characters); a longer one is not from an apiserver and is
# neither echoed nor logged whole.
MAX_UID_CHARS: t.Final = ECHO_LIMIT

# A body that is not JSON still gets its uid echoed when it starts as the apiserver writes a
# review (Go marshals the TypeMeta members, then ``request``, whose first member is ``uid``):
# the uid is read from that prefix, in the first few KiB, and nowhere else. The apiserver
# fails any answer whose uid is not the request's, so a guess is never better than "":
# ``object.metadata.uid``, a uid inside a string, or a uid after other request members is
# not echoed.
_STRING: t.Final = rb'"(?:[^"\\]|\\.)*"'
_UID_PREFIX: t.Final = re.compile(
    rb'\s*\{\s*(?:"(?:apiVersion|kind)"\s*:\s*' + _STRING + rb"\s*,\s*)*"
    rb'"request"\s*:\s*\{\s*"uid"\s*:\s*(' + _STRING + rb")(?=\s*(?:[,}]|\Z))"
)
_UID_SCAN_BYTES: t.Final = 4096

Operation = t.Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: t.Final[frozenset[str]] = frozenset(t.get_args(Operation))


class GroupVersionKind(t.TypedDict):
    group: str
    version: str
    kind: str


class GroupVersionResource(t.TypedDict):
    group: str
    version: str
    resource: str


class UserInfo(t.TypedDict, total=False):
    username: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


class AdmissionRequest(t.TypedDict, total=False):
    uid: t.Required[str]
    kind: t.Required[GroupVersionKind]
    resource: GroupVersionResource
    subResource: str
    requestKind: GroupVersionKind
    requestResource: GroupVersionResource
    requestSubResource: str
    name: str
    namespace: str
    operation: t.Required[Operation]
    userInfo: UserInfo
    object: dict[str, t.Any] | None
    oldObject: dict[str, t.Any] | None
    dryRun: bool
    options: dict[str, t.Any] | None


class StatusCause(t.TypedDict):
    reason: str  # the error type, under metav1.StatusCause's JSON key
    type: str  # the same, as this webhook has always written it
    field: str
    message: str


class StatusDetails(t.TypedDict, total=False):
    causes: list[StatusCause]


class Status(t.TypedDict, total=False):
    """``metav1.Status``: read by the apiserver only when ``allowed`` is false (docs/design.md §9.2)."""

    code: int
    reason: str
    message: str
    details: StatusDetails


class AdmissionResponse(t.TypedDict, total=False):
    uid: t.Required[str]
    allowed: t.Required[bool]
    status: Status
    patch: str  # base64 of an RFC 6902 document; always together with patchType (docs/design.md §9.3)
    patchType: t.Literal["JSONPatch"]
    warnings: list[str]
    auditAnnotations: dict[str, str]


class AdmissionReview(t.TypedDict, total=False):
    apiVersion: t.Required[str]
    kind: t.Required[str]
    request: AdmissionRequest
    response: AdmissionResponse


class MalformedReview(WaspError):
    """The body is not an AdmissionReview wasp can answer (a request error, not an object error).

    ``code`` is the HTTP status (400, or 413 for an oversized body); ``uid`` is the request
    uid when it could be read, else ``""``.
    """

    http_status = 400

    def __init__(self, message: str, *, code: int = 400, uid: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.uid = uid


class Request(t.NamedTuple):
    """The parts of ``request`` the handlers read; ``raw`` is the decoded request itself.

    ``object``/``old_object`` are ``None`` when absent or null (``old_object`` on CREATE,
    ``object`` on DELETE). Immutable; a NamedTuple, the lightest immutable record.
    """

    uid: str
    kind: GroupVersionKind
    operation: Operation
    name: str
    namespace: str
    object: dict[str, t.Any] | None
    old_object: dict[str, t.Any] | None
    dry_run: bool
    raw: AdmissionRequest

    @property
    def api_version(self) -> str:
        """``group/version`` of ``kind`` (just ``version`` for the core group)."""
        group, version = self.kind["group"], self.kind["version"]
        return f"{group}/{version}" if group else version


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return names.get(type(value), "a number" if isinstance(value, float) else "null")


def _uid_of_unparsable(body: bytes) -> str:
    """The request uid at the start of a body orjson refused (see ``_UID_PREFIX``), else ``""``.

    Runs on the error path only, over at most ``_UID_SCAN_BYTES``; the string is decoded by
    orjson, and a uid an apiserver would not send (empty, over ``MAX_UID_CHARS``) is not echoed.
    """
    match = _UID_PREFIX.match(body, 0, _UID_SCAN_BYTES)
    if match is None:
        return ""
    try:
        uid = orjson.loads(match[1])
    except orjson.JSONDecodeError:
        return ""
    return uid if isinstance(uid, str) and 0 < len(uid) <= MAX_UID_CHARS else ""


def parse_review(body: bytes) -> Request:
    """Decode and check an AdmissionReview v1 request body; raise :class:`MalformedReview`.

    Checks: JSON object, ``apiVersion``/``kind`` of the review, a ``request`` with a non-empty
    string ``uid`` (at most :data:`MAX_UID_CHARS`), a ``kind`` GVK, a known ``operation``,
    object-or-null ``object``/``oldObject``, and an ``oldObject`` on UPDATE. Nothing inside
    the objects is checked here: that is the core's job. Client values quoted in a message
    are cut (:func:`webhook.admission.echo.shown`).
    """
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if not body.strip():
            raise MalformedReview("request body is empty; expected an AdmissionReview") from None
        raise MalformedReview(
            f"request body is not valid JSON: {cut(str(exc))}", uid=_uid_of_unparsable(body)
        ) from None
    if not isinstance(review, dict):
        raise MalformedReview(
            f"request body must be a JSON object (an AdmissionReview), not {_json_type(review)}"
        )
    request = review.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    uid = uid if isinstance(uid, str) and len(uid) <= MAX_UID_CHARS else ""
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise MalformedReview(
            f"expected apiVersion {API_VERSION!r} and kind {KIND!r}, got {shown(review.get('apiVersion'))} and "
            f"{shown(review.get('kind'))}; register the webhook with admissionReviewVersions: [v1]",
            uid=uid,
        )
    if not isinstance(request, dict):
        raise MalformedReview("the AdmissionReview has no request object")
    if not uid:
        given = request.get("uid")
        if isinstance(given, str) and given:
            raise MalformedReview(
                f"request.uid is {len(given)} characters; an apiserver's uid is a UUID (at most "
                f"{MAX_UID_CHARS} characters are accepted)"
            )
        raise MalformedReview("request.uid is missing or empty; the apiserver always sets it")
    gvk = request.get("kind")
    if not (
        isinstance(gvk, dict)
        and isinstance(gvk.get("group"), str)
        and isinstance(gvk.get("version"), str)
        and isinstance(gvk.get("kind"), str)
    ):
        raise MalformedReview("request.kind must be an object with string group, version and kind", uid=uid)
    operation = request.get("operation")
    # Checked as a string first: a JSON array or object is unhashable, so no set lookup.
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise MalformedReview(
            f"request.operation {shown(operation)} is not one of {', '.join(sorted(OPERATIONS))}", uid=uid
        )
    obj, old_obj = request.get("object"), request.get("oldObject")
    if obj is not None and not isinstance(obj, dict):
        raise MalformedReview(f"request.object must be an object or null, not {_json_type(obj)}", uid=uid)
    if old_obj is not None and not isinstance(old_obj, dict):
        raise MalformedReview(
            f"request.oldObject must be an object or null, not {_json_type(old_obj)}", uid=uid
        )
    if operation == "UPDATE" and old_obj is None:
        # The apiserver always sends the stored object on UPDATE; without it the update
        # rules cannot run, so judging the object alone would let forbidden changes through.
        raise MalformedReview(
            "request.oldObject is required on UPDATE; the apiserver always sends it", uid=uid
        )
    name, namespace = request.get("name", ""), request.get("namespace", "")
    # Positional, and the checked dicts themselves: this runs for every review.
    return Request(
        uid,
        gvk,  # type: ignore[arg-type]  # checked above: string group, version and kind
        operation,  # type: ignore[arg-type]  # one of OPERATIONS
        name if isinstance(name, str) else "",
        namespace if isinstance(namespace, str) else "",
        obj,
        old_obj,
        request.get("dryRun") is True,
        request,  # type: ignore[arg-type]  # the checked request
    )
