"""``create_app``: the Flask edge of the admission webhook. No module-level app.

Routes only move bytes: read the body (capped before it is read whole), parse it with
:func:`webhook.admission.review.parse_review`, call the pure handler, serialise the answer
with orjson, and record one log line and the metrics. Three failure classes stay apart:
a bad object is a denial (HTTP 200), a bad request is HTTP 400/413 with an
AdmissionReview body, a bug in the core is an ``InternalError`` answer for that review only.
"""

from __future__ import annotations

import logging
import os
import time
import typing as t
from dataclasses import dataclass
from types import MappingProxyType

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from webhook.admission.echo import cut
from webhook.admission.handler import Answer, handle_mutate, handle_validate, internal_error
from webhook.admission.response import errored, review
from webhook.admission.review import OPERATIONS, MalformedReview, Request, parse_review
from webhook.governed.outsiders import stamps
from webhook.policy import PolicySet
from webhook.scheduling_objects import VALIDATORS
from webhook.server import metrics
from webhook.server.framing import body_coding_problem
from webhook.server.logs import REVIEW_LOGGER, ReviewEntry, ReviewLog
from webhook.server.tls import CertReloader, LoadedPair

if t.TYPE_CHECKING:
    from webhook.server.identities import IdentityWatch
    from webhook.server.settings import Settings

__all__ = ["WaspState", "create_app", "state_of"]

log = logging.getLogger(REVIEW_LOGGER)
REVIEW_LINES: t.Final = ReviewLog(log)

Handler = t.Callable[[Request, PolicySet], Answer]
_JSON: t.Final = "application/json"
_READ_CHUNK: t.Final = 1 << 16


@dataclass(frozen=True, slots=True)
class WaspState:
    """What the routes and the gunicorn hooks share; kept in ``app.extensions["wasp"]``."""

    settings: Settings
    policies: PolicySet
    reloader: CertReloader
    # Metric label values for ``kind``, each mapped to itself: anything else is "other", so a
    # client sending made-up kinds cannot grow the time-series count without bound. The label
    # is this map's own string, so pending observations hold no string of a request's.
    kind_labels: t.Mapping[str, str]
    # The identity watch of membership policies (webhook.server.identities), else None.
    identities: IdentityWatch | None = None

    def readiness_problems(self) -> list[str]:
        """Why this process should not receive reviews (empty: ready). Policies are loaded
        before the app exists, so only the certificate, and the identity caches of
        membership policies until they have listed once, can make it unready."""
        identities = self.identities.problems() if self.identities is not None else []
        return [*self.reloader.problems(), *identities]


def state_of(app: Flask) -> WaspState:
    state = app.extensions["wasp"]
    assert isinstance(state, WaspState)
    return state


def create_app(
    settings: Settings, *, policies: PolicySet | None = None, reloader: CertReloader | None = None
) -> Flask:
    """Build the webhook app. ``policies`` ``None`` loads them from ``settings``; either way
    ``settings.enforcement`` (``--enforcement``) overrides their own. ``reloader`` ``None``
    creates one for ``settings``' certificate files and loads it (a pair that cannot serve
    leaves ``/readyz`` failing rather than raising: ``wasp serve`` checks it earlier).
    """
    if policies is None:
        policies = PolicySet.load(
            settings.policy_dirs, builtin=settings.builtin_policies, gates=settings.gates
        )
    identities = None
    if stamps(policies):  # membership, or all-or-nothing stamping (docs/decisions.md §28, §29)
        # Only then is the Kubernetes client imported: the default install is API-free.
        from webhook.server.identities import watch_identities

        policies, identities = watch_identities(policies)
    policies = policies.with_enforcement(settings.enforcement)
    if reloader is None:
        reloader = CertReloader(
            settings.cert_file, settings.key_file, settings.client_ca_file,
            interval=settings.cert_poll_interval, observer=_count_reload, tls=settings.tls,
        )  # fmt: skip
        reloader.load()
    if reloader.current is not None:
        metrics.CERT_EXPIRY.set(reloader.current.not_after.timestamp())
    kinds = {p.kind for p in policies.policies} | {kind for _, kind in VALIDATORS} | {"Pod"}
    state = WaspState(
        settings, policies, reloader, MappingProxyType({kind: kind for kind in kinds}), identities
    )
    REVIEW_LINES.flush_interval = settings.flush_interval
    # Metrics are never published per review (five mmap writes each): 0 keeps the default.
    metrics.PENDING.interval = settings.flush_interval or metrics.FLUSH_INTERVAL

    app = Flask("webhook")
    app.extensions["wasp"] = state
    # POST only: Flask would answer OPTIONS itself with an empty 200; it gets the 405 instead.
    for endpoint, admission in (("validate", handle_validate), ("mutate", handle_mutate)):
        view = _admission_view(state, endpoint, admission)
        app.add_url_rule(f"/{endpoint}", endpoint, view, methods=["POST"], provide_automatic_options=False)
    app.add_url_rule("/healthz", "healthz", _healthz)
    app.add_url_rule("/readyz", "readyz", lambda: readyz_response(state.readiness_problems()))
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    return app


