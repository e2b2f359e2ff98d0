"""Answers written by the worker itself, before or outside the WSGI app: an AdmissionReview always.

gunicorn answers what it cannot parse (a bad request line, a header too long, a bad chunk)
with an HTML page, and a timed-out request with nothing. wasp's worker answers these with
the same AdmissionReview body as every other answer (no uid: none was read), a 4xx for
anything the client got wrong, and ``Connection: close``: the framing of the connection can
no longer be trusted. Only an exception that is not a parse error is a 500 ``InternalError``
(logged with its stack and counted by the caller).
"""

from __future__ import annotations

import ssl
import typing as t

import orjson
from gunicorn.http import errors as gerrors

from webhook.admission.echo import cut
from webhook.admission.response import errored, review

__all__ = ["classify", "response_bytes"]

_REASON_PHRASES: t.Final = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}

# Most specific first: (exception class, HTTP code). Everything gunicorn's parser raises about
# the request is the client's; anything else is a bug (500).
_CLIENT_ERRORS: t.Final[tuple[tuple[type[BaseException], int], ...]] = (
    (gerrors.LimitRequestLine, 414),
    (gerrors.LimitRequestHeaders, 431),
    (gerrors.ExpectationFailed, 417),
    (gerrors.ConfigurationProblem, 500),
    (gerrors.ParseException, 400),
    (ssl.SSLError, 400),
)


def classify(exc: BaseException) -> tuple[int, str]:
    """The HTTP code for an exception gunicorn's request handling raised, and its message."""
    for kind, code in _CLIENT_ERRORS:
        if isinstance(exc, kind):
            if code >= 500:
                break
            return code, f"the request cannot be parsed: {cut(str(exc))}"
    return 500, "internal error in the wasp webhook while reading this request; see the webhook's logs"


def response_bytes(code: int, message: str) -> bytes:
    """A whole HTTP/1.1 response: ``code`` with an AdmissionReview whose status says ``message``."""
    body = orjson.dumps(review(errored("", code, message)))
    head = (
        f"HTTP/1.1 {code} {_REASON_PHRASES.get(code, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body
