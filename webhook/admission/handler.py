"""The pure admission handlers: a parsed :class:`Request` in, an :class:`Answer` out. No Flask.

``handle_validate`` wraps ``validate_object``; ``handle_mutate`` wraps ``mutate_object``. Both
return the ``response`` part plus a bounded ``outcome`` word that logs and metrics use. An
object that a policy in warn mode finds invalid is admitted with the denial as warnings,
outcome ``warned`` (the verdict carries the judging policy's ``spec.enforcement``).
Exceptions from the core are not caught here: the HTTP edge turns them into
:func:`internal_error` for that review only and logs the stack trace.

Internal errors answer HTTP 200 with ``allowed: false``, code 500, reason ``InternalError``
(controller-runtime's ``Errored(500)``, as Kueue does). A *returned* answer is final for the
apiserver, so this fails closed whatever the configuration's ``failurePolicy``: a bug must
not let an object that wasp would deny through silently, and the message names wasp, so the
user sees which webhook failed instead of a timeout.
"""

from __future__ import annotations

import typing as t

from webhook.admission.response import allowed, denied, errored, patched, warned
from webhook.governed.result import Status
from webhook.governed.validation import validate_object

if t.TYPE_CHECKING:
    from webhook.admission.review import AdmissionResponse, Request
    from webhook.policy import PolicySet

__all__ = ["Answer", "Outcome", "handle_mutate", "handle_validate", "internal_error"]

Outcome = t.Literal["allowed", "skipped", "denied", "warned", "patched", "malformed", "error"]

# Only these operations change an object; DELETE and CONNECT are allowed untouched (the
# webhook configurations do not even register them, this is defence in depth).
_WRITES: t.Final = frozenset({"CREATE", "UPDATE"})


class Answer(t.NamedTuple):
    """``response`` goes on the wire; ``outcome`` and ``causes`` (field-error count) go to
    logs and metrics only. A NamedTuple: one is built per review."""

    response: AdmissionResponse
    outcome: Outcome
    causes: int = 0


def handle_validate(request: Request, policies: PolicySet) -> Answer:
    """Judge ``request.object`` (against ``request.old_object`` on UPDATE).

    dryRun changes nothing: the verdict is the same, which is what ``sideEffects: None`` promises.
    """
    uid = request.uid
    if request.operation not in _WRITES:
        return Answer(allowed(uid), "skipped")
    old = request.old_object if request.operation == "UPDATE" else None
    result = validate_object(request.object, old, policies=policies)
    status = result.status
    if status is Status.VALID:
        return Answer(allowed(uid, result.warnings), "allowed")
    if status is Status.SKIPPED:
        return Answer(allowed(uid), "skipped")
    if status is Status.ERROR:
        # The review was well formed but its object cannot be judged (e.g. null on CREATE).
        return Answer(errored(uid, 400, f"request.object cannot be judged: {result.reason}"), "malformed")
    if result.warned:
        return Answer(warned(uid, result.errors, result.warnings), "warned", len(result.errors))
    return Answer(denied(uid, result.errors, result.warnings), "denied", len(result.errors))


def handle_mutate(request: Request, policies: PolicySet) -> Answer:
    """Default governed objects and stamp Pods' schedulingGroup (both inside ``mutate_object``).

    Never denies an object for what it is: an empty patch answers with neither ``patch`` nor
    ``patchType``. The one refusal is a retriable 503 for a pod whose group cannot be known yet
    (its object's UID is not in the identity cache and the API cannot be asked).
    """
    # Imported here so that the validating path never depends on the mutating core.
    from webhook.governed.membership import IdentityUnavailable
    from webhook.governed.mutation import mutate_object
    from webhook.governed.patch import encode_patch

    uid = request.uid
    if request.operation not in _WRITES or request.object is None:
        return Answer(allowed(uid), "skipped")
    old = request.old_object if request.operation == "UPDATE" else None
    try:
        mutation = mutate_object(request.object, policies, operation=request.operation, old_obj=old)
    except IdentityUnavailable as exc:
        # A member pod whose object's UID cannot be known now: refused as retriable, never
        # stamped with a guess; its controller retries the create (docs/decisions.md §28).
        message = f"wasp cannot place this pod in its PodGroup yet ({exc}); retry the request"
        return Answer(errored(uid, 503, message), "error")
    if mutation.patch:
        return Answer(patched(uid, encode_patch(mutation.patch), mutation.warnings), "patched")
    return Answer(allowed(uid, mutation.warnings), "allowed")


def internal_error(uid: str) -> Answer:
    """The answer for a review whose handler raised; details stay in the server log."""
    message = "internal error in the wasp webhook while handling this request; see the webhook's logs"
    return Answer(errored(uid, 500, message), "error")
