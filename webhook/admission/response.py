"""Building AdmissionReview answers: allowed, denied, warned, patched, errored (docs/design.md §9.2).

Every answer echoes the request uid inside an ``admission.k8s.io/v1`` ``AdmissionReview``.
Denials use the controller-runtime ``Denied`` shape (code 403, reason ``Forbidden``), so
kubectl prints ``Error from server (Forbidden): … admission webhook "<name>" denied the
request: <aggregate message>`` (docs/design.md §9.6) and ``details.causes`` carries one cause per field error.
"""

from __future__ import annotations

import dataclasses
import typing as t

from webhook.admission.echo import ECHO_LIMIT, cut
from webhook.admission.review import API_VERSION, KIND, AdmissionResponse, AdmissionReview, Status
from webhook.vocab.field import OMIT, FieldError, FieldPath, Key, Segment, aggregate, render_value

__all__ = ["allowed", "denied", "errored", "limit_warnings", "patched", "review", "warned"]

# The apiserver keeps at most 4096 runes of warning text per request and shortens beyond
# that (docs/design.md §9.4); staying inside both limits ourselves means what we send is what users see.
WARNINGS_TOTAL_RUNES: t.Final = 4096
WARNING_RUNES: t.Final = 256

# An object with more errors than this is denied with the first ones and a count of the rest:
# the answer (and the apiserver's error to the user) stays readable and bounded.
MAX_REPORTED_ERRORS: t.Final = 100

_REASONS: t.Final = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    500: "InternalError",
}


def limit_warnings(warnings: t.Iterable[str]) -> list[str]:
    """The warnings as the apiserver passes them on (k8s.io/apiserver ``endpoints/filters/warning.go``).

    Each text once, in order (empty ones dropped). While their text totals at most 4,096 runes
    they are all kept whole. Past that the apiserver truncates: every warning is cut to 256
    runes and added while fewer than 4,096 runes are written, the rest dropped. A cut warning
    ends in "…" inside its 256 runes, so the user sees that it was cut. Python's ``str`` length
    counts runes.
    """
    texts = [text for text in dict.fromkeys(warnings) if text]
    if sum(map(len, texts)) <= WARNINGS_TOTAL_RUNES:
        return texts
    kept: list[str] = []
    written = 0
    for text in texts:
        if written >= WARNINGS_TOTAL_RUNES:
            break
        if len(text) > WARNING_RUNES:
            text = text[: WARNING_RUNES - 1] + "…"
        kept.append(text)
        written += len(text)
    return kept


def _with_warnings(response: AdmissionResponse, warnings: t.Iterable[str]) -> AdmissionResponse:
    # Most answers carry none: an empty tuple or list skips the limiter.
    if warnings and (limited := limit_warnings(warnings)):
        response["warnings"] = limited
    return response


def allowed(uid: str, warnings: t.Iterable[str] = ()) -> AdmissionResponse:
    return _with_warnings({"uid": uid, "allowed": True}, warnings)


def patched(uid: str, patch: str, warnings: t.Iterable[str] = ()) -> AdmissionResponse:
    """Allowed with a base64 JSON Patch; ``patch`` and ``patchType`` always travel together."""
    return _with_warnings({"uid": uid, "allowed": True, "patch": patch, "patchType": "JSONPatch"}, warnings)


def _capped_segment(segment: Segment) -> Segment:
    if isinstance(segment, Key):
        return Key(cut(segment.name)) if len(segment.name) > ECHO_LIMIT else segment
    if isinstance(segment, str) and len(segment) > ECHO_LIMIT:
        return cut(segment)
    return segment


def _capped(error: FieldError) -> FieldError:
    """``error`` with its bad value, detail and field path cut to :data:`ECHO_LIMIT` (a client's
    value, or an unknown field's name, is shown in the message and again in its cause: each copy
    stays small)."""
    segments = tuple(_capped_segment(s) for s in error.field.segments)
    if segments != error.field.segments:
        error = dataclasses.replace(error, field=FieldPath(segments))
    value = error.bad_value
    if isinstance(value, str):
        value = cut(value)
    elif value is not OMIT and not isinstance(value, bool | int | float):
        if len(rendered := render_value(value)) > ECHO_LIMIT:
            value = cut(rendered)
    detail = cut(error.detail, 4 * ECHO_LIMIT)
    if value is error.bad_value and detail is error.detail:
        return error
    return dataclasses.replace(error, bad_value=value, detail=detail)


def _reported(errors: t.Sequence[FieldError]) -> list[FieldError]:
    return [_capped(e) for e in errors[:MAX_REPORTED_ERRORS]]


def denied(uid: str, errors: t.Sequence[FieldError], warnings: t.Iterable[str] = ()) -> AdmissionResponse:
    """403 Forbidden with the apimachinery aggregate message and one cause per error.

    At most :data:`MAX_REPORTED_ERRORS` errors are reported, each with its value cut to
    :data:`ECHO_LIMIT`; the message then says how many were left out.
    """
    left_out = len(errors) - MAX_REPORTED_ERRORS
    errors = _reported(errors)
    message = aggregate(errors)
    if left_out > 0:
        message += f" (and {left_out} more errors not shown)"
    status: Status = {
        "code": 403,
        "reason": "Forbidden",
        "message": message,
        "details": {
            # metav1.StatusCause carries the error type under the JSON key "reason"; "type" is
            # kept beside it for the clients that read this webhook's answers directly.
            "causes": [
                {"reason": e.type.value, "type": e.type.value, "field": str(e.field), "message": e.body()}
                for e in errors
            ]
        },
    }
    return _with_warnings({"uid": uid, "allowed": False, "status": status}, warnings)


def warned(uid: str, errors: t.Sequence[FieldError], warnings: t.Iterable[str] = ()) -> AdmissionResponse:
    """Allowed, with what :func:`denied` would have said as warnings (a policy in warn mode).

    One warning per field error, worded as the errors of the denial message (kubectl prints
    ``Warning: <field>: <error>``), before the object's other warnings; the apiserver's
    limits apply to them all (:func:`limit_warnings`), so the first errors are the ones kept.
    """
    lines = dict.fromkeys(e.error() for e in _reported(errors))  # duplicates dropped, as aggregate() does
    return allowed(uid, [*lines, *warnings])


def errored(uid: str, code: int, message: str) -> AdmissionResponse:
    """Not allowed, with ``code`` and its reason: 400/413 for a bad request, 500 for a bug."""
    reason = _REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    status: Status = {"code": code, "reason": reason, "message": message}
    return {"uid": uid, "allowed": False, "status": status}


def review(response: AdmissionResponse) -> AdmissionReview:
    """The envelope: always v1, since wasp registers ``admissionReviewVersions: [v1]`` only."""
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}