def _http_error(exc: HTTPException) -> Response:
    """Unknown path, wrong method, ...: an AdmissionReview answer like every other one
    (a 405 keeps its ``Allow`` header)."""
    code = exc.code or 400
    body = orjson.dumps(review(errored("", code, cut(exc.description or exc.name))))
    allow = [(name, value) for name, value in exc.get_headers() if name.lower() == "allow"]
    return Response(body, code, headers=allow, content_type=_JSON)


def _unexpected_error(exc: Exception) -> Response:
    """A bug outside the review handlers (which answer their own): logged, counted, InternalError."""
    log.error(
        "internal error while answering a request", exc_info=exc, extra={"fields": {"path": request.path}}
    )
    metrics.INTERNAL_ERRORS.labels("http").inc()
    body = orjson.dumps(review(internal_error("").response))
    return Response(body, 500, content_type=_JSON)


def _count_reload(event: t.Literal["loaded", "rejected"], pair: LoadedPair | None) -> None:
    metrics.CERT_RELOADS.labels(event).inc()
    if pair is not None:
        metrics.CERT_EXPIRY.set(pair.not_after.timestamp())


def _healthz() -> Response:
    return Response("ok\n", 200, content_type="text/plain")


def readyz_response(problems: list[str]) -> Response:
    """200 ``ok``, or 503 with one problem per line (what ``kubectl describe pod`` shows)."""
    if problems:
        return Response(
            "not ready:\n" + "".join(f"- {p}\n" for p in problems), 503, content_type="text/plain"
        )
    return Response("ok\n", 200, content_type="text/plain")


