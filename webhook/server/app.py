"""``create_app``: the Flask edge of the admission webhook. No module-level app.

Routes only move bytes: read the body (capped before it is read whole), parse it with
:func:`webhook.admission.review.parse_review`, call the pure handler, serialise the answer with
orjson, record the metrics and the review line (its level: :mod:`webhook.server.logs`). Three
failure classes stay apart: a bad object is a denial (HTTP 200), a bad request is HTTP 400/413
with an AdmissionReview body, a bug in the core is an ``InternalError`` answer for that review only.
"""

from __future__ import annotations

import logging
import os
import time
import typing as t
from dataclasses import dataclass

import orjson
from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from webhook.admission.echo import cut
from webhook.admission.handler import Answer, handle_mutate, handle_validate, internal_error
from webhook.admission.response import errored, review
from webhook.admission.review import MalformedReview, Request, parse_review
from webhook.certs.serving import CertReloader, LoadedPair
from webhook.governed.outsiders import stamps
from webhook.policy import PolicySet
from webhook.scheduling_objects import VALIDATORS
from webhook.server import metrics
from webhook.server.bodies import JUDGING, RECEIVING, body_coding_problem, read_body
from webhook.server.logs import REVIEW_LOGGER, ReviewEntry, review_level

if t.TYPE_CHECKING:
    from webhook.server.settings import Settings
    from webhook.watches.identities import IdentityWatch

__all__ = ["WaspState", "create_app", "state_of"]

log = logging.getLogger(REVIEW_LOGGER)

Handler = t.Callable[[Request, PolicySet], Answer]
_JSON: t.Final = "application/json"


@dataclass(frozen=True, slots=True)
class WaspState:
    """What the routes and the gunicorn hooks share; kept in ``app.extensions["wasp"]``."""

    settings: Settings
    policies: PolicySet
    reloader: CertReloader
    # Metric label values for ``kind``: anything else is "other", so a client sending made-up
    # kinds cannot grow the time-series count without bound.
    kind_labels: frozenset[str]
    # The watch that fills the stamping caches (webhook.watches), else None; each worker
    # starts it after the fork, and serves once it has listed.
    identities: IdentityWatch | None = None


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
    if stamps(policies):  # membership, or all-or-nothing stamping (docs/decisions.md §28, §30)
        # Only then is the Kubernetes client imported: the default install is API-free.
        from webhook.watches.identities import watch_identities

        policies, identities = watch_identities(policies)
    policies = policies.with_enforcement(settings.enforcement).with_schedulers(settings.was_schedulers)
    if reloader is None:
        reloader = CertReloader(
            settings.cert_file, settings.key_file, settings.client_ca_file,
            interval=settings.cert_poll_interval, observer=_count_reload, tls=settings.tls,
        )  # fmt: skip
        reloader.load()
    if reloader.current is not None:
        metrics.CERT_EXPIRY.set(reloader.current.not_after.timestamp())
    kinds = {p.kind for p in policies.policies} | {kind for _, kind in VALIDATORS} | {"Pod"}
    state = WaspState(settings, policies, reloader, frozenset(kinds), identities)
    RECEIVING.capacity = settings.max_buffered_mib << 20

    app = Flask("webhook")
    app.extensions["wasp"] = state
    # POST only: Flask would answer OPTIONS itself with an empty 200; it gets the 405 instead.
    for endpoint, admission in (("validate", handle_validate), ("mutate", handle_mutate)):
        view = _admission_view(state, endpoint, admission)
        app.add_url_rule(f"/{endpoint}", endpoint, view, methods=["POST"], provide_automatic_options=False)
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


def _admission_view(state: WaspState, endpoint: str, handler: Handler) -> t.Callable[[], Response]:
    limit = state.settings.max_body_bytes

    def view() -> Response:
        started = time.perf_counter()
        parsed: Request | None = None
        http_status = 200
        try:
            environ = request.environ
            # Judged from the head, before the body is read.
            coding = body_coding_problem(environ)
            if coding is not None:
                environ["wasp.close"] = coding.code != 415  # an unknown framing: nothing after it can be read
                raise coding
            with read_body(environ, limit) as body, JUDGING.holding(len(body)):
                if request.mimetype != _JSON:
                    raise MalformedReview(
                        f"Content-Type is {cut(request.content_type or 'missing')!r}; expected {_JSON}",
                        uid=_uid_if_any(body),
                    )
                parsed = parse_review(body)
                try:
                    answer = handler(parsed, state.policies)
                except Exception:
                    fields = {**_identity(endpoint, parsed), "uid": parsed.uid}
                    log.exception("internal error while handling a review", extra={"fields": fields})
                    metrics.INTERNAL_ERRORS.labels(endpoint).inc()
                    answer = internal_error(parsed.uid)
        except MalformedReview as exc:
            answer = Answer(errored(exc.uid, exc.code, exc.message), "malformed")
            http_status = exc.code
        payload = orjson.dumps(review(answer.response))
        elapsed = time.perf_counter() - started
        _record(state, endpoint, parsed, answer, elapsed)
        return Response(payload, http_status, content_type=_JSON)

    view.__name__ = f"{endpoint}_view"
    return metrics.IN_FLIGHT.track_inprogress()(view)


def _uid_if_any(body: bytes) -> str:
    """The request uid of a body refused for another reason, so the answer can echo it."""
    try:
        return parse_review(body).uid
    except MalformedReview as exc:
        return exc.uid


def _identity(endpoint: str, parsed: Request | None) -> dict[str, t.Any]:
    """What a review's log lines say it is about (``None``s: the body was not a review)."""
    if parsed is None:
        return dict.fromkeys(("kind", "namespace", "name", "operation", "dry_run")) | {"endpoint": endpoint}
    return {"endpoint": endpoint, "kind": parsed.kind["kind"], "namespace": parsed.namespace, "name": parsed.name,
            "operation": parsed.operation, "dry_run": parsed.dry_run}  # fmt: skip


def _record(state: WaspState, endpoint: str, parsed: Request | None, answer: Answer, elapsed: float) -> None:
    kind = operation = ""
    if parsed is not None:
        kind = parsed.kind["kind"] if parsed.kind["kind"] in state.kind_labels else "other"
        operation = parsed.operation  # parse_review admits only the four operations
    metrics.observe_review(endpoint, kind, operation, answer.outcome, elapsed)
    response = answer.response
    level = review_level(answer.outcome, warnings=bool(response.get("warnings")))
    if not log.isEnabledFor(level):
        return
    status = response.get("status") or {}
    entry = ReviewEntry(
        **_identity(endpoint, parsed), uid=response["uid"], outcome=answer.outcome, pid=os.getpid(),
        latency_ms=elapsed * 1000, code=status.get("code"), causes=answer.causes or None,
        error=status.get("message") if answer.outcome == "malformed" else None,
    )  # fmt: skip
    log.log(level, "review", extra={"fields": entry.fields()})