def _read_body(environ: t.Mapping[str, t.Any], limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes *before* reading it all.

    A declared Content-Length over the cap is refused without reading; a chunked or lying
    body is read in chunks and refused as soon as it passes the cap.
    """
    declared = _content_length(environ.get("CONTENT_LENGTH"))
    if declared is not None and declared > limit:
        raise MalformedReview(f"request body is {declared} bytes; the limit is {limit}", code=413)
    if declared is not None:
        # The apiserver always sends Content-Length: read the WSGI input directly, once
        # (werkzeug's stream wrappers cost more than the read on this hot path).
        try:
            body: bytes = environ["wsgi.input"].read(declared)
        except Exception as exc:  # noqa: BLE001 - as for a chunked body below
            raise MalformedReview(
                f"cannot read the request body: {cut(str(exc) or type(exc).__name__)}"
            ) from None
        return body
    chunks: list[bytes] = []
    total = 0
    stream = request.stream
    while True:
        try:
            chunk = stream.read(min(_READ_CHUNK, limit + 1 - total))
        except Exception as exc:  # noqa: BLE001 - the server's input stream: a broken transfer
            # A bad chunk size or a connection that stopped sending is the client's doing;
            # the server's parser says which (its exception types are the server's own).
            raise MalformedReview(
                f"cannot read the request body: {cut(str(exc) or type(exc).__name__)}"
            ) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise MalformedReview(f"request body is over the {limit}-byte limit", code=413)


def _content_length(value: object) -> int | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        length = int(value)
    except ValueError:
        raise MalformedReview(f"Content-Length {cut(value)!r} is not a number") from None
    if length < 0:
        raise MalformedReview(f"Content-Length {cut(value)!r} is negative")
    return length


def _mimetype(environ: t.Mapping[str, t.Any]) -> str:
    """The media type of the request, without parameters, lower-cased."""
    value = environ.get("CONTENT_TYPE") or ""
    return str(value).partition(";")[0].strip().lower()


def _admission_view(state: WaspState, endpoint: str, handler: Handler) -> t.Callable[[], Response]:
    limit = state.settings.max_body_bytes

    def view() -> Response:
        started = time.perf_counter()
        parsed: Request | None = None
        http_status = 200
        try:
            environ = request.environ  # once: each access goes through werkzeug's proxy
            # Judged from the head, before the body is read (a client waiting for a 100 Continue
            # was handed on by the worker's loop as soon as its head arrived: framing.py).
            coding = body_coding_problem(
                environ.get("CONTENT_TYPE") or "", environ.get("HTTP_CONTENT_ENCODING") or ""
            )
            if coding is not None:
                raise MalformedReview(coding, code=415)
            body = _read_body(environ, limit)
            if _mimetype(environ) != _JSON:
                raise MalformedReview(
                    f"Content-Type is {cut(request.content_type or 'missing')!r}; expected {_JSON}",
                    uid=_uid_if_any(body),
                )
            parsed = parse_review(body)
        except MalformedReview as exc:
            answer = Answer(errored(exc.uid, exc.code, exc.message), "malformed")
            http_status = exc.code
        else:
            try:
                answer = handler(parsed, state.policies)
            except Exception:
                log.exception("internal error while handling a review", extra={"fields": _identity(
                    endpoint, parsed)})  # fmt: skip
                metrics.INTERNAL_ERRORS.labels(endpoint).inc()
                answer = internal_error(parsed.uid)
        payload = orjson.dumps(review(answer.response))
        elapsed = time.perf_counter() - started
        _record(state, endpoint, parsed, answer, elapsed)
        return Response(payload, http_status, content_type=_JSON)

    # Every admission view shares this code: the threads running it are the reviews in flight.
    metrics.count_in_flight(view)
    view.__name__ = f"{endpoint}_view"
    return view


def _uid_if_any(body: bytes) -> str:
    """The request uid of a body refused for another reason, so the answer can echo it."""
    try:
        return parse_review(body).uid
    except MalformedReview as exc:
        return exc.uid


def _identity(endpoint: str, parsed: Request | None) -> dict[str, object]:
    if parsed is None:
        return {"endpoint": endpoint}
    return {
        "endpoint": endpoint,
        "uid": parsed.uid,
        "kind": parsed.kind["kind"],
        "namespace": parsed.namespace,
        "name": parsed.name,
        "operation": parsed.operation,
        "dry_run": parsed.dry_run,
    }


def _record(state: WaspState, endpoint: str, parsed: Request | None, answer: Answer, elapsed: float) -> None:
    kind = operation = ""
    if parsed is not None:
        kind = state.kind_labels.get(parsed.kind["kind"], "other")
        operation = _OPERATION_LABELS[parsed.operation]
    metrics.observe_review(endpoint, kind, operation, answer.outcome, elapsed)
    code = error = None
    uid = answer.response["uid"]
    status = answer.response.get("status")
    if status is not None:
        code = status.get("code")
        if answer.outcome == "malformed":
            error = status.get("message")
    entry = ReviewEntry(
        endpoint=endpoint,
        uid=uid,
        kind=None if parsed is None else parsed.kind["kind"],
        namespace=None if parsed is None else parsed.namespace,
        name=None if parsed is None else parsed.name,
        operation=None if parsed is None else parsed.operation,
        dry_run=None if parsed is None else parsed.dry_run,
        outcome=answer.outcome,
        pid=_PID[0],
        latency_ms=elapsed * 1000,
        code=code,
        error=error,
        causes=answer.causes or None,
    )
    REVIEW_LINES.write(entry)


# parse_review admits only these operations; the label is this map's own string.
_OPERATION_LABELS: t.Final = MappingProxyType({op: op for op in OPERATIONS})

# os.getpid() is a system call; the pid changes only at fork.
_PID = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))
